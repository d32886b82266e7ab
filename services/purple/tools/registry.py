"""Register plain (async) functions as tools.

One source of truth: a function's signature, type hints and Google-style docstring give both
the JSON schema for native tool calling and the textual description in the system prompt, and
a pydantic model built from the signature validates the arguments of every call. An invalid call
(unknown tool, missing or unexpected argument, bad type) raises :class:`ToolCallError`, which
the agent shows to the model as an observation.
"""

from __future__ import annotations

import inspect
import json
import re
import typing
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from services.purple.signals import FormatError

ToolFn = Callable[..., Awaitable[str] | str]


class ToolCallError(FormatError):
    """The model called a tool wrongly; the message says what is wrong and how to call it."""


@dataclass(frozen=True)
class ToolParam:
    name: str
    annotation: Any
    type_text: str
    required: bool
    default: Any
    doc: str


@dataclass
class Tool:
    name: str
    fn: ToolFn
    description: str
    params: list[ToolParam]
    args_model: type[BaseModel]

    def signature(self) -> str:
        parts = []
        for p in self.params:
            parts.append(
                f"{p.name}: {p.type_text}"
                if p.required
                else f"{p.name}: {p.type_text} = {p.default!r}"
            )
        return f"{self.name}({', '.join(parts)})"

    def describe(self) -> str:
        """The textual description used in the system prompt."""
        lines = [self.signature()]
        lines += ["    " + line if line else "" for line in self.description.splitlines()]
        if self.params:
            lines.append("    Arguments:")
            for p in self.params:
                default = "required" if p.required else f"default {p.default!r}"
                lines.append(f"      {p.name} ({p.type_text}, {default}): {p.doc}".rstrip(": "))
        return "\n".join(lines)

    def openai_schema(self) -> dict[str, Any]:
        """The ``tools=[...]`` entry for native tool calling (refs inlined, titles dropped)."""
        raw = self.args_model.model_json_schema()
        params = _clean_schema(raw, raw.get("$defs", {}))
        params.setdefault("properties", {})
        params.setdefault("required", [])
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": params},
        }


class ToolRegistry:
    """Tools by name; validates and dispatches calls."""

    def __init__(self, tools: list[ToolFn] | None = None) -> None:
        self.tools: dict[str, Tool] = {}
        for fn in tools or []:
            self.register(fn)

    def register(self, fn: ToolFn) -> Tool:
        tool = make_tool(fn)
        self.tools[tool.name] = tool
        return tool

    def schemas(self) -> list[dict[str, Any]]:
        return [t.openai_schema() for t in self.tools.values()]

    def describe(self) -> str:
        return "\n\n".join(t.describe() for t in self.tools.values())

    def validate(self, name: str, arguments: dict[str, Any]) -> tuple[Tool, dict[str, Any]]:
        """Check a call and coerce its arguments; raises :class:`ToolCallError`."""
        tool = self.tools.get(name)
        if tool is None:
            known = ", ".join(self.tools) or "(none)"
            raise ToolCallError(f"Unknown tool {name!r}. Available tools: {known}.")
        if not isinstance(arguments, dict):
            raise ToolCallError(
                f"Arguments of {name} must be an object with named arguments. Usage: {tool.signature()}"
            )
        coerced = {k: _coerce_text_value(tool, k, v) for k, v in arguments.items()}
        try:
            model = tool.args_model.model_validate(coerced)
        except ValidationError as exc:
            problems = [_explain(err) for err in exc.errors()]
            raise ToolCallError(
                f"Invalid call of {name}:\n"
                + "\n".join(f"- {p}" for p in problems)
                + f"\nUsage: {tool.signature()}"
            ) from None
        return tool, {p.name: getattr(model, p.name) for p in tool.params}

    async def call(self, name: str, arguments: dict[str, Any]) -> str:
        tool, kwargs = self.validate(name, arguments)
        out = tool.fn(**kwargs)
        if inspect.isawaitable(out):
            out = await out
        return str(out)


