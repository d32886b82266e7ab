"""Reading ``patch.diff`` text: normalized (CRLF, ``git format-patch`` mail), split into commits
and file diffs, parsed with unidiff (a file that does not parse is reported, not fatal)."""

from __future__ import annotations

import posixpath
import re

from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

from services.green.kinds.arvo.scoring.gt_model import DEV_NULL

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
