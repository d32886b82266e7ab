"""Tar archives for the Engine API's copy endpoints: build one from files, read one file back.

Files go into a container and come out of it through ``put_archive``/``get_archive`` only
(never a bind mount), so the same code works against a local or a remote engine.
"""

from __future__ import annotations

import errno
import io
import posixpath
import tarfile
import time
from collections.abc import Iterator, Mapping
from typing import Any

from services.sandbox.base import UnreadableFile

GO_MODE_DIR = 1 << 31
"""Go's os.ModeDir, as in the archive endpoint's path stat."""


def absolute(path: str) -> str:
    """``path`` normalized; ValueError unless it is absolute."""
    if not path.startswith("/"):
        raise ValueError(f"container paths must be absolute: {path!r}")
    return posixpath.normpath(path)


def member_name(dest: str, relpath: str) -> str:
    """``dest/relpath`` relative to ``/``; refuses absolute paths and ``..`` escapes."""
    rel = posixpath.normpath(relpath)
    if rel.startswith("/") or rel == ".." or rel.startswith("../") or rel in ("", "."):
        raise ValueError(f"bad relative path: {relpath!r}")
    return posixpath.join(dest, rel).lstrip("/")


def files_tar(dest: str, files: Mapping[str, bytes]) -> bytes:
    """A tar (to extract at ``/``) holding ``dest/<relpath>`` for each entry, mode 0644. It
    holds file entries only, so existing directories keep their mode."""
    buf = io.BytesIO()
    now = time.time()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for relpath, data in files.items():
            info = tarfile.TarInfo(member_name(dest, relpath))
            info.size, info.mode, info.mtime = len(data), 0o644, now
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def extract_single(path: str, stream: Iterator[bytes], stat: dict[str, Any], limit: int) -> bytes:
    """The content of the one regular file in a ``get_archive`` stream, at most ``limit`` bytes."""
    if int(stat.get("mode", 0)) & GO_MODE_DIR:
        raise UnreadableFile(f"{path} is a directory", errno.EISDIR)
    if int(stat.get("size", 0)) > limit:
        raise UnreadableFile(f"{path} is {stat['size']:,} bytes, more than {limit:,}", errno.EFBIG)
    buf = bytearray()
    for chunk in stream:  # the file may have grown since the stat: stay bounded anyway
        buf += chunk
        if len(buf) > limit + 64 * 1024:  # room for tar headers and padding
            raise UnreadableFile(f"{path} is larger than {limit:,} bytes", errno.EFBIG)
    with tarfile.open(fileobj=io.BytesIO(buf)) as tar:
        member = tar.next()
        if member is None or not member.isfile():
            raise UnreadableFile(f"{path} is not a regular file")
        data = tar.extractfile(member)
        content = data.read(limit + 1) if data else b""
    if len(content) > limit:
        raise UnreadableFile(f"{path} is larger than {limit:,} bytes", errno.EFBIG)
    return content
