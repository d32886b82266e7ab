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
- **Code files** are C/C++ sources and headers (:data:`CODE_EXTENSIONS`) plus the other
  sources the fuzz target is built from (``.y``, ``.l``, ``.re``, ``.rl``, ``.dasc``, ``.inc``,
  ``.def``, assembly, mruby's Ruby). Everything else (ChangeLog, NEWS, docs, build
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

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from services.green.kinds.arvo.scoring.flbench import flb_hunks
from services.green.kinds.arvo.scoring.functions import FunctionIndex, FunctionSpan
from services.green.kinds.arvo.scoring.gt_model import (
    CODE_EXTENSIONS,
    MAX_SOURCE_BYTES,
    TEST_DIRS,
    FileStatus,
    GroundTruth,
    GTFile,
    GTFunction,
    GTRegion,
    IgnoredFile,
    is_code_file,
    is_test_path,
)
from services.green.kinds.arvo.scoring.hunks import (
    _find_offset,
    _hunk_lines,
    _HunkLines,
    _line_text,
    _map_back,
)
from services.green.kinds.arvo.scoring.patch_text import (
    _normalize_text,
    _parse,
    _split_commits,
    _strip_prefix,
)

__all__ = [
    "CODE_EXTENSIONS",
    "TEST_DIRS",
    "GTFile",
    "GTFunction",
    "GTRegion",
    "GroundTruth",
    "IgnoredFile",
    "ground_truth_from_patch",
    "is_code_file",
    "is_test_path",
]

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
    length: int | None = None
    """Lines of the file as the current commit finds it (None: the source is unknown)."""


SourcesFor = Callable[[list[str]], Mapping[str, bytes | str]]
"""Given the repo-relative paths a patch changes, their vulnerable versions (read in one go)."""


def ground_truth_from_patch(
    patch_text: str | bytes,
    source_root: Path | None = None,
    *,
    sources: Mapping[str, bytes | str] | SourcesFor | None = None,
) -> GroundTruth:
    """Build the ground truth of a task from its ``patch.diff``.

    ``source_root`` is the extracted vulnerable project root (what
    :func:`services.green.kinds.arvo.assets.safe_extract` returns); ``sources`` maps repo-relative paths to
    file contents instead, or is a function called once with the paths the patch changes that
    returns that map (e.g. ``lambda paths: check_archive(..., read=paths).sources``: the archive
    is read once the patch is parsed). Without either, functions come from the hunk headers
    only and hunks are not checked against the source.
    """
    gt = GroundTruth()
    text = _normalize_text(patch_text)
    if not text.strip():
        gt.flags.append("empty-patch")
        gt.warnings.append("patch.diff is empty: there is no ground truth to score against")
        return gt
    commits = _split_commits(text)
    if len(commits) > 1:
        gt.flags.append("multi-commit")
        gt.warnings.append(
            f"patch is a series of {len(commits)} commits; later commits' lines are mapped back "
            "to the vulnerable version"
        )
    problems: list[str] = []
    unparsed: dict[str, str] = {}
    parsed = [_parse(commit, problems, unparsed) for commit in commits]
    if callable(sources):
        sources = sources(_changed_paths(parsed))
    builder = _Builder(gt, _loader(source_root, sources))
    builder.ignored.update(unparsed)
    for files in parsed:
        builder.add_commit(files)
    if problems:
        gt.flags.append("parse-error")
        gt.warnings.extend(problems)
    truth = builder.finish()
    truth.flb_hunks = flb_hunks(parsed, (f.path for f in truth.files))
    return truth


def _changed_paths(parsed: list[list]) -> list[str]:
    """The vulnerable-version paths of the code files a parsed patch changes (every path the
    builder may load the source of)."""
    paths: dict[str, None] = {}
    for files in parsed:
        for pf in files:
            old = _strip_prefix(pf.source_file, "a/")
            new = _strip_prefix(pf.target_file, "b/")
            if old is not None and (is_code_file(old) or (new is not None and is_code_file(new))):
                paths[old] = None
    return list(paths)


class _Builder:
    """The files of a patch, accumulated commit by commit, then turned into :class:`GTFile`."""

    def __init__(self, gt: GroundTruth, load: SourceLoader) -> None:
        self.gt = gt
        self._load = load
        self._sources: dict[str, bytes | None] = {}
        self.accs: dict[str, _FileAcc] = {}
        self.history: dict[str, list[list[_HunkLines]]] = {}
        """Per original path, per commit: its hunks (to map later commits back)."""
        self.renamed_to: dict[str, str] = {}  # current path → original path
        self.ignored: dict[str, str] = {}
        self.saw_files = False

    def source_of(self, path: str) -> bytes | None:
        if path not in self._sources:
            self._sources[path] = self._load(path)
        return self._sources[path]

    def add_commit(self, files: list) -> None:
        for pf in files:
            self.saw_files = True
            target = self._target(pf)
            if target is not None:
                self._add_hunks(target, pf)

    def _target(self, pf) -> _FileAcc | None:
        """The accumulator of a file diff's original path; None (and why) if it is ignored."""
        old = _strip_prefix(pf.source_file, "a/")
        new = _strip_prefix(pf.target_file, "b/")
        shown = old or new or pf.path
        if pf.is_binary_file:
            self.ignored[shown] = "binary file"
            return None
        if pf.is_symlink or pf.is_submodule:
            self.ignored[shown] = "symlink" if pf.is_symlink else "submodule"
            return None
        if old is None:
            self.ignored[new or shown] = "new file: it has no lines in the vulnerable version"
            return None
        original = self.renamed_to.pop(old, old)
        if new is not None and new != original:  # later commits name the file by ``new``
            self.renamed_to[new] = original
        if not (is_code_file(original) or (new is not None and is_code_file(new))):
            self.ignored[original] = "not a code file"
            return None
        if len(pf) == 0:
            if original not in self.accs:
                self.ignored[original] = (
                    "renamed without content changes" if new and new != old else "no hunks"
                )
            return None
        status: FileStatus = (
            "deleted" if new is None else ("renamed" if new != original else "modified")
        )
        acc = self.accs.get(original)
        if acc is None:
            acc = self.accs[original] = _FileAcc(original, new, status)
            self.ignored.pop(original, None)
        else:
            acc.new_path = new
            if new is None:
                acc.status = "deleted"
        return acc

    def _add_hunks(self, acc: _FileAcc, pf) -> None:
        if acc.commits == 0:
            src = self.source_of(acc.path)
            acc.length = _count_lines(src) if src is not None else None
        old_len = acc.length  # later commits: the length after the earlier ones
        earlier = self.history.get(acc.path, [])
        this_commit: list[_HunkLines] = []
        for hunk in pf:
            hl = _hunk_lines(hunk, old_len)
            this_commit.append(hl)
            removed, anchors = hl.removed, hl.anchors
            if earlier:
                removed, anchors = _map_series(removed, anchors, earlier, self.gt)
            acc.hunks.append(hl)
            acc.removed.update(removed)
            acc.anchors.update(anchors)
            for line in [*removed, *anchors]:
                acc.headers.setdefault(line, hl.header)
        self.history.setdefault(acc.path, []).append(this_commit)
        acc.commits += 1
        if acc.length is not None:
            acc.length += sum(h.target_length - h.source_length for h in this_commit)

    def finish(self) -> GroundTruth:
        gt, accs, ignored = self.gt, self.accs, self.ignored
        if not self.saw_files and not accs:
            gt.flags.append("no-code-changes")
            gt.warnings.append("patch.diff holds no file diffs")
        # tests and fuzzers count only when nothing else changed
        primary = [
            a for a in accs.values() if not is_test_path(a.path) and (a.removed or a.anchors)
        ]
        for acc in list(accs.values()):
            if is_test_path(acc.path) and primary:
                ignored[acc.path] = "test/fuzzing code (the fix also changes non-test code)"
                del accs[acc.path]
        if accs and not primary:
            gt.flags.append("test-code-only")
            gt.warnings.append(
                "the fix only changes test/fuzzing code: that code is the ground truth"
            )
        for acc in accs.values():
            if not (acc.removed or acc.anchors):
                ignored[acc.path] = "no line of the vulnerable version is changed"
                continue
            gt.files.append(_build_file(acc, self.source_of(acc.path), gt))
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
        removed, anchors = _align_hunks(acc, src, gt)
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
    regions = [_region(acc, group, removed, anchors, per_line) for group in _consecutive(lines)]
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


def _align_hunks(acc: _FileAcc, src: bytes, gt: GroundTruth) -> tuple[set[int], set[int]]:
    """Each hunk moved to where its lines match the vulnerable source (as ``patch`` would);
    the removed and anchor lines there (``acc.headers`` follow them)."""
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
    acc.headers = headers
    return shifted_r, shifted_a


def _region(
    acc: _FileAcc,
    group: list[int],
    removed: set[int],
    anchors: set[int],
    per_line: dict[int, FunctionSpan | None],
) -> GTRegion:
    """One region: the function that encloses most of its lines."""
    counts = Counter(
        (f.qualified, f.start_line) for f in (per_line[x] for x in group) if f is not None
    )
    fn: FunctionSpan | None = None
    if counts:
        best = counts.most_common(1)[0][0]
        fn = next(
            f for f in (per_line[x] for x in group) if f and (f.qualified, f.start_line) == best
        )
    return GTRegion(
        file=acc.path,
        start=group[0],
        end=group[-1],
        removed_lines=[x for x in group if x in removed],
        anchor_lines=[x for x in group if x in anchors],
        function=fn,
        hunk_header=acc.headers.get(group[0], ""),
    )


def _consecutive(lines: list[int]) -> list[list[int]]:
    groups: list[list[int]] = []
    for line in lines:
        if groups and line == groups[-1][-1] + 1:
            groups[-1].append(line)
        else:
            groups.append([line])
    return groups
