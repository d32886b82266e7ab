"""The ground truth's records (files, regions, functions, ignored files) and which files count.

How they are built from ``patch.diff`` is :mod:`.groundtruth`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, computed_field

from services.green.kinds.arvo.scoring.spans import FunctionSpan

CODE_EXTENSIONS = frozenset(
    {
        # C
        ".c", ".h", ".inc", ".def",
        # C++
        ".cc", ".cpp", ".cxx", ".c++", ".cp", ".hpp", ".hh", ".hxx", ".h++", ".ipp", ".tcc",
        ".inl", ".ixx", ".cppm", ".txx", ".tpp",
        # C in other clothes: yacc/bison, lex/flex, re2c, Ragel, DynASM
        ".y", ".yy", ".l", ".ll", ".re", ".rl", ".dasc",
        # assembly (names are compared lower-case: .S too)
        ".s", ".asm",
        # Ruby compiled into the interpreter (mruby's mrblib/)
        ".rb",
    }
)  # fmt: skip
"""Files whose changes count as ground truth: the sources the fuzz target is built from
(docs/scoring.md, "Code files")."""

TEST_DIRS = frozenset(
    {"test", "tests", "testing", "testsuite", "unittest", "unittests", "fuzz", "fuzzing",
     "fuzzer", "fuzzers", "oss-fuzz"}
)  # fmt: skip
"""Folder names (any path component, case-insensitive) that hold test or fuzzing code."""

MAX_SOURCE_BYTES = 32 * 1024 * 1024
DEV_NULL = "/dev/null"

FileStatus = Literal["modified", "renamed", "deleted"]


GTFunction = FunctionSpan
"""A function enclosing ground-truth lines: the record :class:`FunctionIndex` returns."""


class GTRegion(BaseModel):
    """Consecutive ground-truth lines of one file (old coordinates, inclusive)."""

    file: str
    start: int
    end: int
    removed_lines: list[int]
    """Lines the fix deleted or rewrote."""
    anchor_lines: list[int]
    """Lines around a pure insertion (context lines that anchor it)."""
    function: GTFunction | None = None
    hunk_header: str = ""

    @property
    def kind(self) -> Literal["changed", "insertion", "mixed"]:
        if self.removed_lines and self.anchor_lines:
            return "mixed"
        return "changed" if self.removed_lines else "insertion"

    @property
    def size(self) -> int:
        return self.end - self.start + 1

    def label(self) -> str:
        span = f"{self.start}" if self.start == self.end else f"{self.start}-{self.end}"
        fn = f" in {self.function.qualified}" if self.function else ""
        return f"{self.file}:{span}{fn} ({self.kind})"


class GTFile(BaseModel):
    path: str
    """Old (vulnerable) repo-relative path: what the agent sees."""
    new_path: str | None = None
    """Path after the fix (differs for renames, None for deleted files)."""
    status: FileStatus = "modified"
    is_test: bool = False
    lines: list[int]
    """Every ground-truth line of the file, sorted."""
    regions: list[GTRegion]
    functions: list[GTFunction]
    """Distinct functions enclosing ground-truth lines."""
    source_available: bool = False


class FLBHunk(BaseModel):
    """One ``@@`` hunk of the fix as FLBench's ground truth reads it (:mod:`.flbench`)."""

    file: str
    """Old (vulnerable) repo-relative path, as in :attr:`GTFile.path`."""
    lines: list[int]
    """Its deleted lines; for a hunk that only adds, the last context line before its first
    ``+`` (old coordinates, the hunk header's numbers)."""
    addition_only: bool = False


class IgnoredFile(BaseModel):
    path: str
    reason: str


class GroundTruth(BaseModel):
    files: list[GTFile] = []
    ignored: list[IgnoredFile] = []
    flags: list[str] = []
    """Machine-readable conditions: ``empty-patch``, ``no-code-changes``, ``test-code-only``,
    ``parse-error``, ``multi-commit``, ``hunk-offset``, ``hunk-mismatch``, ``source-missing``."""
    warnings: list[str] = []
    """Human-readable details of the flags."""
    flb_hunks: list[FLBHunk] = []
    """FLBench's ground truth of the same files: one entry per hunk (:mod:`.flbench`)."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def empty(self) -> bool:
        """No line to score against (stored with the ground truth)."""
        return not any(f.lines for f in self.files)

    @property
    def regions(self) -> list[GTRegion]:
        return [r for f in self.files for r in f.regions]

    def file(self, path: str) -> GTFile | None:
        return next((f for f in self.files if f.path == path), None)

    def to_dict(self) -> dict:
        return self.model_dump(mode="json")


def is_code_file(path: str) -> bool:
    name = path.rsplit("/", 1)[-1].lower()
    dot = name.rfind(".")
    return dot > 0 and name[dot:] in CODE_EXTENSIONS


def is_test_path(path: str) -> bool:
    return any(part.lower() in TEST_DIRS for part in path.split("/")[:-1])
