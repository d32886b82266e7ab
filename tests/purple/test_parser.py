"""The textual function-call format (services/purple/agent/parser.py)."""

import pytest

from services.purple.agent.parser import BEGIN, END, format_text_call, parse_text_call
from services.purple.signals import FormatError


def call(name: str, *args: tuple[str, str], end: bool = True) -> str:
    out = [BEGIN, name]
    for key, value in args:
        out += ["----ARG----", key, "----VALUE----", value]
    if end:
        out.append(END)
    return "\n".join(out)


def test_single_call_with_thought() -> None:
    text = "Let me look at the report.\n" + call("run_bash_cmd", ("command", "cat error.txt"))
    parsed = parse_text_call(text)
    assert parsed.name == "run_bash_cmd"
    assert parsed.arguments == {"command": "cat error.txt"}
    assert parsed.thought == "Let me look at the report."


def test_multiline_value_keeps_inner_newlines_and_indentation() -> None:
    value = "for f in a b; do\n    echo $f\n\n  done"
    parsed = parse_text_call(call("run_bash_cmd", ("command", value)))
    assert parsed.arguments["command"] == value


def test_only_one_leading_and_trailing_newline_is_stripped() -> None:
    text = f"{BEGIN}\nrun_bash_cmd\n----ARG----\ncommand\n----VALUE----\n\nls\n\n{END}"
    assert parse_text_call(text).arguments["command"] == "\nls\n"


def test_several_arguments() -> None:
    parsed = parse_text_call(
        call("show_file", ("path", "lib/a.c"), ("start_line", "10"), ("end_line", "40"))
    )
    assert parsed.arguments == {"path": "lib/a.c", "start_line": "10", "end_line": "40"}


def test_last_call_wins() -> None:
    text = (
        "First I thought this:\n"
        + call("run_bash_cmd", ("command", "ls"))
        + "\nActually, better:\n"
        + call("show_file", ("path", "x.c"))
    )
    parsed = parse_text_call(text)
    assert parsed.name == "show_file"
    assert parsed.arguments == {"path": "x.c"}
    assert "First I thought" in parsed.thought and "Actually, better:" in parsed.thought


def test_text_after_end_marker_is_ignored() -> None:
    text = call("run_bash_cmd", ("command", "ls")) + "\nObservation: (hallucinated)\nmore"
    assert parse_text_call(text).arguments == {"command": "ls"}


def test_missing_end_marker_is_tolerated() -> None:
    parsed = parse_text_call(call("run_bash_cmd", ("command", "ls -la\n"), end=False))
    assert parsed.arguments == {"command": "ls -la"}


def test_missing_end_marker_drops_a_trailing_code_fence() -> None:
    text = "```\n" + call("run_bash_cmd", ("command", "ls"), end=False) + "\n```\n"
    assert parse_text_call(text).arguments == {"command": "ls"}


def test_call_inside_code_fence_with_end_marker() -> None:
    text = "Thinking.\n```\n" + call("run_bash_cmd", ("command", "ls")) + "\n```"
    assert parse_text_call(text).arguments == {"command": "ls"}


def test_no_arguments() -> None:
    parsed = parse_text_call(f"{BEGIN}\nfinish\n{END}")
    assert parsed.name == "finish" and parsed.arguments == {}


def test_lenient_markers_and_value_on_marker_line() -> None:
    text = "--- begin_function_call ---\nshow_file\n---- ARG ----\npath\n----VALUE---- lib/a.c\n"
    assert parse_text_call(text).arguments == {"path": "lib/a.c"}


def test_crlf_line_endings() -> None:
    text = call("run_bash_cmd", ("command", "ls\necho x")).replace("\n", "\r\n")
    assert parse_text_call(text).arguments == {"command": "ls\r\necho x"}


def test_repeated_argument_keeps_last_value() -> None:
    parsed = parse_text_call(call("f", ("a", "1"), ("a", "2")))
    assert parsed.arguments == {"a": "2"}


def test_empty_value() -> None:
    assert parse_text_call(call("f", ("a", ""))).arguments == {"a": ""}


def test_value_may_contain_dashes_and_json() -> None:
    value = '[{"file": "a.c", "line_start": 1, "line_end": 2}]\n-- not a marker --'
    assert parse_text_call(call("submit_localization", ("locations", value))).arguments == {
        "locations": value
    }


@pytest.mark.parametrize(
    "text, needle",
    [
        ("", "No function call found"),
        ("I will now run ls.", "No function call found"),
        ("run_bash_cmd\ncommand\nls", "No function call found"),
        (f"{BEGIN}\n{END}", "function name"),
        (f"{BEGIN}\nrun bash cmd\n{END}", "function name"),
        (
            f"{BEGIN}\nrun_bash_cmd\nextra line\n----ARG----\ncommand\n----VALUE----\nls",
            "function name",
        ),
        (f"{BEGIN}\nrun_bash_cmd\n----ARG----\ncommand\nls\n{END}", "no ----VALUE---- marker"),
        (f"{BEGIN}\nrun_bash_cmd\n----ARG----\n\n----VALUE----\nls\n{END}", "argument name"),
        (
            f"{BEGIN}\nrun_bash_cmd\n----ARG----\ntwo words\n----VALUE----\nls\n{END}",
            "argument name",
        ),
    ],
)
def test_garbage_raises_format_error_with_the_expected_format(text: str, needle: str) -> None:
    with pytest.raises(FormatError) as err:
        parse_text_call(text)
    message = str(err.value)
    assert needle in message
    assert BEGIN in message and END in message and "----VALUE----" in message


def test_format_roundtrip() -> None:
    args = {"command": "grep -n 'x' a.c\nwc -l a.c", "other": "  spaced  "}
    parsed = parse_text_call(format_text_call("run_bash_cmd", args, "why"))
    assert parsed.arguments == args and parsed.thought == "why"
