"""Reading the model's tool calls from a reply: native ones, or the textual format for models
without native tool calling::

    thought text
    ----BEGIN_FUNCTION_CALL----
    run_bash_cmd
    ----ARG----
    command
    ----VALUE----
    ls -la
    ----END_FUNCTION_CALL----

Rules (decided here, tested in tests/purple/test_parser.py):

- The last ``BEGIN`` marker in a reply wins; text before it is the thought.
- A missing ``END`` marker is tolerated (many set-ups use it as the stop sequence, so it never
  arrives); text after ``END`` is ignored.
- Markers are matched leniently: two or more dashes, optional spaces, any case.
- A value keeps its inner newlines and whitespace; exactly one newline right after
  ``----VALUE----`` and one before the next marker are removed. A value written on the marker's
  own line (``----VALUE---- ls``) is accepted too. A trailing Markdown fence line is dropped.
- Several arguments are allowed; a repeated argument name keeps its last value.
- Anything else raises :class:`FormatError` whose message shows the expected format.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from services.purple.llm.base import LLMReply, ToolCall
from services.purple.signals import FormatError

BEGIN = "----BEGIN_FUNCTION_CALL----"
END = "----END_FUNCTION_CALL----"
ARG = "----ARG----"
VALUE = "----VALUE----"


def _marker(word: str) -> re.Pattern[str]:
    return re.compile(rf"-{{2,}}[ \t]*{word}[ \t]*-{{2,}}", re.IGNORECASE)


_BEGIN_RE, _END_RE = _marker("BEGIN_FUNCTION_CALL"), _marker("END_FUNCTION_CALL")
_ARG_RE, _VALUE_RE = _marker("ARG"), _marker("VALUE")
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")
_FENCE_RE = re.compile(r"\n?[ \t]*```[ \t]*\s*\Z")

FORMAT_HELP = f"""Reply with your reasoning, then exactly one function call in this format:

your reasoning here
{BEGIN}
function_name
{ARG}
argument_name
{VALUE}
argument value (may span several lines)
{ARG}
another_argument_name
{VALUE}
another value
{END}"""


@dataclass
class TextCall:
    name: str
    arguments: dict[str, str] = field(default_factory=dict)
    thought: str = ""


def parse_text_call(text: str) -> TextCall:
    """Parse the last function call of a reply; raises :class:`FormatError`."""
    begins = list(_BEGIN_RE.finditer(text or ""))
    if not begins:
        raise FormatError(f"No function call found in your reply.\n\n{FORMAT_HELP}")
    begin = begins[-1]
    thought = text[: begin.start()].strip()
    body = text[begin.end() :]
    end = _END_RE.search(body)
    if end:
        body = body[: end.start()]
    parts = _ARG_RE.split(body)
    name_part, arg_parts = parts[0], parts[1:]
    name_lines = [ln.strip() for ln in name_part.strip().splitlines() if ln.strip()]
    name_lines = [ln for ln in name_lines if not ln.startswith("```")]
    if len(name_lines) != 1 or not _NAME_RE.match(name_lines[0]):
        shown = name_part.strip()[:80] or "(nothing)"
        raise FormatError(
            f"The function name must be alone on the line after {BEGIN}; found {shown!r}."
            f"\n\n{FORMAT_HELP}"
        )
    call = TextCall(name=name_lines[0], thought=thought)
    for i, part in enumerate(arg_parts, start=1):
        halves = _VALUE_RE.split(part, maxsplit=1)
        if len(halves) != 2:
            raise FormatError(
                f"Argument #{i} of {call.name} has no {VALUE} marker after its name."
                f"\n\n{FORMAT_HELP}"
            )
        arg_name, value = halves[0].strip(), halves[1]
        if not _NAME_RE.match(arg_name):
            raise FormatError(
                f"Argument #{i} of {call.name}: the argument name must be alone on the line "
                f"after {ARG}; found {arg_name[:80]!r}.\n\n{FORMAT_HELP}"
            )
        call.arguments[arg_name] = _clean_value(
            value, strip_fence=end is None and i == len(arg_parts)
        )
    return call


def _clean_value(value: str, *, strip_fence: bool) -> str:
    first, sep, rest = value.partition("\n")
    # one newline after the marker goes (with spaces before it); else the value is on its line
    value = rest if sep and not first.strip() else value.lstrip(" \t")
    if strip_fence:
        value = _FENCE_RE.sub("", value)
    head, sep, last = value.rpartition("\n")
    # one newline before the next marker goes (with the marker line's indentation)
    if sep and not last.strip():
        value = head
    return value.removesuffix("\r")


def format_text_call(name: str, arguments: dict[str, str], thought: str = "") -> str:
    """The inverse of :func:`parse_text_call` (used in prompts, tests and the benchmark)."""
    out = [thought, BEGIN, name] if thought else [BEGIN, name]
    for key, value in arguments.items():
        out += [ARG, key, VALUE, value]
    out.append(END)
    return "\n".join(out)


Call = tuple[str | None, str, dict[str, Any] | FormatError]
"""(native tool-call id or None in text mode, tool name, arguments or what is wrong)"""


def reply_calls(reply: LLMReply, *, no_call: str | None = None) -> list[Call]:
    """The calls of a reply: its native tool calls, else the textual call in its text.
    ``no_call``: what a reply with neither is told (default: the textual format's help)."""
    if reply.tool_calls:
        return [_native_call(c) for c in reply.tool_calls]
    try:
        call = parse_text_call(reply.content or "")
    except FormatError as exc:
        return [(None, "", FormatError(no_call) if no_call else exc)]
    return [(None, call.name, dict(call.arguments))]


def _native_call(call: ToolCall) -> Call:
    try:
        args = json.loads(call.arguments or "{}")
    except ValueError as exc:
        error = f"Arguments of {call.name} are not valid JSON ({exc}): {call.arguments[:200]!r}"
        return call.id, call.name, FormatError(error)
    if not isinstance(args, dict):
        error = f"Arguments of {call.name} must be a JSON object, got {call.arguments[:200]!r}."
        return call.id, call.name, FormatError(error)
    return call.id, call.name, args
