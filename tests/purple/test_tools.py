"""Tool registry (a pydantic model of the signature; docstrings read by docstring_parser) and
the RCA tools."""

import json
from pathlib import Path
from typing import Annotated

import pytest
from pydantic import Field

from services.purple.signals import Submitted
from services.purple.tools.rca import RcaTools
from services.purple.tools.registry import ToolCallError, ToolRegistry
from services.shared.commands import CommandResult
from services.shared.loc import Location
from tests.support.local_env import LocalShellEnvironment, make_workspace


async def show(path: str, start_line: int = 1, end_line: int | None = None) -> str:
    """Show part of a file.

    Second paragraph of the description.

    Args:
        path: Where the file is.
        start_line: First line
            to show (continued).
        end_line: Last line.

    Returns:
        The lines.
    """
    return f"{path}:{start_line}:{end_line}"


def submit(locations: list[Location], reasoning: str) -> str:
    """Submit.

    Args:
        locations: Ranked locations.
        reasoning: Why.
    """
    return f"{len(locations)} {locations[0].file} {reasoning}"


def annotated(
    count: Annotated[int, Field(description="How many (from the signature).")],
    label: str = "x",
) -> str:
    """Repeat a label.

    Args:
        count: Loses to the signature's text.
        label: What to repeat.
    """
    return label * count


def test_docstring_read_by_docstring_parser() -> None:
    tool = ToolRegistry([show]).tools["show"]
    assert tool.description == "Show part of a file.\n\nSecond paragraph of the description."
    assert {p.name: p.doc for p in tool.params} == {
        "path": "Where the file is.",
        "start_line": "First line to show (continued).",
        "end_line": "Last line.",
    }


def test_a_field_description_in_the_signature_wins() -> None:
    tool = ToolRegistry([annotated]).tools["annotated"]
    assert {p.name: p.doc for p in tool.params} == {
        "count": "How many (from the signature).",
        "label": "What to repeat.",
    }
    props = tool.openai_schema()["function"]["parameters"]["properties"]
    assert props["count"]["description"] == "How many (from the signature)."
    assert tool.signature() == "annotated(count: int, label: str = 'x')"


def test_openai_schema_from_signature_and_docstring() -> None:
    schema = ToolRegistry([show]).schemas()[0]
    assert schema["type"] == "function"
    fn = schema["function"]
    assert fn["name"] == "show"
    assert fn["description"].startswith("Show part of a file.")
    params = fn["parameters"]
    assert params["type"] == "object"
    assert params["required"] == ["path"]
    assert params["properties"]["path"] == {"type": "string", "description": "Where the file is."}
    assert params["properties"]["start_line"]["type"] == "integer"
    assert params["properties"]["start_line"]["default"] == 1
    assert {"type": "null"} in params["properties"]["end_line"]["anyOf"]
    assert "Returns" not in json.dumps(schema) and "title" not in params


def test_schema_inlines_nested_models() -> None:
    params = ToolRegistry([submit]).schemas()[0]["function"]["parameters"]
    items = params["properties"]["locations"]["items"]
    assert "$ref" not in json.dumps(params) and "$defs" not in params
    assert set(items["required"]) == {"file", "line_start", "line_end"}
    assert items["properties"]["line_start"]["minimum"] == 1


def test_text_description() -> None:
    text = ToolRegistry([show]).describe()
    assert (
        text.splitlines()[0] == "show(path: str, start_line: int = 1, end_line: int | None = None)"
    )
    assert "path (str, required): Where the file is." in text
    assert "start_line (int, default 1): First line to show (continued)." in text


async def test_call_coerces_text_mode_strings() -> None:
    reg = ToolRegistry([show, submit])
    assert (
        await reg.call("show", {"path": "a.c", "start_line": "5", "end_line": "None"})
        == "a.c:5:None"
    )
    locs = json.dumps([{"file": "x.c", "line_start": 1, "line_end": 2}])
    assert await reg.call("submit", {"locations": locs, "reasoning": "r"}) == "1 x.c r"


@pytest.mark.parametrize(
    "name, args, needle",
    [
        ("nope", {}, "Unknown tool 'nope'. Available tools: show, submit."),
        ("show", {}, "missing required argument 'path'"),
        ("show", {"path": "a", "start_line": "ten"}, "start_line: Input should be a valid integer"),
        ("show", {"path": "a", "colour": "red"}, "unexpected argument 'colour'"),
        (
            "submit",
            {"locations": [{"file": "a.c", "line_start": 0, "line_end": 1}], "reasoning": "r"},
            "locations.0.line_start",
        ),
        ("submit", {"locations": "not json", "reasoning": "r"}, "locations"),
    ],
)
async def test_invalid_calls_explain_themselves(name: str, args: dict, needle: str) -> None:
    with pytest.raises(ToolCallError) as err:
        await ToolRegistry([show, submit]).call(name, args)
    assert needle in str(err.value)
    if name != "nope":
        assert "Usage: " in str(err.value)


# ---- the RCA tools against a local workspace ------------------------------------------------


@pytest.fixture
def workspace(tmp_path: Path):
    lines = [f"int line{i};" for i in range(1, 401)]
    lines[99] = "  memcpy(dst, src, len); /* target */"
    paths = make_workspace(
        tmp_path,
        project="proj",
        files={
            "lib/a.c": "\n".join(lines) + "\n",
            "lib/b.h": "#define TARGET 1\n",
            "lib/sub dir/c.c": "int target_fn(void);\n",
        },
        error_txt="==1==ERROR: AddressSanitizer: heap-buffer-overflow\n",
    )
    env = LocalShellEnvironment(paths)
    return paths, env, RcaTools(env, paths)


