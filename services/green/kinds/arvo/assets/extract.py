"""Safe handling of ``repo-vul.tar.gz``: integrity check, safety check, extraction, reads.

Three jobs, three functions:

- :func:`verify_gzip_tar` - is the file a complete, readable gzip tar? (run on every download
  before the file enters the cache; a failure means :class:`CorruptAsset`).
- :func:`check_archive` - is every member safe to extract, and where is the project root?
  Validates without extracting, so the orchestrator can hand the original bytes to the Docker
  API (``put_archive``) knowing what is inside. The same single pass lists the project's
  regular files and reads the few files asked for (``read=``: the judge's patched files), so a
  100+ MB archive is decompressed once.
- :func:`safe_extract` - green-side extraction with our own checks *and* Python's ``tarfile``
  ``filter="data"``.

Member rules (every violation is a :class:`CorruptAsset` whose message names the member):

- no absolute names (``/etc/passwd``, ``C:...``), no ``..`` components;
- regular files, directories, symlinks and hard links only: devices, FIFOs and unknown types
  are refused;
- a symlink's target, resolved the way the OS would resolve it (through the archive's other
  symlinks, with ``..`` applied after each link), must stay inside the destination; so must
  every member's own path (no writing *through* a link that leads outside);
- a hard link must name an earlier regular-file member, inside the destination;
- a name is never redefined as a different link or type;
- member count and total size are capped (a tar bomb is refused before extraction).

Symlinks that escape are refused by default. Real source trees sometimes hold absolute links
left by a build (``config.guess -> /usr/share/misc/config.guess``); with
``escaping_symlinks="skip"`` such links are reported in :attr:`ArchiveInfo.skipped_links` and not
created by :func:`safe_extract`, instead of failing the task.
"""

from __future__ import annotations

import gzip
import posixpath
import re
import tarfile
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from services.green.kinds.arvo.assets.base import CorruptAsset

SRC_VUL = "src-vul"
"""The top folder of CyberGym's ``repo-vul.tar.gz`` (``src-vul/<project>/...``)."""

DEFAULT_MAX_MEMBERS = 2_000_000
DEFAULT_MAX_BYTES = 32 * 1024**3
"""Total uncompressed size of regular files that :func:`check_archive` accepts (32 GiB)."""
MAX_READ_BYTES = 64 * 1024 * 1024
"""Files asked for with ``check_archive(read=...)`` that are larger are not read."""

_HAS_DATA_FILTER = hasattr(tarfile, "data_filter")  # Python 3.11.4+, 3.12+
_WINDOWS_ABS = re.compile(r"^[A-Za-z]:")
_MAX_LINK_HOPS = 64
_READ_ERRORS = (tarfile.TarError, EOFError, OSError, zlib.error)

EscapingSymlinks = Literal["reject", "skip"]


@dataclass(frozen=True)
class ArchiveInfo:
    """What :func:`check_archive` found."""

    top_dir: str
    """Project root inside the archive, POSIX and relative: ``"src-vul/libass"``, ``"libass"``,
    ``"src-vul"`` (several projects under ``src-vul/`` and no hint), or ``""`` (flat archive)."""
    project: str | None
    """The project folder's name (``"libass"``), or None when the archive is flat/ambiguous."""
    n_files: int
    """Regular files."""
    size: int
    """Total uncompressed bytes of the regular files."""
    n_dirs: int = 0
    n_symlinks: int = 0
    n_hardlinks: int = 0
    skipped_links: tuple[str, ...] = field(default=())
    """Symlinks whose target escapes (only with ``escaping_symlinks="skip"``)."""
    files: frozenset[str] = field(default=frozenset(), repr=False)
    """Project-relative paths of the regular files under :attr:`top_dir` (links left out)."""
    sources: Mapping[str, bytes] = field(default_factory=dict, repr=False)
    """Contents of the ``read=`` files found, by project-relative path (missing ones, links and
    files larger than :data:`MAX_READ_BYTES` are left out)."""


