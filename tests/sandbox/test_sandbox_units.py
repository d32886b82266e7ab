"""The sandbox's pure parts, no Docker needed: output capture, stream framing, the driver."""

from __future__ import annotations

import ctypes
import os
import secrets
import struct
from pathlib import Path

import pytest

from services.sandbox.docker.diagnosis import _running_quietly
from services.sandbox.docker.disk import btrfs_updates_atime, count_entries
from services.sandbox.docker.transport import FrameDecoder
from services.sandbox.framing import MarkerScanner
from services.sandbox.output import OutputCapture
from services.sandbox.shell_scripts import frame_lines


def _captured(limit: int, *chunks: bytes) -> OutputCapture:
    capture = OutputCapture(limit)
    for chunk in chunks:
        capture.feed(chunk)
    return capture


def test_capture_keeps_everything_under_the_limit() -> None:
    capture = _captured(10, b"01234", b"56789")
    assert (capture.text(), capture.bytes_cut, capture.total) == ("0123456789", 0, 10)


def test_capture_keeps_head_and_tail_and_says_what_was_cut() -> None:
    capture = _captured(10, b"0123", b"456789abcdefghij", b"KLMNO")
    assert capture.bytes_cut == 25 - 10
    assert capture.text() == "01234\n[... 15 bytes cut ...]\nKLMNO"


def test_capture_memory_stays_bounded_with_many_chunks() -> None:
    capture = OutputCapture(1000)
    for _ in range(100_000):
        capture.feed(b"x" * 100)
    assert len(capture._head) + len(capture._tail) <= 1000 // 2 + 2 * 500
    assert capture.bytes_cut == 10_000_000 - 1000
    assert "9,999,000 bytes cut" in capture.text()


def test_capture_decodes_invalid_utf8_with_replacement() -> None:
    assert _captured(100, b"ok \xff\xfe \xe2\x9c").text() == "ok \ufffd\ufffd \ufffd"


def test_capture_with_zero_limit_only_counts() -> None:
    capture = _captured(0, b"abc")
    assert (capture.bytes_cut, capture.total) == (3, 3)


def _frame(stream: int, payload: bytes) -> bytes:
    return struct.pack(">BxxxL", stream, len(payload)) + payload


def test_frame_decoder_handles_any_split() -> None:
    wire = _frame(1, b"hello ") + _frame(2, b"err") + _frame(1, b"") + _frame(1, b"world")
    for step in (1, 2, 3, 7, 8, 9, len(wire)):
        decoder = FrameDecoder()
        got: dict[int, bytes] = {1: b"", 2: b""}
        for i in range(0, len(wire), step):
            for stream, payload in decoder.feed(wire[i : i + step]):
                got[stream] += payload
        assert got == {1: b"hello world", 2: b"err"}, step


def test_marker_scanner_finds_a_marker_split_across_chunks() -> None:
    nonce = secrets.token_hex(16)
    wire = b"out" + b"put without newline" + f"{nonce} 42\n".encode() + b"ignored"
    for step in (1, 5, 16, len(wire)):
        capture = OutputCapture(1000)
        scanner = MarkerScanner(nonce, capture)
        for i in range(0, len(wire), step):
            scanner.feed(wire[i : i + step])
        assert scanner.value == b"42" and capture.text() == "output without newline", step


def test_marker_scanner_ignores_the_nonce_without_separator() -> None:
    capture = OutputCapture(1000)
    scanner = MarkerScanner("abc", capture)
    scanner.feed(b"abcd abc")
    assert scanner.value is None
    scanner.feed(b" 0\n")
    assert scanner.value == b"0" and capture.text() == "abcd "


def test_frame_lines_counts_lines_and_drops_nul() -> None:
    assert frame_lines("a\nb") == b"2\na\nb\n"
    assert frame_lines("") == b"1\n\n"
    assert frame_lines("x\0y\n") == b"2\nxy\n\n"


def test_readable_works_for_descriptors_above_select_limit():
    # select() raises "filedescriptor out of range" above 1024; a busy green gets there
    import os
    import socket

    from services.sandbox.docker.transport import readable

    a, b = socket.socketpair()
    high = os.dup2(a.fileno(), 1500)
    sock = socket.socket(fileno=high)
    try:
        assert readable(sock, 0.05) is False
        b.sendall(b"x")
        assert readable(sock, 1.0) is True
    finally:
        sock.close()
        a.close()
        b.close()