# ---- building a tool from a function ----------------------------------------------------------


def make_tool(fn: ToolFn) -> Tool:
    sig = inspect.signature(fn)
    hints = typing.get_type_hints(fn)
    description, arg_docs = parse_docstring(inspect.getdoc(fn) or "")
    params: list[ToolParam] = []
    fields: dict[str, Any] = {}
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        ann = hints.get(p.name, str)
        required = p.default is inspect.Parameter.empty
        default = None if required else p.default
        doc = arg_docs.get(p.name, "")
        params.append(ToolParam(p.name, ann, type_text(ann), required, default, doc))
        fields[p.name] = (ann, Field(... if required else default, description=doc or None))
    model = create_model(  # type: ignore[call-overload]
        f"{fn.__name__}_arguments", __config__=ConfigDict(extra="forbid"), **fields
    )
    return Tool(fn.__name__, fn, description, params, model)


_SECTION_RE = re.compile(
    r"^(Args|Arguments|Parameters|Returns|Return|Raises|Yields|Examples?|Notes?):\s*$"
)
_ARG_RE = re.compile(r"^(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into the description and ``{arg: text}``.

    ``Args:`` entries may span several (more deeply indented) lines; ``Returns:``/``Raises:``
    sections are dropped from the description.
    """
    description: list[str] = []
    args: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    base_indent: int | None = None
    for line in inspect.cleandoc(doc).splitlines():
        stripped = line.strip()
        if (m := _SECTION_RE.match(stripped)) and not line.startswith((" ", "\t")):
            section, current, base_indent = m.group(1), None, None
            continue
        if section is None:
            description.append(line)
            continue
        if section not in ("Args", "Arguments", "Parameters") or not stripped:
            continue
        indent = len(line) - len(line.lstrip())
        if base_indent is None:
            base_indent = indent
        m = _ARG_RE.match(stripped)
        if m and indent <= base_indent:
            current = m.group(1)
            args[current] = m.group(2).strip()
        elif current is not None:
            args[current] = (args[current] + " " + stripped).strip()
    return "\n".join(description).strip(), args


def type_text(ann: Any) -> str:
    """``list[services.shared.loc.Location]`` -> ``list[Location]``; classes by their name."""
    if isinstance(ann, type) and not typing.get_args(ann):
        return ann.__name__
    text = repr(ann).replace("typing.", "").replace("NoneType", "None")
    return re.sub(r"\b(?:[A-Za-z_]\w*\.)+([A-Za-z_]\w*)", r"\1", text)


def _clean_schema(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, list):
        return [_clean_schema(x, defs) for x in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target = defs.get(node["$ref"].rsplit("/", 1)[-1], {})
        merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return _clean_schema(merged, defs)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "$defs" or (key == "title" and isinstance(value, str)):
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {k: _clean_schema(v, defs) for k, v in value.items()}
        else:
            out[key] = _clean_schema(value, defs)
    return out


def _accepts_str(ann: Any) -> bool:
    return ann is str or str in typing.get_args(ann)


def _accepts_none(ann: Any) -> bool:
    return type(None) in typing.get_args(ann)


def _coerce_text_value(tool: Tool, name: str, value: Any) -> Any:
    """Text mode passes every value as a string: decode JSON for non-string parameters."""
    param = next((p for p in tool.params if p.name == name), None)
    if param is None or not isinstance(value, str) or _accepts_str(param.annotation):
        return value
    text = value.strip()
    if _accepts_none(param.annotation) and text in ("", "None", "none", "null"):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def _explain(err: Any) -> str:
    where = ".".join(str(x) for x in err["loc"]) or "(arguments)"
    if err["type"] == "missing":
        return f"missing required argument {where!r}"
    if err["type"] == "extra_forbidden":
        return f"unexpected argument {where!r}"
    got = err.get("input")
    shown = repr(got) if len(repr(got)) <= 80 else repr(got)[:77] + "..."
    return f"{where}: {err['msg']} (got {shown})"