async def test_run_bash_cmd_reports_exit_code(workspace) -> None:
    _, _, tools = workspace
    out = await tools.run_bash_cmd("cat error.txt; exit 3")
    assert out.startswith("<returncode>3</returncode>") and "heap-buffer-overflow" in out
    assert tools.history[-1].exit_code == 3


async def test_run_bash_cmd_says_when_output_was_cut(workspace) -> None:
    paths, _, _ = workspace
    tools = RcaTools(LocalShellEnvironment(paths, output_limit=1000), paths)
    out = await tools.run_bash_cmd("head -c 5000 /dev/zero | tr '\\0' x; echo END")
    assert "[... 4,004 bytes cut ...]" in out and out.count("x") == 996
    assert out.endswith("END\n</output>\n[4004 bytes of output cut from the middle]")
    assert tools.history[-1].truncated


@pytest.mark.parametrize(
    "path", ["lib/a.c", "proj/lib/a.c", "/src/proj/lib/a.c", "src-vul/proj/lib/a.c"]
)
async def test_show_file_finds_the_file_and_numbers_lines(workspace, path: str) -> None:
    _, _, tools = workspace
    out = await tools.show_file(path, 99, 101)
    assert out.splitlines()[0] == "[proj/lib/a.c: lines 99-101 of 400]"
    assert "   100    memcpy(dst, src, len); /* target */" in out
    assert len(out.splitlines()) == 4


async def test_show_file_caps_and_clips(workspace) -> None:
    _, _, tools = workspace
    out = await tools.show_file("lib/a.c", 1, 10_000)
    assert "showing at most 250 lines" in out and "   250  " in out and "   251  " not in out
    out = await tools.show_file("lib/a.c", 390)
    assert out.splitlines()[0] == "[proj/lib/a.c: lines 390-400 of 400]"
    assert "end_line (5) is before start_line (9)" in await tools.show_file("lib/a.c", 9, 5)


async def test_show_file_missing_or_empty(workspace) -> None:
    paths, _, tools = workspace
    out = await tools.show_file("lib/zzz.c")
    assert "<returncode>1</returncode>" in out and "File not found: lib/zzz.c" in out
    (Path(paths.source_dir) / "proj" / "lib" / "empty.c").write_text("")
    assert await tools.show_file("lib/empty.c") == "[proj/lib/empty.c is empty]\n"


async def test_search_code(workspace) -> None:
    _, _, tools = workspace
    assert "proj/lib/a.c:100:  memcpy(dst, src, len); /* target */" in await tools.search_code(
        "memcpy"
    )
    both = await tools.search_code("target|TARGET", "*.c,*.h")
    assert "proj/lib/b.h:1:" in both and "proj/lib/sub dir/c.c:1:" in both
    assert await tools.search_code("no_such_symbol_anywhere") == "No matches.\n"
    many = await tools.search_code("line", "*.c")
    assert "more matches not shown" in many and len(many.splitlines()) == 81
    assert "proj/lib/b.h" in await tools.search_code("TARGET", "*", "proj/lib")


async def test_submit_localization_writes_any_content_and_submits(workspace) -> None:
    paths, env, tools = workspace
    nasty = "it's \"quoted\" $HOME `id` \\n\nEOF\nLOC_JSON\n'\n"
    with pytest.raises(Submitted) as done:
        await tools.submit_localization(
            [
                Location(
                    file="lib/a.c", function="f", line_start=99, line_end=101, description=nasty
                )
            ],
            nasty,
        )
    written = json.loads(Path(paths.submission).read_text())
    assert written["reasoning"] == nasty and written["locations"][0]["description"] == nasty
    assert done.value.submission.locations[0].line_start == 99
    assert env.submits[-1][1].accepted


async def test_submit_localization_refused_then_fixed(workspace) -> None:
    _paths, env, tools = workspace
    env.refuse_first = 1
    loc = [Location(file="lib/a.c", line_start=1, line_end=2)]
    out = await tools.submit_localization(loc, "r")
    assert (
        "Submission refused" in out
        and "test refusal" in out
        and "call submit_localization again" in out
    )
    with pytest.raises(Submitted):
        await tools.submit_localization(loc, "r")
    assert len(env.submits) == 2


async def test_submit_localization_validates_before_writing(workspace) -> None:
    paths, env, tools = workspace
    out = await tools.submit_localization([], "r")
    assert "Submission not written" in out and "locations" in out
    assert not Path(paths.submission).exists() and env.submits == []


class PocEnvironment(LocalShellEnvironment):
    """A local shell that also answers run_poc, as green does where the task offers it."""

    async def run_poc(self) -> CommandResult:
        return CommandResult(
            exit_code=1, output="==1==ERROR: AddressSanitizer: heap-use-after-free"
        )


async def test_run_poc_is_a_tool_only_where_the_task_offers_it(workspace) -> None:
    paths, _, tools = workspace
    assert "run_poc" not in tools.registry().tools
    offered = RcaTools(PocEnvironment(paths), paths, offers=("run_poc",), max_commands=3)
    registry = offered.registry()
    assert "run_poc" in registry.tools
    out = await registry.call("run_poc", {})
    assert out.startswith("<returncode>1</returncode>") and "heap-use-after-free" in out
    assert [(c.command, c.tool) for c in offered.history] == [("run_poc", "run_poc")]
    await offered.run_bash_cmd("true")  # the last command of the budget is kept for loc.json
    assert "Command budget exhausted" in await registry.call("run_poc", {})
