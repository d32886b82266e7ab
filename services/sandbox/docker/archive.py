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
from typing import Any, BinaryIO

import docker.errors
from docker import APIClient
from docker.utils import decode_json_header

from services.sandbox.base import UnreadableFile

GO_MODE_DIR = 1 << 31
"""Go's os.ModeDir, as in the archive endpoint's path stat."""
GO_MODE_TYPE = (1 << 31) | (1 << 27) | (1 << 26) | (1 << 25) | (1 << 24) | (1 << 21) | (1 << 19)
"""Go's os.ModeType: a directory, link, device, fifo, socket, character device or irregular
file (a regular file has none of these bits)."""


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


def parents(path: str) -> list[str]:
    """The directories above ``path`` (absolute, normalized), ``/`` excluded, outermost first."""
    found, head = [], posixpath.dirname(path)
    while head not in ("/", ""):
        found.append(head)
        head = posixpath.dirname(head)
    return found[::-1]


def path_stat(api: APIClient, container_id: str, path: str) -> dict[str, Any] | None:
    """The engine's stat of ``path`` in the container (``name``, ``mode``, ``linkTarget``: a
    final link is not followed), from a HEAD of the archive endpoint (nothing is read); None
    when there is no such path. Engine errors raise as docker-py's."""
    res = api.head(api._url("/containers/{0}/archive", container_id), params={"path": path})
    if res.status_code == 404:
        return None
    api._raise_for_status(res)
    encoded = res.headers.get("X-Docker-Container-Path-Stat")
    return decode_json_header(encoded) if encoded else None


def refuse_odd(path: str, stat: dict[str, Any], *, directory: bool = False) -> None:
    """UnreadableFile unless ``path`` is a regular file (a directory with ``directory``) and no
    symbolic link: the sentence names only ``path``."""
    mode = int(stat.get("mode", 0))
    if stat.get("linkTarget"):
        raise UnreadableFile(f"{path} is a symbolic link; green reads only a file itself")
    if directory and not mode & GO_MODE_DIR:
        raise UnreadableFile(f"{path} is not a directory", errno.ENOTDIR)
    if not directory and mode & GO_MODE_DIR:
        raise UnreadableFile(f"{path} is a directory", errno.EISDIR)
    if not directory and mode & GO_MODE_TYPE:
        raise UnreadableFile(f"{path} is not a regular file (a fifo, socket or device)")


def extract_single(path: str, stream: Iterator[bytes], stat: dict[str, Any], limit: int) -> bytes:
    """The content of the one regular file in a ``get_archive`` stream, at most ``limit`` bytes."""
    refuse_odd(path, stat)
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


def read_regular_file(api: APIClient, container_id: str, path: str, limit: int) -> bytes:
    """The content of the regular file ``path`` in the container, at most ``limit`` bytes
    (blocking). UnreadableFile when it, or a directory above it, is a symbolic link (one that
    leads nowhere too: the engine's error would name its own disk), or it is no regular file;
    FileNotFoundError from docker-py's NotFound or a missing directory. Other engine errors
    raise as docker-py's.

    The engine holds the container's lock while it streams an archive: no other call on the
    container (a stat, an exec, a removal) is answered until the stream is read to its end or
    its connection closed. So the file is read (or refused) and its connection closed before
    anything else is asked: a file larger than the socket's buffers, read with the stream
    still open, held the container until the client timed out."""
    url = api._url("/containers/{0}/archive", container_id)
    res = api._get(url, params={"path": path}, stream=True)
    try:
        try:
            api._raise_for_status(res)
        except docker.errors.NotFound:
            raise
        except docker.errors.APIError as e:  # the engine could not resolve the path: a link loop
            res.close()
            _check_parents(api, container_id, path)
            raise UnreadableFile(f"{path} is a symbolic link that leads nowhere") from e
        encoded = res.headers.get("X-Docker-Container-Path-Stat")
        stat = decode_json_header(encoded) if encoded else {}
        content = extract_single(path, res.iter_content(64 * 1024), stat, limit)
    finally:
        res.close()  # a stream not read to its end: closing its connection frees the container
    _check_parents(api, container_id, path)  # the container exists: the file was there
    return content


def stream_tree(api: APIClient, container_id: str, path: str, out: BinaryIO, limit: int) -> None:
    """Write the engine's tar of the directory ``path`` to ``out``, at most ``limit`` bytes
    (blocking): the engine reads the tree, no tool of the container's. UnreadableFile when
    ``path`` (or a directory above it) is a symbolic link, no directory, or its tar is larger
    than ``limit``; FileNotFoundError when it is missing. The stream's connection is closed
    before anything else is asked, as :func:`read_regular_file`'s."""
    url = api._url("/containers/{0}/archive", container_id)
    res = api._get(url, params={"path": path}, stream=True)
    try:
        api._raise_for_status(res)
        encoded = res.headers.get("X-Docker-Container-Path-Stat")
        refuse_odd(path, decode_json_header(encoded) if encoded else {}, directory=True)
        written = 0
        for chunk in res.iter_content(1 << 20):
            written += len(chunk)
            if written > limit:
                raise UnreadableFile(f"{path} holds more than {limit:,} bytes", errno.EFBIG)
            out.write(chunk)
    finally:
        res.close()
    _check_parents(api, container_id, path)


def _check_parents(api: APIClient, container_id: str, path: str) -> None:
    """Each directory above ``path`` is one, and no symbolic link (UnreadableFile)."""
    for parent in parents(path):
        try:
            found = path_stat(api, container_id, parent)
        except docker.errors.APIError as e:
            if e.status_code and e.status_code >= 500:  # a loop of links, as above
                raise UnreadableFile(f"{parent} is a symbolic link that leads nowhere") from e
            raise
        if found is None:
            raise FileNotFoundError(f"{path} does not exist")
        refuse_odd(parent, found, directory=True)
