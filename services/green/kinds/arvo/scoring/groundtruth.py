"""Ground truth from ``patch.diff``: the lines the developers' fix changed, in the vulnerable file.

Rules (``docs/scoring.md`` has the worked examples):

- **Old-file coordinates.** Every line number refers to the vulnerable (pre-fix) file, the one
  the agent reads. Diff context lines are never ground truth.
- **Changed lines** are the removed lines (``-``): deleted or rewritten by the fix.
- **Pure insertions** (a run of ``+`` lines with no ``-`` line in the same change block) have
  no old line of their own; they are anchored at the old lines immediately before and after
  the insertion point (one of them when the insertion is at the start or end of the file).
- **Regions** group consecutive ground-truth lines of one file; each region gets the function
  that encloses most of its lines (see :mod:`.functions`).
- **Code files** are C/C++ sources and headers (:data:`CODE_EXTENSIONS`) plus a few C-bearing
  formats (``.y``, ``.l``, ``.inc``, ``.def``). Everything else (ChangeLog, NEWS, docs, build
  files, test data) is listed in :attr:`GroundTruth.ignored` with the reason.
- **Tests and fuzzers**: code files under a ``test/``, ``tests/``, ``fuzz/``, ``fuzzing/``, ...
  folder (:data:`TEST_DIRS`) are ignored when the fix also changes other code files; when it
  changes only such files (the bug was in a fuzz harness), they are the ground truth and the
  ``test-code-only`` flag is set.
- **Renames** use the old path; **new files** have no old lines and are ignored; **deleted
  files** count all their old lines; **binary** diffs are ignored.
- An **empty patch**, or one without code changes, gives an empty ground truth (``empty``) and a
  flag; such a task cannot be scored.
- Patch text is normalized first: CRLF → LF, ``git format-patch`` mail headers and signatures
  are skipped. A ``format-patch`` series touching one file several times is mapped back to the
  original coordinates through the earlier commits.
- When the vulnerable source is available, each hunk is checked against it; a hunk whose lines
  sit at an offset (the patch was made against a slightly different revision) is moved to
  where its context matches, as ``patch`` would, and a warning says so.
"""

from __future__ import annotations

import posixpath
import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel
from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

from services.green.kinds.arvo.scoring.functions import FunctionIndex, FunctionSpan

CODE_EXTENSIONS = frozenset(
    {
        # C
        ".c", ".h", ".inc", ".def",
        # C++
        ".cc", ".cpp", ".cxx", ".c++", ".cp", ".hpp", ".hh", ".hxx", ".h++", ".ipp", ".tcc",
        ".inl", ".ixx", ".cppm", ".txx", ".tpp",
        # C in other clothes: yacc/bison, lex/flex, re2c
        ".y", ".yy", ".l", ".ll", ".re",
    }
)  # fmt: skip
"""Files whose changes count as ground truth."""

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

    @property
    def empty(self) -> bool:
        return not any(f.lines for f in self.files)

    @property
    def regions(self) -> list[GTRegion]:
        return [r for f in self.files for r in f.regions]

    def file(self, path: str) -> GTFile | None:
        return next((f for f in self.files if f.path == path), None)

    def to_dict(self) -> dict:
        data = self.model_dump(mode="json")
        data["empty"] = self.empty
        return data


# --- patch text -----------------------------------------------------------------------------

_MAIL_START = re.compile(r"^From [0-9a-f]{7,40} ", re.MULTILINE)
_FILE_START = re.compile(r"^(?:diff --git |--- )", re.MULTILINE)
_GIT_QUOTED = re.compile(r'^"(.*)"$')


def _normalize_text(patch: str | bytes) -> str:
    if isinstance(patch, bytes):
        patch = patch.decode("utf-8", "replace")
    patch = patch.replace("\r\n", "\n")
    if patch.startswith("\ufeff"):
        patch = patch[1:]
    if patch and not patch.endswith("\n"):
        patch += "\n"
    return patch


def _unquote(path: str) -> str:
    """Git quotes unusual paths: ``"a/foo\\303\\251.c"`` → ``a/foo\u00e9.c``."""
    m = _GIT_QUOTED.match(path)
    if not m:
        return path
    raw = m.group(1).encode("latin-1", "backslashreplace").decode("unicode_escape")
    try:
        return raw.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return raw