def verify_gzip_tar(path: str | Path) -> int:
    """Check that ``path`` is a complete gzip stream holding a readable, non-empty tar.

    Decompresses the whole file once (so truncation and CRC errors are caught) while walking
    the tar headers. Returns the number of members; raises :class:`CorruptAsset` otherwise.
    """
    path = Path(path)
    try:
        with open(path, "rb") as raw:
            if raw.read(2) != b"\x1f\x8b":
                raise CorruptAsset(f"{path.name} is not a gzip file (bad magic bytes)")
        with gzip.open(path, "rb") as gz:
            n = 0
            with tarfile.open(fileobj=gz, mode="r|") as tf:
                for _member in tf:
                    n += 1
            # the tar end marker can come before the gzip trailer: read to the end so the CRC
            # and length of the whole stream are checked
            while gz.read(1 << 20):
                pass
    except CorruptAsset:
        raise
    except _READ_ERRORS as exc:
        raise CorruptAsset(f"{path.name} is not a readable gzip tar: {exc}") from exc
    if n == 0:
        raise CorruptAsset(f"{path.name} is an empty archive")
    return n


def _member_name(name: str) -> str:
    """Validate a member name and return it normalized (no ``./``, no trailing ``/``)."""
    if "\x00" in name:
        raise CorruptAsset(f"unsafe archive member {name!r}: NUL byte in name")
    if name.startswith("/") or _WINDOWS_ABS.match(name):
        raise CorruptAsset(f"unsafe archive member {name!r}: absolute path")
    parts = name.split("/")
    if ".." in parts:
        raise CorruptAsset(f"unsafe archive member {name!r}: '..' path traversal")
    norm = posixpath.normpath(name) if name else "."
    return "" if norm == "." else norm


def _resolve(path: str, links: dict[str, str]) -> list[str] | None:
    """Resolve ``path`` (relative to the destination) as the OS would, following the archive's
    symlinks. Returns the final components, or None if the path leaves the destination."""
    pending = [p for p in path.split("/") if p not in ("", ".")]
    pending.reverse()  # a stack: next component at the end
    stack: list[str] = []
    hops = 0
    while pending:
        comp = pending.pop()
        if comp in ("", "."):
            continue
        if comp == "..":
            if not stack:
                return None
            stack.pop()
            continue
        stack.append(comp)
        target = links.get("/".join(stack))
        if target is None:
            continue
        hops += 1
        if hops > _MAX_LINK_HOPS:
            raise CorruptAsset(f"unsafe archive: symlink loop through {'/'.join(stack)!r}")
        if target.startswith("/"):
            return None
        stack.pop()
        pending.extend(reversed([p for p in target.split("/") if p not in ("", ".")]))
    return stack


@dataclass
class _Scan:
    names: list[tuple[str, str]]  # (normalized name, kind) kind in file/dir/sym/hard
    links: dict[str, str]
    contents: dict[str, bytes] = field(default_factory=dict)
    """Regular files that may be one of the files to read, by member name (the project root
    is only known at the end, so every member that is ``<root>/<wanted>`` for a possible
    root is kept: a few files)."""
    n_files: int = 0
    size: int = 0
    n_dirs: int = 0
    n_symlinks: int = 0
    n_hardlinks: int = 0


def _below_possible_roots(name: str) -> Iterator[str]:
    """``name`` relative to each root :func:`_top_dir` can return, at most two folders deep
    (``""``, ``<top>``, ``src-vul``, ``src-vul/<project>``): ``a/b/c.c`` → ``a/b/c.c``,
    ``b/c.c``, ``c.c``."""
    yield name
    for _ in range(2):
        _, sep, name = name.partition("/")
        if not sep:
            return
        yield name


def _scan(tar_path: Path, max_members: int, max_bytes: int, read: frozenset[str]) -> _Scan:
    scan = _Scan(names=[], links={})
    kinds: dict[str, str] = {}
    try:
        with tarfile.open(tar_path, mode="r|gz") as tf:
            for m in tf:
                if len(scan.names) >= max_members:
                    raise CorruptAsset(f"archive has more than {max_members} members")
                name = _member_name(m.name)
                kind = _count_member(tf, m, name, scan, max_bytes, read)
                if not name:
                    if kind != "dir":
                        raise CorruptAsset(f"unsafe archive member {m.name!r}: names the root")
                    continue
                previous = kinds.get(name)
                if previous is not None and not (
                    (previous == kind and kind in ("dir", "file"))
                    or (previous == kind == "sym" and scan.links.get(name) == m.linkname)
                ):
                    raise CorruptAsset(
                        f"unsafe archive member {m.name!r}: redefines an earlier {previous} "
                        f"member as a {kind}"
                    )
                kinds[name] = kind
                if kind == "sym":
                    scan.links[name] = m.linkname
                elif kind == "hard":
                    _check_hard_link(m, kinds)
                scan.names.append((name, kind))
    except CorruptAsset:
        raise
    except _READ_ERRORS as exc:
        raise CorruptAsset(f"{tar_path.name} is not a readable gzip tar: {exc}") from exc
    return scan


