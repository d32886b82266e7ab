"""What of an agent's patch the judge applies: its changes to the code, never to what judges it.

The tests decide whether a SWE-bench instance is resolved, so everything that decides how the
tests run is the task's, not the agent's: the test files (the instance's ``test_patch``, the
files its test ids name, ``test_*.py``, ``*_test.py``, anything under a ``tests/`` folder),
pytest's configuration (``conftest.py`` anywhere; ``pytest.ini``, ``pytest.toml``, ``tox.ini``,
``setup.cfg``, ``pyproject.toml``, which also hold pytest sections, whatever else they hold: the
judge never reinstalls the project, so nothing else in them reaches the test run), what Python
runs at start-up (``sitecustomize.py``, ``usercustomize.py``, ``*.pth``), installed packages'
metadata (``*.egg-info``, ``*.dist-info``: their entry points load pytest plugins), a module that
would stand in for the test runner at the repository's top (``pytest.py``, ``_pytest/``,
``pluggy/``, ``py.py``), git's own files, symbolic links and submodules (a link can lead a
later change into a protected file). :func:`restrict` drops every section of a ``git diff``
that names such a path, and says why; the judge applies the rest to the task's pristine tree in
a fresh container, so what it drops is as the task has it.

The diff is read as ``git apply`` and ``patch`` read it: every path a section names outside its
hunks (``diff --git``, ``---``/``+++``, ``rename``/``copy``, ``Index:``) counts; hunk bodies are
skipped by their line counts, so a removed line that reads ``--- a/conftest.py`` is content.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from services.swebench.instances import SweInstance

CONFIGURATION = frozenset(
    {
        "conftest.py",
        "pytest.ini",
        ".pytest.ini",
        "pytest.toml",
        ".pytest.toml",
        "tox.ini",
        "setup.cfg",
        "pyproject.toml",
    }
)
"""Files pytest reads its configuration, plugins and fixtures from."""
START_UP = frozenset({"sitecustomize.py", "usercustomize.py"})
RUNNER = frozenset({"pytest.py", "_pytest", "pluggy", "py.py"})
"""Top-level names that would be imported instead of the test runner from the repository."""
_TEST_NAME = re.compile(r"^(test_.*|.*_test|tests?)\.py$")
_HUNK = re.compile(r"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")
_PATH_LINE = re.compile(
    r"^(?:--- |\+\+\+ |rename from |rename to |copy from |copy to |Index: )(.*)$"
)
_SPECIAL_MODE = re.compile(r"^(?:new file |new |old |deleted file )?mode 1[26]0000\b")


@dataclass(frozen=True)
class Restricted:
    """An agent's patch as the judge applies it."""

    patch: str
    """The sections that change code (empty: none does)."""
    files: list[str]
    """The paths those sections change, in order."""
    ignored: dict[str, str] = field(default_factory=dict)
    """The paths of the dropped sections, and why each was dropped."""


def patch_files(patch: str) -> list[str]:
    """Repository paths a diff touches (both sides of a rename), in order."""
    return list(dict.fromkeys(p for s in _sections(patch or "") for p in s.paths))


def test_files(instance: SweInstance) -> frozenset[str]:
    """The files the instance names as tests: its ``test_patch``'s and its test ids'."""
    ids = [*instance.FAIL_TO_PASS, *instance.PASS_TO_PASS]
    return frozenset(patch_files(instance.test_patch)) | {t.split("::")[0] for t in ids}


def why_protected(path: str, tests: frozenset[str] = frozenset()) -> str | None:
    """Why the judge takes ``path`` (relative to the repository) from the task, or None when the
    agent's change to it counts."""
    parts = PurePosixPath(path).parts
    if not path or path.startswith("/") or ".." in parts or "\\" in path:
        return "not a path inside the repository"
    name = parts[-1]
    if ".git" in parts:
        return "git's own files"
    if path in tests:
        return "a test file of the task"
    if name in CONFIGURATION:
        return "pytest's configuration"
    if name in START_UP or name.endswith(".pth"):
        return "Python start-up code"
    if any(p.endswith((".egg-info", ".dist-info")) for p in parts[:-1]):
        return "installed package metadata (its entry points load pytest plugins)"
    if parts[0] in RUNNER:
        return "it would stand in for the test runner"
    if _TEST_NAME.match(name) or "tests" in parts[:-1]:
        return "a test file"
    return None


