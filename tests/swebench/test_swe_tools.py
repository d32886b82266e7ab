"""The SWE tools on a local shell (a temp git repository as the workspace)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from services.purple.agent.config import AgentConfig
from services.purple.agent.parser import FORMAT_HELP
from services.purple.protocols import RunStats
from services.purple.tools.swe import Finished, SweTools, _search_key
from services.purple.tools.toolsets import SweToolset
from services.shared.protocol import SubmitResult
from services.swebench.instances import swe_paths
from tests.support.local_env import LocalShellEnvironment

FILE = "line 1\nline 2\nline 3\nline 4\nline 5\n"


class SweLocalEnvironment(LocalShellEnvironment):
    """A local shell whose ``submit`` means "the agent is done" (refusing the first
    ``refuse_first`` calls), as green's would for a SWE-bench task."""

    async def submit(self, stats: RunStats | None = None) -> SubmitResult:
        refused = len(self.submits) < self.refuse_first
        reply = SubmitResult(accepted=not refused, errors=["not yet (test)"] if refused else [])
        self.submits.append((stats, reply))
        return reply


GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@t",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@t",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "PATH": "/usr/bin:/bin",
}
"""A git with a fixed identity and no user configuration."""


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, env=GIT_ENV, check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "testbed"
    files = {
        "pkg/__init__.py": "",
        "pkg/core.py": "def add(a, b):\n    return a - b\n",
        "pkg/wrap.py": "def wrap(text, width):\n    return [text]\n",
        "tests/test_core.py": "from pkg.core import add\n\ndef test_add():\n    assert add(1, 2) == 3\n",
        "tests/data/sample.txt": "not a test\n",
        "pkg/wrap_test.py": "from pkg.wrap import wrap\n",
        "docs/notes.txt": "add() is documented here\n",
        "notes.txt": FILE,
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "init")
    return root


@pytest.fixture
def tools(repo: Path) -> SweTools:
    return SweTools(SweLocalEnvironment(swe_paths(str(repo))), swe_paths(str(repo)))


def read(repo: Path, rel: str) -> str:
    return (repo / rel).read_text()


# ---- replace_in_file --------------------------------------------------------------------------


async def test_replace_middle_lines_shows_the_numbered_neighbourhood(tools, repo) -> None:
    out = await tools.replace_in_file("notes.txt", 2, 3, "two\nthree\nthree and a half")
    assert read(repo, "notes.txt") == "line 1\ntwo\nthree\nthree and a half\nline 4\nline 5\n"
    assert "Replaced lines 2-3 of notes.txt with 3 line(s)." in out
    assert "[notes.txt: lines 1-6 of 6]" in out
    assert "     4  three and a half" in out and "     6  line 5" in out


async def test_replace_first_and_last_line(tools, repo) -> None:
    await tools.replace_in_file("notes.txt", 1, 1, "first\n")
    await tools.replace_in_file("notes.txt", 5, 5, "last")
    assert read(repo, "notes.txt") == "first\nline 2\nline 3\nline 4\nlast\n"


async def test_insert_before_a_line_append_and_delete(tools, repo) -> None:
    await tools.replace_in_file("notes.txt", 1, 0, "header")
    assert read(repo, "notes.txt").startswith("header\nline 1\n")
    await tools.replace_in_file("notes.txt", 7, 6, "footer\n")
    assert read(repo, "notes.txt").endswith("line 5\nfooter\n")
    out = await tools.replace_in_file("notes.txt", 2, 3, "")
    assert read(repo, "notes.txt") == "header\nline 3\nline 4\nline 5\nfooter\n"
    assert "with 0 line(s)" in out


async def test_content_with_quotes_heredoc_markers_and_shell_syntax(tools, repo) -> None:
    nasty = (
        "s = 'single' + \"double\" + `back`\n"
        "EOF\n"
        "SWE_CONTENT_0123\n"
        "$(rm -rf /) ${HOME} \\n \\\\ \t tab\n"
        "<<'EOF'\n"
        "ünïcödé ✓\n"
        "\n"
    )
    await tools.replace_in_file("notes.txt", 3, 3, nasty)
    assert read(repo, "notes.txt") == "line 1\nline 2\n" + nasty + "line 4\nline 5\n"


async def test_trailing_newline_is_added_once(tools, repo) -> None:
    await tools.replace_in_file("notes.txt", 2, 2, "no newline")
    await tools.replace_in_file("notes.txt", 3, 3, "with newline\n")
    await tools.replace_in_file("notes.txt", 4, 4, "two newlines\n\n")
    assert read(repo, "notes.txt") == ("line 1\nno newline\nwith newline\ntwo newlines\n\nline 5\n")


async def test_file_without_final_newline(tools, repo) -> None:
    (repo / "raw.txt").write_text("a\nb")
    await tools.replace_in_file("raw.txt", 3, 2, "c")  # append after the unterminated line
    assert read(repo, "raw.txt") == "a\nb\nc\n"
    (repo / "raw2.txt").write_text("a\nb")
    await tools.replace_in_file("raw2.txt", 1, 1, "A")  # the tail keeps its state
    assert read(repo, "raw2.txt") == "A\nb"