def _count_member(
    tf: tarfile.TarFile,
    m: tarfile.TarInfo,
    name: str,
    scan: _Scan,
    max_bytes: int,
    read: frozenset[str],
) -> str:
    """A member's kind (``file``, ``dir``, ``sym``, ``hard``), counted into ``scan`` (a wanted
    file's content read too); CorruptAsset for devices, FIFOs and other types."""
    if m.isreg():
        scan.n_files += 1
        scan.size += max(m.size, 0)
        if scan.size > max_bytes:
            raise CorruptAsset(f"archive expands to more than {max_bytes} bytes (tar bomb?)")
        if (
            read
            and m.size <= MAX_READ_BYTES
            and not read.isdisjoint(_below_possible_roots(name))
            and (fh := tf.extractfile(m)) is not None
        ):
            scan.contents[name] = fh.read()
        return "file"
    if m.isdir():
        scan.n_dirs += 1
        return "dir"
    if m.issym():
        scan.n_symlinks += 1
        if not m.linkname:
            raise CorruptAsset(f"unsafe archive member {m.name!r}: empty symlink")
        return "sym"
    if m.islnk():
        scan.n_hardlinks += 1
        return "hard"
    if m.ischr() or m.isblk():
        raise CorruptAsset(f"unsafe archive member {m.name!r}: device file")
    if m.isfifo():
        raise CorruptAsset(f"unsafe archive member {m.name!r}: FIFO")
    raise CorruptAsset(f"unsafe archive member {m.name!r}: unsupported type {m.type!r}")


def _check_hard_link(m: tarfile.TarInfo, kinds: dict[str, str]) -> None:
    """A hard link must point at an earlier regular file of the archive."""
    target = m.linkname
    if target.startswith("/") or _WINDOWS_ABS.match(target):
        raise CorruptAsset(
            f"unsafe archive member {m.name!r}: hard link to absolute path {target!r}"
        )
    if ".." in target.split("/"):
        raise CorruptAsset(
            f"unsafe archive member {m.name!r}: hard link target {target!r} leaves the destination"
        )
    if kinds.get(posixpath.normpath(target)) != "file":
        raise CorruptAsset(
            f"unsafe archive member {m.name!r}: hard link to {target!r}, "
            "which is not an earlier regular file of the archive"
        )


def _top_dir(names: list[tuple[str, str]], project_hint: str | None) -> tuple[str, str | None]:
    first: set[str] = set()
    top_is_dir = True
    for name, kind in names:
        head, sep, _ = name.partition("/")
        first.add(head)
        if not sep and kind != "dir":
            top_is_dir = False
    if len(first) != 1 or not top_is_dir:
        return "", None
    (top,) = first
    if top != SRC_VUL:
        return top, top
    children: set[str] = set()
    child_dirs: set[str] = set()
    for name, kind in names:
        parts = name.split("/")
        if len(parts) < 2:
            continue
        children.add(parts[1])
        if len(parts) > 2 or kind == "dir":
            child_dirs.add(parts[1])
    if len(children) == 1 and children == child_dirs:
        (proj,) = children
        return f"{SRC_VUL}/{proj}", proj
    if project_hint and project_hint in child_dirs:
        return f"{SRC_VUL}/{project_hint}", project_hint
    return SRC_VUL, None