def _unquote(text: str) -> str:
    """A path as git writes it: C-quoted when it holds unusual characters; a ``---`` line may
    end with a tab and a time stamp."""
    text = text.rstrip("\n").split("\t")[0]
    if len(text) >= 2 and text[0] == text[-1] == '"':
        raw = text[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")
        return raw.encode("latin-1", "replace").decode("utf-8", "replace")
    return text


def _side(path: str) -> str | None:
    """The repository path of one side of a diff (``a/x`` -> ``x``); None for /dev/null."""
    path = _unquote(path)
    if path == "/dev/null":
        return None
    return path.split("/", 1)[1] if "/" in path and path[:2] in ("a/", "b/") else path


def _header_paths(rest: str) -> list[str]:
    """The two paths of ``diff --git <a> <b>`` (the same path twice unless renamed)."""
    rest = rest.rstrip("\n")
    if rest.startswith('"'):
        quoted = re.findall(r'"(?:[^"\\]|\\.)*"|\S+', rest)
        return [p for p in (_side(q) for q in quoted[:2]) if p is not None]
    for m in re.finditer(r" b/", rest):  # a/P b/P: the split where both sides agree
        a, b = rest[: m.start()], rest[m.end() :]
        if a == f"a/{b}":
            return [b, b]
    m = re.match(r"a/(.+?) b/(.+)$", rest)
    return [m.group(1), m.group(2)] if m else [rest]


@dataclass
class _Section:
    lines: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    special: bool = False
    """Creates or changes a symbolic link or a submodule."""
    hunks: int = 0


def _sections(patch: str) -> list[_Section]:
    """The patch's file sections; what comes before the first (a mail header) is dropped."""
    sections: list[_Section] = []
    old = new = 0
    for line in patch.splitlines(keepends=True):
        if old > 0 or new > 0:  # inside a hunk: content, counted off
            tag = line[:1]
            if tag in (" ", "\n"):
                old, new = old - 1, new - 1
            elif tag == "-":
                old -= 1
            elif tag == "+":
                new -= 1
            if tag in (" ", "\n", "-", "+", "\\"):  # '\ No newline at end of file': no count
                sections[-1].lines.append(line)
                continue
            old = new = 0  # a short hunk: read the line as a header
        starts = line.startswith(("diff --git ", "Index: ")) or (
            line.startswith("--- ")
            and sections
            and (sections[-1].hunks or any(p.startswith("--- ") for p in sections[-1].lines))
        )
        if starts or (not sections and line.startswith("--- ")):
            sections.append(_Section())
        if not sections:
            continue
        section = sections[-1]
        section.lines.append(line)
        if line.startswith("diff --git "):
            section.paths += _header_paths(line[len("diff --git ") :])
        elif m := _PATH_LINE.match(line):
            if (side := _side(m.group(1))) is not None:
                section.paths.append(side)
        elif m := _HUNK.match(line):
            section.hunks += 1
            old = int(m.group(1)) if m.group(1) is not None else 1
            new = int(m.group(2)) if m.group(2) is not None else 1
        elif _SPECIAL_MODE.match(line):
            section.special = True
    return sections


def restrict(patch: str, instance: SweInstance) -> Restricted:
    """The sections of ``patch`` the judge applies: those whose every path the agent may change
    (:func:`why_protected`) and that make no link or submodule; the rest is listed with why."""
    tests = test_files(instance)
    kept: list[str] = []
    files: dict[str, None] = {}
    ignored: dict[str, str] = {}
    for section in _sections(patch or ""):
        paths = list(dict.fromkeys(section.paths))
        why = next((w for p in paths if (w := why_protected(p, tests))), None)
        if why is None and section.special:
            why = "a symbolic link or a submodule"
        if not paths:
            paths, why = ["(a section that names no file)"], "no file to change"
        if why is None:
            kept += section.lines
            files.update(dict.fromkeys(paths))
        else:
            ignored.update(dict.fromkeys(paths, why))
    return Restricted("".join(kept), list(files), ignored)
