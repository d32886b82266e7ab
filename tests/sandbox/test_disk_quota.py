"""The disk cap on an engine whose file system enforces it (issue #20, attacks 2 and 3).

A second engine on a loop-mounted btrfs file system with quotas on (tests/support/second_dockerd,
``btrfs_dockerd``): the provider sees a storage driver that enforces ``storage_opt size`` and
gives each task container a quota. Writing 4 GiB through files that are unlinked but kept open,
4 GiB reserved with ``fallocate`` in deleted-but-open files, and 150,000 ``mkdir``s, each stop at the cap: the host's file system grows by at most 1.25 times the
cap, and the task ends as the agent's ``disk_limit``. Host growth is the loop mount's used bytes
(``statvfs``), sampled while the command runs; the figures are printed (``pytest -s``). The file
system is mounted ``noatime``, as docs/engines.md asks, and green names an engine whose btrfs
data-root is not.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from services.sandbox.base import AgentFault, SandboxSpec
from services.sandbox.blocking import BlockingProvider
from tests.support.growth import GrowthSampler
from tests.support.second_dockerd import SecondEngine, btrfs_dockerd, provider_on  # noqa: F401

pytestmark = pytest.mark.docker

IMAGE = os.environ.get("ARENA_QUOTA_IMAGE", "arena/python-base:3.11-bookworm")
PREFIX = f"arenaquota{secrets.token_hex(3)}"
MiB = 2**20

DELETED_BUT_OPEN = """
import os, signal, time
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
chunk, total, error, fds = b"x" * 2**20, 0, None, []
try:
    for i in range(64):  # 64 files of 64 MiB: 4 GiB
        fds.append(os.open(f"/tmp/hidden{i}", os.O_CREAT | os.O_WRONLY, 0o600))
        os.unlink(f"/tmp/hidden{i}")
        for _ in range(64):
            total += os.write(fds[-1], chunk)
        os.fsync(fds[-1])
except OSError as e:
    error = e.strerror
print(total, error, flush=True)
time.sleep(4)  # still open: green notices the full quota while they hold the space
"""

FALLOCATED = """
import os, time
fds, made, error = [], 0, None
try:
    for i in range(64):  # 64 reservations of 64 MiB, deleted but open: 4 GiB in 64 calls
        fds.append(os.open(f"/tmp/reserved{i}", os.O_CREAT | os.O_WRONLY, 0o600))
        os.unlink(f"/tmp/reserved{i}")
        os.posix_fallocate(fds[-1], 0, 64 * 2**20)
        made += 1
except OSError as e:
    error = e.strerror
print(made, error, flush=True)
time.sleep(4)  # still open: green notices the full quota while they hold the space
"""

MKDIRS = """
import os
os.mkdir("/tmp/m")
made, error = 0, None
try:
    while True:  # until the quota refuses one: as many as the cap holds, however slow the host
        os.mkdir(f"/tmp/m/{made}")
        made += 1
except OSError as e:
    error = e.strerror
print(made, error, flush=True)
"""


@pytest.fixture(scope="module")
def quota_provider(btrfs_dockerd: SecondEngine) -> Iterator[BlockingProvider]:  # noqa: F811
    yield from provider_on(btrfs_dockerd, IMAGE, PREFIX, "btrfs")


def _spec(cap: int) -> SandboxSpec:
    fields: dict = {"image": IMAGE, "task_id": secrets.token_hex(8), "ref_id": "4242"}
    return SandboxSpec(**fields, memory="512m", pids_limit=256, disk_limit=cap, disk_check_s=0.5)


def _attack(provider: BlockingProvider, mount: Path, cap: int, script: str, what: str) -> None:
    sandbox = provider.create(_spec(cap))
    try:
        assert provider.provider.disk_cap == "enforced"
        assert sandbox.quota and sandbox.quota > cap
        sandbox.put_files("/tmp", {"attack.py": script.encode()})
        with GrowthSampler(mount, every=0.05) as growth, pytest.raises(AgentFault) as caught:
            said = sandbox.exec("python3 /tmp/attack.py", timeout=540)  # ends at the quota
            print(f"{what}: the command ended without a disk_limit: {said.output!r}")
        print(
            f"\n{what}: cap {cap / MiB:.0f} MiB, host growth (peak used bytes of the btrfs loop "
            f"mount) {growth.peak / MiB:.1f} MiB = {growth.peak / cap:.2f} x the cap; "
            f"task: {caught.value.reason}: {caught.value}"
        )
        assert caught.value.reason == "disk_limit"
        assert growth.peak <= 1.25 * cap
    finally:
        with contextlib.suppress(Exception):
            sandbox.remove()


def test_deleted_but_open_files_stop_at_the_cap(
    quota_provider: BlockingProvider,
    btrfs_dockerd: SecondEngine,  # noqa: F811
) -> None:
    assert btrfs_dockerd.mount is not None
    _attack(quota_provider, btrfs_dockerd.mount, 128 * MiB, DELETED_BUT_OPEN, "4 GiB deleted-open")


def test_reserved_deleted_but_open_files_stop_at_the_cap(
    quota_provider: BlockingProvider,
    btrfs_dockerd: SecondEngine,  # noqa: F811
) -> None:
    """``fallocate`` reserves a whole file in one call: no watch between two calls sees it
    (docs/engines.md), the quota refuses the reservation itself."""
    assert btrfs_dockerd.mount is not None
    _attack(quota_provider, btrfs_dockerd.mount, 128 * MiB, FALLOCATED, "4 GiB fallocated")


@pytest.mark.timeout(
    900
)  # the flood's own bound is 540 s: a loaded host makes a few hundred a second
def test_a_mkdir_flood_stops_at_the_cap(
    quota_provider: BlockingProvider,
    btrfs_dockerd: SecondEngine,  # noqa: F811
) -> None:
    assert btrfs_dockerd.mount is not None
    _attack(quota_provider, btrfs_dockerd.mount, 32 * MiB, MKDIRS, "a mkdir flood")


def test_an_engine_whose_btrfs_writes_access_times_is_named(
    quota_provider: BlockingProvider,
    btrfs_dockerd: SecondEngine,  # noqa: F811
) -> None:
    """Removing a container whose quota is full walks its tree, and on a btrfs mount that
    writes access times every directory read then forces a commit (74 s for the 150,000
    directories above, 1.4 s with ``noatime``): green names such an engine when it meets it."""
    assert btrfs_dockerd.mount is not None
    provider = quota_provider.provider

    def warnings() -> list[dict]:
        provider.disk_cap = None  # met again: its check runs again
        with capture_logs() as logs:
            quota_provider.loop.call(provider.check_disk_cap())
        return [e for e in logs if e["event"] == "engine.btrfs_atime"]

    assert warnings() == []  # the fixture's mount: noatime
    subvolumes = btrfs_dockerd.mount / "docker" / "btrfs"  # the engine's own bind mount

    def remount(option: str) -> None:
        argv = ["mount", "--options-mode", "ignore", "-o", f"remount,bind,{option}"]
        subprocess.run([*argv, str(subvolumes)], check=True)  # not merged with what it was

    remount("relatime")
    try:
        [warning] = warnings()
        assert warning["data_root"] == str(btrfs_dockerd.mount / "docker")
        assert "noatime" in warning["advice"]
    finally:
        remount("noatime")
    assert warnings() == []


def test_the_engine_says_its_cap_is_enforced(quota_provider: BlockingProvider) -> None:
    [row] = quota_provider.loop.call(quota_provider.provider.engines())
    assert row["disk_cap"] == "enforced"
