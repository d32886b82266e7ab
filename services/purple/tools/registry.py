"""Register plain (async) functions as tools.

One source of truth, read by libraries: pydantic builds a model from the function's signature
(``pydantic.create_model``), and the function's Google-style docstring, read by
``docstring_parser``, gives the tool's description and each argument's text (or an
``Annotated[T, Field(description=...)]`` in the signature does). That one model gives the JSON
schema for native tool calling, the textual tool list of the system prompt, and the validation
of every call. An invalid call (unknown tool, missing or unexpected argument, bad type) raises
:class:`ToolCallError`, which the agent shows to the model as an observation.

What is still written here: the schema's ``$ref``s are inlined and titles dropped (local model
servers handle a flat schema best; pydantic has no option for it), and text-mode arguments
(always strings) are decoded as JSON for non-string parameters before validation.
"""

from __future__ import annotations

import inspect
import json
import re
import typing
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import docstring_parser
from docstring_parser import DocstringStyle
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
    """A :class:`Tool` from a function: pydantic builds the arguments model from the signature;
    the docstring (Google style, read by ``docstring_parser``) gives the tool's description and
    each argument's text (an ``Annotated[T, Field(description=...)]`` in the signature wins)."""
    sig = inspect.signature(fn)
    doc = docstring_parser.parse(inspect.getdoc(fn) or "", style=DocstringStyle.GOOGLE)
    arg_docs = {p.arg_name: " ".join((p.description or "").split()) for p in doc.params}
    hints = typing.get_type_hints(fn, include_extras=True)
    plain = typing.get_type_hints(fn)  # without Annotated's extras: the type the prompt shows
    fields: dict[str, Any] = {}
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        default = ... if p.default is inspect.Parameter.empty else p.default
        hint = hints.get(p.name, str)
        own = any(getattr(m, "description", None) for m in getattr(hint, "__metadata__", ()))
        text = {"description": arg_docs[p.name]} if arg_docs.get(p.name) and not own else {}
        fields[p.name] = (hint, Field(default, **text))
    model = create_model(  # type: ignore[call-overload]
        f"{fn.__name__}_arguments", __config__=ConfigDict(extra="forbid"), **fields
    )
    params = [
        ToolParam(
            name,
            plain.get(name, str),
            type_text(plain.get(name, str)),
            info.is_required(),
            None if info.is_required() else info.default,
            info.description or "",
        )
        for name, info in model.model_fields.items()
    ]
    return Tool(fn.__name__, fn, (doc.description or "").strip(), params, model)


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
