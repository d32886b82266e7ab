"""A unified diff applied to a judging container's tree by green itself: no tool of the image's.

The patch is parsed once with ``unidiff`` (the same parse the fix kind's refusal check reads),
each file it changes is read out through the engine, its hunks are applied in green's own
process (each hunk's context must match exactly, at its line or moved; no fuzz), and the result
is written back through the engine. So an image without ``git`` or ``patch`` is judged like
any other, and what is applied is exactly what the check read: a hunk, a header or a file this
parse does not understand (a binary patch, a rename, a path outside the tree) is not applied.
"""

from __future__ import annotations

import posixpath
import shlex
from dataclasses import dataclass

from unidiff import Hunk, PatchedFile, PatchSet
from unidiff.errors import UnidiffParseError

from services.sandbox.base import Sandbox, UnreadableFile

MAX_FILE_BYTES = 64 << 20
"""The largest file green reads out to patch."""


class NotApplied(ValueError):
    """The patch cannot be applied as green reads it: the sentence says where."""


@dataclass(frozen=True)
class FileEdit:
    """One file's change: its new content, or None (the file is deleted)."""

    path: str
    content: bytes | None


def parse(patch: str) -> PatchSet:
    """The patch as unidiff reads it; NotApplied when it does not parse or holds nothing."""
    try:
        files = PatchSet(patch)
    except (UnidiffParseError, UnicodeError, ValueError) as exc:
        raise NotApplied(f"the patch does not parse as a unified diff: {exc}") from exc
    if not len(files):
        raise NotApplied("the patch holds no file diff")
    return files


def relative_path(name: str | None) -> str | None:
    """A diff header's path without its ``a/`` or ``b/`` prefix (None: ``/dev/null``)."""
    if name is None or name == "/dev/null":
        return None
    return name[2:] if name.startswith(("a/", "b/")) else name


def checked_path(path: str) -> str:
    """``path`` if it stays inside the tree and out of ``.git``; NotApplied else."""
    norm = posixpath.normpath(path)
    parts = norm.split("/")
    if not path or norm.startswith("/") or ".." in parts or ".git" in parts or "\\" in path:
        raise NotApplied(f"{path!r} is not a path inside the project's tree")
    return norm


def _sides(pf: PatchedFile) -> tuple[str | None, str | None]:
    source = None if pf.is_added_file else relative_path(pf.source_file)
    target = None if pf.is_removed_file else relative_path(pf.target_file)
    return source, target


def patched_content(pf: PatchedFile, original: str | None) -> bytes | None:
    """The file's content after its hunks (None: deleted); ``original`` is its text before."""
    if pf.is_removed_file:
        return None
    lines = [] if original is None else original.splitlines(keepends=True)
    shift = 0
    for hunk in pf:
        old, new = _hunk_lines(hunk)
        want = max(hunk.source_start - 1, 0) + shift
        at = _find(lines, old, want)
        if at is None:
            raise NotApplied(
                f"{pf.path}: the hunk at line {hunk.source_start} does not match the file"
            )
        lines[at : at + len(old)] = new
        shift += len(new) - len(old) + (at - want)
    return "".join(lines).encode()


def _hunk_lines(hunk: Hunk) -> tuple[list[str], list[str]]:
    old: list[str] = []
    new: list[str] = []
    last = ""
    for line in hunk:
        kind = line.line_type
        if kind == "\\":  # the line before has no newline at the end of its file
            for side, marks in ((old, " -"), (new, " +")):
                if last and last in marks and side:
                    side[-1] = side[-1].removesuffix("\n")
            continue
        if kind in (" ", "-"):
            old.append(line.value)
        if kind in (" ", "+"):
            new.append(line.value)
        last = kind
    return old, new


def _find(lines: list[str], old: list[str], want: int) -> int | None:
    """Where ``old`` sits in ``lines``: at ``want``, else the nearest place it matches."""
    n = len(old)
    for delta in range(len(lines) + 1):
        for at in (want - delta, want + delta) if delta else (want,):
            if 0 <= at <= len(lines) - n and lines[at : at + n] == old:
                return at
    return None


async def file_edits(sandbox: Sandbox, workdir: str, patch: str) -> list[FileEdit]:
    """What ``patch`` does to the tree at ``workdir``: each file's new content (read, patched
    in green's process). NotApplied says why it cannot be applied."""
    edits: list[FileEdit] = []
    for pf in parse(patch):
        if pf.is_binary_file or pf.is_rename:
            raise NotApplied(f"{pf.path}: a binary or renamed file (green applies text diffs)")
        source, target = _sides(pf)
        path = checked_path(target or source or "")
        original = None
        if source is not None:
            try:
                data = await sandbox.read_file(
                    posixpath.join(workdir, checked_path(source)), MAX_FILE_BYTES
                )
            except FileNotFoundError as exc:
                raise NotApplied(f"{source}: no such file in the tree") from exc
            except UnreadableFile as exc:
                raise NotApplied(f"{source}: {exc}") from exc
            try:
                original = data.decode()
            except UnicodeDecodeError as exc:
                raise NotApplied(f"{source}: not a UTF-8 text file") from exc
        edits.append(FileEdit(path, patched_content(pf, original)))
    return edits


async def apply_unified(sandbox: Sandbox, workdir: str, patch: str) -> str:
    """Apply ``patch`` to the tree at ``workdir`` (files written through the engine, deletions
    by root's ``rm``; both before anything of the judged code runs); returns what was done, in words. NotApplied when it cannot be."""
    edits = await file_edits(sandbox, workdir, patch)
    written = {e.path: e.content for e in edits if e.content is not None}
    gone = [e.path for e in edits if e.content is None]
    if written:
        await sandbox.put_files(workdir, written)  # type: ignore[arg-type]
    if gone:  # as root, before anything of the judged code ran (the tree is still pristine)
        paths = " ".join(shlex.quote(p) for p in gone)
        result = await sandbox.setup(f"cd {shlex.quote(workdir)} && rm -f -- {paths}", 60)
        if result.exit_code != 0:
            raise NotApplied(f"cannot delete {', '.join(gone)}: {result.output[-300:]}")
    return f"applied by green: {len(written)} file(s) written, {len(gone)} deleted"