def test_a_lost_session_is_the_agents_only_in_a_container_running_quietly() -> None:
    """session_killed needs a running container the engine reports no trouble with: paused,
    restarting, dead, OOM-killed or in error, the lost session is not shown to be the agent's."""
    assert _running_quietly({"Running": True, "Error": ""})
    for trouble in ("Paused", "Restarting", "Dead", "OOMKilled"):
        assert not _running_quietly({"Running": True, trouble: True}), trouble
    assert not _running_quietly({"Running": True, "Error": "device or resource busy"})
    assert not _running_quietly({"Running": False})


# -- counting a writable layer's entries on green's host (real find, real directories) --------


def _chain(top: Path, depth: int, name: str) -> None:
    """``depth`` nested directories ``name`` under ``top``, made relative to each other (the
    whole path may pass PATH_MAX)."""
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir(name, dir_fd=fd)
            child = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
    finally:
        os.close(fd)


def test_count_entries_counts_files_directories_and_links_once(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "f").write_text("x")
    (tmp_path / "root").symlink_to("/")  # an agent's link to / is one entry, never followed
    (tmp_path / "loop").symlink_to(tmp_path)
    assert count_entries(tmp_path)[0] == 5


def test_count_entries_walks_a_chain_deeper_than_path_max(tmp_path: Path) -> None:
    """The engine's diff fails on such a chain (ENAMETOOLONG); find walks it."""
    _chain(tmp_path, 20, "d" * 250)  # 5,020 bytes of path
    assert count_entries(tmp_path)[0] == 20


def test_count_entries_stops_past_most(tmp_path: Path) -> None:
    for i in range(1_000):
        (tmp_path / str(i)).mkdir()
    assert count_entries(tmp_path, most=100)[0] == 101
    assert count_entries(tmp_path, most=5_000)[0] == 1_000


def test_count_entries_of_a_gone_layer_fails(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        count_entries(tmp_path / "gone")


MOUNTS = """\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
41 22 7:0 / /var/lib/docker-btrfs rw,noatime shared:20 - btrfs /dev/loop0 rw,space_cache=v2
42 22 7:1 / /srv/engine\\040two rw,relatime shared:21 - btrfs /dev/loop1 rw,space_cache=v2
43 41 0:50 / /var/lib/docker-btrfs/docker/atime rw,relatime shared:22 - btrfs /dev/loop2 rw
44 22 0:51 / /var/lib/docker-btrfsx rw,relatime shared:23 - btrfs /dev/loop3 rw
"""


def test_a_btrfs_data_root_is_judged_by_the_mount_that_holds_it() -> None:
    assert btrfs_updates_atime("/var/lib/docker-btrfs/docker", MOUNTS) is False  # noatime
    assert btrfs_updates_atime("/var/lib/docker-btrfs", MOUNTS) is False
    assert btrfs_updates_atime("/srv/engine two/docker", MOUNTS) is True  # an escaped space
    assert btrfs_updates_atime("/var/lib/docker-btrfs/docker/atime/x", MOUNTS) is True  # nested
    assert btrfs_updates_atime("/var/lib/docker-btrfsx/docker", MOUNTS) is True  # not a prefix
    assert btrfs_updates_atime("/var/lib/docker", MOUNTS) is None  # ext4: not our concern
    assert btrfs_updates_atime("/var/lib/docker", "garbage\n\n1 2 3") is None


def test_count_entries_sees_blocks_reserved_past_a_files_size(tmp_path: Path) -> None:
    """``fallocate``'s ``FALLOC_FL_KEEP_SIZE`` gives a file blocks past its size: ``SizeRw``
    (sizes) never sees them, the walk does; a small file's one block is no reservation."""
    (tmp_path / "small").write_bytes(b"x")
    assert count_entries(tmp_path) == (1, 0)
    with (tmp_path / "reserved").open("wb") as f:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong]
        assert libc.fallocate(f.fileno(), 1, 0, 8 << 20) == 0, os.strerror(ctypes.get_errno())
    assert (tmp_path / "reserved").stat().st_size == 0
    assert count_entries(tmp_path) == (2, 8 << 20)