async def test_create_a_new_file_and_refuse_bad_ranges(tools, repo) -> None:
    out = await tools.replace_in_file("pkg/new/mod.py", 1, 0, "X = 1")
    assert read(repo, "pkg/new/mod.py") == "X = 1\n" and "Inserted 1 line(s)" in out
    assert "File not found" in await tools.replace_in_file("missing.txt", 2, 2, "x")
    assert "past the end" in await tools.replace_in_file("notes.txt", 9, 9, "x")
    assert "past the end" in await tools.replace_in_file("notes.txt", 4, 6, "x")
    assert "at least 1" in await tools.replace_in_file("notes.txt", 0, 1, "x")
    assert "is before from_line" in await tools.replace_in_file("notes.txt", 4, 2, "x")
    assert read(repo, "notes.txt") == FILE


async def test_python_syntax_errors_are_reported(tools, repo) -> None:
    out = await tools.replace_in_file("pkg/core.py", 2, 2, "    return a +")
    assert "WARNING: pkg/core.py no longer parses" in out and "SyntaxError" in out
    out = await tools.replace_in_file("pkg/core.py", 2, 2, "    return a + b")
    assert "WARNING" not in out


# ---- the other tools --------------------------------------------------------------------------


async def test_show_file(tools) -> None:
    out = await tools.show_file("pkg/core.py")
    assert out.splitlines() == [
        "[pkg/core.py: lines 1-2 of 2]",
        "     1  def add(a, b):",
        "     2      return a - b",
    ]
    assert "File not found" in await tools.show_file("nope.py")
    assert "lines 2-3 of 5" in await tools.show_file("notes.txt", 2, 3)


async def test_search_code(tools) -> None:
    out = await tools.search_code("def (add|wrap)")
    assert "pkg/core.py:1:def add(a, b):" in out and "pkg/wrap.py:1:def wrap" in out
    assert "docs/notes.txt" not in out  # *.py only by default
    assert "docs/notes.txt:1:" in await tools.search_code("add", file_pattern="*")
    assert "No matches." in await tools.search_code("nothing_like_this")


async def test_find_test_files(tools, repo) -> None:
    out = await tools.find_test_files()
    assert "2 test file(s):" in out and "tests/test_core.py" in out
    assert "pkg/wrap_test.py" in out and "sample.txt" not in out
    out = await tools.find_test_files("pkg.wrap")
    assert "path contains wrap: 1\npkg/wrap_test.py" in out
    out = await tools.find_test_files("add")  # no path match; test_core.py mentions it
    assert "path contains add: 0" in out and "mention add: 1\ntests/test_core.py" in out
    (repo / "tests" / "test_new.py").write_text("add\n")  # untracked files count too
    assert "tests/test_new.py" in await tools.find_test_files("")


def test_search_key() -> None:
    assert _search_key("semver.version") == "version"
    assert _search_key("src/pkg/wrap.py") == "wrap"
    assert _search_key("tests/test_x.py") == "test_x"
    assert _search_key("  ") == ""


async def test_finish_refuses_once_without_changes_then_ends(tools, repo) -> None:
    out = await tools.finish("nothing")
    assert "No tracked file is changed" in out
    with pytest.raises(Finished) as info:
        await tools.finish("gave up")
    assert info.value.submission is None and info.value.summary == "gave up"
    assert str(info.value) == "finished: gave up"


async def test_finish_with_changes_tells_the_environment(tools, repo) -> None:
    await tools.replace_in_file("pkg/core.py", 2, 2, "    return a + b")
    tools.env.refuse_first = 1
    out = await tools.finish("fixed add")
    assert "Submission refused:\n- not yet (test)" in out and "call finish again" in out
    with pytest.raises(Finished):
        await tools.finish("fixed add")
    assert [r.tool for r in tools.history][-1] == "finish (git status)"
    assert [reply.accepted for _, reply in tools.env.submits] == [False, True]


async def test_command_budget(repo) -> None:
    env = SweLocalEnvironment(swe_paths(str(repo)))
    tools = SweTools(env, swe_paths(str(repo)), max_commands=3)
    await tools.run_bash_cmd("true")
    await tools.run_bash_cmd("true")
    assert "Command budget exhausted" in await tools.run_bash_cmd("true")
    assert tools.budget_refusals == 1 and len(tools.history) == 2


def test_toolset_registry_and_prompt(repo) -> None:
    toolset = SweToolset()
    tools = toolset.make_tools(
        SweLocalEnvironment(swe_paths(str(repo))),
        swe_paths(str(repo)),
        commands=None,
        stats=None,
        max_commands=None,
    )
    registry = tools.registry()
    assert list(registry.tools) == [
        "run_bash_cmd",
        "show_file",
        "replace_in_file",
        "search_code",
        "find_test_files",
        "finish",
    ]
    config = AgentConfig(mode="text").with_templates(toolset.name)
    variables = {
        "paths": swe_paths("/testbed"),
        "tools": registry.describe(),
        "mode": "text",
        "format_help": FORMAT_HELP,
        "step_limit": 30,
        "command_limit": None,
        "task": "<issue>x</issue>\n",
    }
    prompt = config.render("system_template", **variables)
    assert "Do not modify, add or delete tests" in prompt and "/testbed" in prompt
    assert "replace_in_file(path: str, from_line: int, to_line: int, content: str)" in prompt
    assert "at most 30 steps" in prompt and "----BEGIN_FUNCTION_CALL----" in prompt
    assert "submit_localization" not in prompt
    first = config.render("instance_template", **variables)
    assert first.startswith("<issue>x</issue>\n\nResolve") and first.endswith("then call finish.")