def _strip_prefix(path: str | None, prefix: str) -> str | None:
    if path is None:
        return None
    path = _unquote(path.strip())
    if path == DEV_NULL or not path:
        return None
    if path.startswith(prefix):
        path = path[len(prefix) :]
    path = posixpath.normpath(path.lstrip("/"))
    return None if path in (".", "") else path


def _split_commits(text: str) -> list[str]:
    """A ``git format-patch`` series is several mails; each is one commit's diff."""
    starts = [m.start() for m in _MAIL_START.finditer(text)]
    if len(starts) <= 1:
        return [text]
    starts[0] = 0
    return [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)], strict=True)]


def _file_chunks(text: str) -> list[str]:
    """Split a patch into per-file pieces: at ``diff --git`` lines when there are any, else at
    ``--- `` lines that a ``+++ `` line follows."""
    lines = text.splitlines(keepends=True)
    git = any(ln.startswith("diff --git ") for ln in lines)
    starts = [
        i
        for i, ln in enumerate(lines)
        if (
            ln.startswith("diff --git ")
            if git
            else (ln.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "))
        )
    ]
    return ["".join(lines[a:b]) for a, b in zip(starts, [*starts[1:], len(lines)], strict=True)]


_CHUNK_PATH = re.compile(r"^(?:diff --git (?:\"?a/)?|--- (?:a/)?)(\S+)", re.MULTILINE)


def _parse(text: str, problems: list[str], unparsed: dict[str, str]) -> list:
    """Parse with unidiff; on failure, parse file by file and report what could not be read
    (``unparsed``: path → reason)."""
    try:
        return list(PatchSet(text))
    except (UnidiffParseError, UnicodeError, ValueError) as exc:
        problems.append(f"patch does not parse as a whole ({exc}); parsing file by file")
    files: list = []
    for chunk in _file_chunks(text):
        try:
            files.extend(PatchSet(chunk))
        except (UnidiffParseError, UnicodeError, ValueError) as exc:
            m = _CHUNK_PATH.search(chunk)
            path = m.group(1).rstrip('"') if m else chunk.split("\n", 1)[0]
            problems.append(f"{path}: unparseable file diff ({exc})")
            unparsed[path] = f"unparseable diff ({exc}): not scored"
    return files


# --- line bookkeeping -----------------------------------------------------------------------


@dataclass
class _HunkLines:
    header: str
    source_start: int
    source_length: int
    target_start: int
    target_length: int
    removed: list[int] = field(default_factory=list)
    anchors: list[int] = field(default_factory=list)
    source_text: list[tuple[int, str]] = field(default_factory=list)
    """(old line, text) of context and removed lines, to check against the real source."""
    target_map: dict[int, int | None] = field(default_factory=dict)
    """new line → old line (None: the line is new) inside the hunk."""


def _hunk_lines(hunk, old_len: int | None) -> _HunkLines:
    out = _HunkLines(
        header=hunk.section_header.strip(),
        source_start=hunk.source_start,
        source_length=hunk.source_length,
        target_start=hunk.target_start,
        target_length=hunk.target_length,
    )
    # the next old line to be consumed: for an empty source range, '-N,0' means "after line N"
    cur_old = hunk.source_start if hunk.source_length > 0 else hunk.source_start + 1
    lines = [ln for ln in hunk if ln.line_type in ("+", "-", " ")]
    i = 0
    while i < len(lines):
        ln = lines[i]
        if ln.line_type == " ":
            out.source_text.append((cur_old, ln.value))
            if ln.target_line_no is not None:
                out.target_map[ln.target_line_no] = cur_old
            cur_old += 1
            i += 1
            continue
        # a change block: consecutive '-' and '+' lines
        j = i
        removed: list[int] = []
        added_targets: list[int] = []
        while j < len(lines) and lines[j].line_type != " ":
            if lines[j].line_type == "-":
                removed.append(cur_old)
                out.source_text.append((cur_old, lines[j].value))
                cur_old += 1
            elif lines[j].target_line_no is not None:
                added_targets.append(lines[j].target_line_no)
            j += 1
        for t in added_targets:
            out.target_map[t] = None
        if removed:
            out.removed.extend(removed)
        else:
            before, after = cur_old - 1, cur_old
            later_source = any(x.line_type != "+" for x in lines[j:])
            if before >= 1:
                out.anchors.append(before)
            if later_source or (old_len is not None and after <= old_len):
                out.anchors.append(after)
        i = j
    return out


def _line_text(value: str) -> str:
    return value.rstrip("\n").rstrip("\r").rstrip()


def _find_offset(
    hunk: _HunkLines, source_lines: list[str], where: dict[str, list[int]]
) -> int | None:
    """0 if the hunk's old lines match the source where the header says, else the nearest
    offset at which they all match (as ``patch`` would search), else None. ``where`` maps a
    line's text to its 0-based positions in the source."""
    if not hunk.source_text:
        return 0
    expected = [(n, _line_text(t)) for n, t in hunk.source_text]
    n_src = len(source_lines)

    def matches(delta: int) -> bool:
        for n, t in expected:
            k = n - 1 + delta
            if k < 0 or k >= n_src or source_lines[k] != t:
                return False
        return True

    if matches(0):
        return 0
    # anchor the search on the expected line that occurs least often in the source
    key_line, key_text = min(expected, key=lambda e: (len(where.get(e[1], ())), e[1] == ""))
    candidates = sorted((p - (key_line - 1) for p in where.get(key_text, ())), key=abs)
    for delta in candidates:
        if delta and matches(delta):
            return delta
    return None


def _map_back(line: int, earlier: list[_HunkLines]) -> int | None:
    """Map a line of the file *after* an earlier commit back to the file before it."""
    delta = 0
    for h in sorted(earlier, key=lambda h: h.target_start):
        t_first = h.target_start if h.target_length > 0 else h.target_start + 1
        if line < t_first:
            break
        if line < t_first + h.target_length:
            return h.target_map.get(line)
        delta = (h.source_start + h.source_length) - (h.target_start + h.target_length)
        if h.source_length == 0:
            delta += 1
        if h.target_length == 0:
            delta -= 1
    return line + delta


# --- classification -------------------------------------------------------------------------


def is_code_file(path: str) -> bool:
    name = path.rsplit("/", 1)[-1].lower()
    dot = name.rfind(".")
    return dot > 0 and name[dot:] in CODE_EXTENSIONS


def is_test_path(path: str) -> bool:
    return any(part.lower() in TEST_DIRS for part in path.split("/")[:-1])


# --- sources --------------------------------------------------------------------------------

SourceLoader = Callable[[str], bytes | None]


def _loader(source_root: Path | None, sources: Mapping[str, bytes | str] | None) -> SourceLoader:
    root = Path(source_root).resolve() if source_root is not None else None

    def load(path: str) -> bytes | None:
        if sources is not None and path in sources:
            data = sources[path]
            return data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
        if root is None or path.startswith("/") or ".." in path.split("/"):
            return None
        candidate = (root / path).resolve()
        if not candidate.is_relative_to(root) or not candidate.is_file():
            return None
        if candidate.stat().st_size > MAX_SOURCE_BYTES:
            return None
        return candidate.read_bytes()

    return load


# --- the builder ----------------------------------------------------------------------------


@dataclass
class _FileAcc:
    path: str
    new_path: str | None
    status: FileStatus
    removed: set[int] = field(default_factory=set)
    anchors: set[int] = field(default_factory=set)
    headers: dict[int, str] = field(default_factory=dict)
    hunks: list[_HunkLines] = field(default_factory=list)
    commits: int = 0


def ground_truth_from_patch(
    patch_text: str | bytes,
    source_root: Path | None = None,
    *,
    sources: Mapping[str, bytes | str] | None = None,
) -> GroundTruth:
    """Build the ground truth of a task from its ``patch.diff``.

    ``source_root`` is the extracted vulnerable project root (what
    :func:`services.green.assets.safe_extract` returns); ``sources`` maps repo-relative paths to
    file contents instead (e.g. ``check_archive(..., read=paths).sources``). Without
    either, functions come from the hunk headers only and hunks are not checked against the
    source.
    """
    gt = GroundTruth()
    text = _normalize_text(patch_text)
    if not text.strip():
        gt.flags.append("empty-patch")
        gt.warnings.append("patch.diff is empty: there is no ground truth to score against")
        return gt

    load = _loader(source_root, sources)
    source_cache: dict[str, bytes | None] = {}

    def source_of(path: str) -> bytes | None:
        if path not in source_cache:
            source_cache[path] = load(path)
        return source_cache[path]

    problems: list[str] = []
    commits = _split_commits(text)
    if len(commits) > 1:
        gt.flags.append("multi-commit")
        gt.warnings.append(
            f"patch is a series of {len(commits)} commits; later commits' lines are mapped back "
            "to the vulnerable version"
        )
    accs: dict[str, _FileAcc] = {}
    # per commit, per current path: hunks of that commit (to map later commits back)
    history: dict[str, list[list[_HunkLines]]] = {}
    renamed_to: dict[str, str] = {}  # current path → original path
    ignored: dict[str, str] = {}
    saw_files = False

    for commit in commits:
        unparsed: dict[str, str] = {}
        files = _parse(commit, problems, unparsed)
        ignored.update(unparsed)
        for pf in files:
            saw_files = True
            old = _strip_prefix(pf.source_file, "a/")
            new = _strip_prefix(pf.target_file, "b/")
            shown = old or new or pf.path
            if pf.is_binary_file:
                ignored[shown] = "binary file"
                continue
            if pf.is_symlink or pf.is_submodule:
                ignored[shown] = "symlink" if pf.is_symlink else "submodule"
                continue
            if old is None:
                ignored[new or shown] = "new file: it has no lines in the vulnerable version"
                continue
            original = renamed_to.pop(old, old)
            if new is not None and new != old:
                renamed_to[new] = original
            if not (is_code_file(original) or (new is not None and is_code_file(new))):
                ignored[original] = "not a code file"
                continue
            if len(pf) == 0:
                if original not in accs:
                    ignored[original] = (
                        "renamed without content changes" if new and new != old else "no hunks"
                    )
                continue
            status: FileStatus = (
                "deleted" if new is None else ("renamed" if new != original else "modified")
            )
            acc = accs.get(original)
            if acc is None:
                acc = accs[original] = _FileAcc(original, new, status)
                ignored.pop(original, None)
            else:
                acc.new_path = new
                if new is None:
                    acc.status = "deleted"
            src = source_of(original) if acc.commits == 0 else None
            old_len = _count_lines(src) if src is not None else None
            earlier = history.get(original, [])
            this_commit: list[_HunkLines] = []
            for hunk in pf:
                hl = _hunk_lines(hunk, old_len)
                this_commit.append(hl)
                removed, anchors = hl.removed, hl.anchors
                if earlier:
                    removed, anchors = _map_series(removed, anchors, earlier, gt)
                acc.hunks.append(hl)
                acc.removed.update(removed)
                acc.anchors.update(anchors)
                for line in [*removed, *anchors]:
                    acc.headers.setdefault(line, hl.header)
            history.setdefault(original, []).append(this_commit)
            acc.commits += 1

    if problems:
        gt.flags.append("parse-error")
        gt.warnings.extend(problems)
    if not saw_files and not accs:
        gt.flags.append("no-code-changes")
        gt.warnings.append("patch.diff holds no file diffs")

    # tests and fuzzers count only when nothing else changed
    primary = [a for a in accs.values() if not is_test_path(a.path) and (a.removed or a.anchors)]
    for acc in list(accs.values()):
        if is_test_path(acc.path) and primary:
            ignored[acc.path] = "test/fuzzing code (the fix also changes non-test code)"
            del accs[acc.path]
    if accs and not primary:
        gt.flags.append("test-code-only")
        gt.warnings.append("the fix only changes test/fuzzing code: that code is the ground truth")

    for acc in accs.values():
        if not (acc.removed or acc.anchors):
            ignored[acc.path] = "no line of the vulnerable version is changed"
            continue
        gt.files.append(_build_file(acc, source_of(acc.path), gt))
    gt.files.sort(key=lambda f: f.path)
    gt.ignored = [IgnoredFile(path=p, reason=r) for p, r in sorted(ignored.items())]
    if gt.empty and "empty-patch" not in gt.flags:
        gt.flags.append("no-code-changes")
        gt.warnings.append(
            "the patch changes no lines of existing code files: there is no ground truth"
        )
    gt.flags = list(dict.fromkeys(gt.flags))
    return gt


def _count_lines(src: bytes) -> int:
    return src.count(b"\n") + (0 if src.endswith(b"\n") or not src else 1)


def _map_series(
    removed: list[int], anchors: list[int], earlier: list[list[_HunkLines]], gt: GroundTruth
) -> tuple[list[int], list[int]]:
    out_r: list[int] = []
    out_a: list[int] = []
    for line, dest in [*((r, out_r) for r in removed), *((a, out_a) for a in anchors)]:
        mapped: int | None = line
        for commit_hunks in reversed(earlier):
            if mapped is None:
                break
            mapped = _map_back(mapped, commit_hunks)
        if mapped is None:
            gt.warnings.append(
                f"a later commit changes line {line}, which an earlier commit of the series added; "
                "it has no line in the vulnerable version"
            )
        else:
            dest.append(mapped)
    return out_r, out_a


def _build_file(acc: _FileAcc, src: bytes | None, gt: GroundTruth) -> GTFile:
    removed, anchors = set(acc.removed), set(acc.anchors)
    if src is not None and acc.commits == 1:
        source_lines = [_line_text(x) for x in src.decode("utf-8", "replace").split("\n")]
        where: dict[str, list[int]] = {}
        for k, t in enumerate(source_lines):
            where.setdefault(t, []).append(k)
        shifted_r: set[int] = set()
        shifted_a: set[int] = set()
        headers: dict[int, str] = {}
        for hl in acc.hunks:
            delta = _find_offset(hl, source_lines, where)
            if delta is None:
                gt.flags.append("hunk-mismatch")
                gt.warnings.append(
                    f"{acc.path}: hunk @@ -{hl.source_start},{hl.source_length} @@ does not match "
                    "the vulnerable source; its line numbers are kept as written"
                )
                delta = 0
            elif delta:
                gt.flags.append("hunk-offset")
                gt.warnings.append(
                    f"{acc.path}: hunk @@ -{hl.source_start},{hl.source_length} @@ matches the "
                    f"vulnerable source {delta:+d} lines away; moved there"
                )
            for line in hl.removed:
                shifted_r.add(line + delta)
                headers.setdefault(line + delta, hl.header)
            for line in hl.anchors:
                shifted_a.add(line + delta)
                headers.setdefault(line + delta, hl.header)
        removed, anchors = shifted_r, shifted_a
        acc.headers = headers
    elif src is None:
        gt.flags.append("source-missing")
        gt.warnings.append(
            f"{acc.path}: vulnerable source not available; functions come from hunk headers"
        )
    anchors -= removed
    lines = sorted(removed | anchors)
    index = FunctionIndex(src, acc.path)
    per_line: dict[int, FunctionSpan | None] = {}
    for line in lines:
        per_line[line] = index.enclosing(line, line, acc.headers.get(line))
    regions: list[GTRegion] = []
    for group in _consecutive(lines):
        counts = Counter(
            (f.qualified, f.start_line) for f in (per_line[x] for x in group) if f is not None
        )
        fn: FunctionSpan | None = None
        if counts:
            best = counts.most_common(1)[0][0]
            fn = next(
                f for f in (per_line[x] for x in group) if f and (f.qualified, f.start_line) == best
            )
        regions.append(
            GTRegion(
                file=acc.path,
                start=group[0],
                end=group[-1],
                removed_lines=[x for x in group if x in removed],
                anchor_lines=[x for x in group if x in anchors],
                function=fn,
                hunk_header=acc.headers.get(group[0], ""),
            )
        )
    functions: dict[tuple[str, int | None], GTFunction] = {}
    for f in per_line.values():
        if f is not None:
            functions.setdefault((f.qualified, f.start_line), f)
    return GTFile(
        path=acc.path,
        new_path=acc.new_path,
        status=acc.status,
        is_test=is_test_path(acc.path),
        lines=lines,
        regions=regions,
        functions=list(functions.values()),
        source_available=src is not None,
    )


def _consecutive(lines: list[int]) -> list[list[int]]:
    groups: list[list[int]] = []
    for line in lines:
        if groups and line == groups[-1][-1] + 1:
            groups[-1].append(line)
        else:
            groups.append([line])
    return groups