def check_archive(
    tar_path: str | Path,
    *,
    project_hint: str | None = None,
    escaping_symlinks: EscapingSymlinks = "reject",
    read: Iterable[str] = (),
    max_members: int = DEFAULT_MAX_MEMBERS,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> ArchiveInfo:
    """Validate every member of a gzip tar without extracting it, find the project root, list
    the project's files and read the project-relative files ``read`` (e.g. ``lib/x.c``), all in
    one pass over the archive.

    ``project_hint`` picks the project when ``src-vul/`` holds several folders (e.g. the
    ``<project>`` of the ``/src/<project>/`` frames in ``error.txt``). Raises
    :class:`CorruptAsset` with a message naming the offending member.
    """
    tar_path = Path(tar_path)
    wanted = frozenset(posixpath.normpath(p.lstrip("/")) for p in read)
    scan = _scan(tar_path, max_members, max_bytes, wanted)
    skipped: list[str] = []
    escaping: set[str] = set()
    for name, target in scan.links.items():
        parent = posixpath.dirname(name)
        escapes = (
            target.startswith("/")
            or bool(_WINDOWS_ABS.match(target))
            or _resolve(f"{parent}/{target}" if parent else target, scan.links) is None
        )
        if escapes:
            if escaping_symlinks == "skip":
                skipped.append(name)
                escaping.add(name)
                continue
            why = "an absolute path" if target.startswith("/") else "outside the destination"
            raise CorruptAsset(
                f"unsafe archive member {name!r}: symlink to {target!r} points to {why}"
            )
    for name, kind in scan.names:
        # a member is written where its path resolves to: through links, never outside
        path = posixpath.dirname(name) if kind == "sym" else name
        if not path:
            continue
        parts = path.split("/")
        for i in range(1, len(parts) + 1):
            if "/".join(parts[:i]) in escaping:
                raise CorruptAsset(
                    f"unsafe archive member {name!r}: its path goes through the escaping "
                    f"symlink {'/'.join(parts[:i])!r}"
                )
        if _resolve(path, scan.links) is None:
            raise CorruptAsset(
                f"unsafe archive member {name!r}: its path leads outside the destination "
                "through a symlink"
            )
    top, project = _top_dir(scan.names, project_hint)
    prefix = f"{top}/" if top else ""
    return ArchiveInfo(
        top_dir=top,
        project=project,
        n_files=scan.n_files,
        size=scan.size,
        n_dirs=scan.n_dirs,
        n_symlinks=scan.n_symlinks,
        n_hardlinks=scan.n_hardlinks,
        skipped_links=tuple(skipped),
        files=frozenset(
            name[len(prefix) :]
            for name, kind in scan.names
            if kind == "file" and name.startswith(prefix)
        ),
        sources={p: scan.contents[prefix + p] for p in wanted if prefix + p in scan.contents},
    )


def safe_extract(
    tar_path: str | Path,
    dest: str | Path,
    *,
    project_hint: str | None = None,
    escaping_symlinks: EscapingSymlinks = "reject",
    max_members: int = DEFAULT_MAX_MEMBERS,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Path:
    """Extract a checked archive into ``dest`` and return the project root (absolute).

    The root is ``dest/src-vul/<project>`` for CyberGym's layout, ``dest/<project>`` for an
    archive whose single top folder is the project, ``dest`` for a flat archive.
    Runs :func:`check_archive` first, then extracts with ``tarfile``'s ``filter="data"`` (which
    also drops setuid bits and refuses anything our checks might have missed).
    """
    tar_path = Path(tar_path)
    info = check_archive(
        tar_path,
        project_hint=project_hint,
        escaping_symlinks=escaping_symlinks,
        max_members=max_members,
        max_bytes=max_bytes,
    )
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    skip = set(info.skipped_links)

    def _filter(member: tarfile.TarInfo, path: str) -> tarfile.TarInfo | None:
        if skip and _member_name(member.name) in skip:
            return None
        if _HAS_DATA_FILTER:
            return tarfile.data_filter(member, path)
        return member  # pragma: no cover - Python < 3.11.4: our checks above stand alone

    try:
        with tarfile.open(tar_path, mode="r:gz") as tf:
            if _HAS_DATA_FILTER:
                tf.extractall(dest, filter=_filter)
            else:  # pragma: no cover
                members = [m for m in tf.getmembers() if _filter(m, str(dest)) is not None]
                tf.extractall(dest, members=members)
    except tarfile.FilterError as exc:
        raise CorruptAsset(f"unsafe archive member refused by tarfile: {exc}") from exc
    except _READ_ERRORS as exc:
        raise CorruptAsset(f"could not extract {tar_path.name}: {exc}") from exc
    root = dest / info.top_dir if info.top_dir else dest
    return root.resolve()
