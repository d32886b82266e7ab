"""The agent's edit, as green reads it: its tree (a tar the engine makes) against the pristine one.

No tool or file of the agent's container takes part: the tree comes out through the engine's
archive endpoint, the pristine tree is the task's ``repo-vul.tar.gz`` on green's side, and the
diff is computed in green's process (``difflib``), in one format, a git-style unified diff
(``diff --git`` headers, ``--- a/``/``+++ b/``, ``/dev/null`` for a new or deleted file), which
the refusal check and green's applier (:mod:`..builds.patching`) both read with ``unidiff``.

Left out on both sides: ``.git`` folders and build products (what ``arvo compile`` writes into a
tree). A change to a file that is not UTF-8 text (a NUL byte, an invalid sequence) is a binary
change, and a link or special file that differs from the pristine tree's is listed too: both
are refused by the kind with a sentence naming the path.
"""

from __future__ import annotations

import difflib
import fnmatch
import hashlib
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

BUILD_PRODUCTS = ("*.o", "*.a", "*.so", "*.so.*", "*.lo", "*.la", "*.d", "*.gcno", "*.gcda",
                  "*.pyc", ".deps", ".libs", "CMakeFiles", "CMakeCache.txt")  # fmt: skip
"""Left out of the patch: what building the project in the container writes into its tree."""


@dataclass(frozen=True)
class Entry:
    """A tree's entry: a regular file (its digest) or anything else (its kind and link)."""

    kind: str
    """``file``, ``link`` or ``other`` (a device, a fifo, a hard link)."""
    digest: str = ""
    link: str = ""


@dataclass
class TreeDiff:
    """The agent's edit: a unified diff of its text files, and what cannot be one."""

    patch: str = ""
    files: list[str] = field(default_factory=list)
    binary: list[str] = field(default_factory=list)
    """Changed, added or deleted files that are not UTF-8 text."""
    odd: list[str] = field(default_factory=list)
    """Links and special files that are not as in the pristine tree."""


def left_out(path: str) -> bool:
    """``.git`` and build products (any component of ``path`` matching)."""
    return any(
        part == ".git" or any(fnmatch.fnmatchcase(part, p) for p in BUILD_PRODUCTS)
        for part in path.split("/")
    )


def _members(tar: tarfile.TarFile, top: str) -> Iterator[tuple[str, tarfile.TarInfo]]:
    prefix = top.strip("/") + "/" if top.strip("/") else ""
    for m in tar:
        name = m.name.removeprefix("./")
        if not name.startswith(prefix) or m.isdir():
            continue
        rel = name[len(prefix) :]
        if rel and not left_out(rel):
            yield rel, m


def read_tree(tar_file: IO[bytes], top: str, wanted: set[str] | None = None) -> tuple[
    dict[str, Entry], dict[str, bytes]
]:  # fmt: skip
    """The entries under ``top`` of a tar stream, and the content of the ``wanted`` files."""
    entries: dict[str, Entry] = {}
    contents: dict[str, bytes] = {}
    with tarfile.open(fileobj=tar_file, mode="r|*") as tar:
        for rel, m in _members(tar, top):
            if m.issym():
                entries[rel] = Entry("link", link=m.linkname)
            elif not m.isreg():
                entries[rel] = Entry("other", link=m.linkname)
            else:
                data = f.read() if (f := tar.extractfile(m)) else b""
                entries[rel] = Entry("file", hashlib.sha256(data).hexdigest())
                if wanted is None or rel in wanted:
                    contents[rel] = data
    return entries, contents


def _text(data: bytes | None) -> list[str] | None:
    """The lines of a text file ([] for none); None when it is not UTF-8 text."""
    if data is None:
        return []
    if b"\0" in data:
        return None
    try:
        return data.decode().splitlines(keepends=True)
    except UnicodeDecodeError:
        return None


def file_diff(path: str, before: bytes | None, after: bytes | None) -> str | None:
    """One file's git-style unified diff (None: one side is not text)."""
    old, new = _text(before), _text(after)
    if old is None or new is None:
        return None
    head = f"diff --git a/{path} b/{path}\n"
    if before is None:
        head += "new file mode 100644\n"
    elif after is None:
        head += "deleted file mode 100644\n"
    if old == new:  # an empty file added or deleted
        return head
    a = "/dev/null" if before is None else f"a/{path}"
    b = "/dev/null" if after is None else f"b/{path}"
    out = [head]
    for line in difflib.unified_diff(old, new, a, b, n=3):
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def diff_trees(pristine: Path, pristine_top: str, agent: Path, agent_top: str) -> TreeDiff:
    """The agent's tree (a tar at ``agent``, its project under ``agent_top``) against the
    pristine archive (``pristine``, its project under ``pristine_top``)."""
    with pristine.open("rb") as f:
        before, _ = read_tree(f, pristine_top, set())
    with agent.open("rb") as f:
        after, _ = read_tree(f, agent_top, set())
    changed = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
    result = TreeDiff()
    files = [p for p in changed if {before.get(p, Entry("file")).kind,
                                    after.get(p, Entry("file")).kind} == {"file"}]  # fmt: skip
    result.odd = [p for p in changed if p not in files]
    wanted = set(files)
    with pristine.open("rb") as f:
        _, old = read_tree(f, pristine_top, wanted)
    with agent.open("rb") as f:
        _, new = read_tree(f, agent_top, wanted)
    parts = []
    for path in files:
        text = file_diff(path, old.get(path), new.get(path))
        if text is None:
            result.binary.append(path)
        else:
            parts.append(text)
            result.files.append(path)
    result.patch = "".join(parts)
    return result
