"""The last resort of a container's removal: its processes killed through the kernel's cgroups.

A container the engine cannot remove (``docker rm -f`` failing or hanging: a process of it
stopped in the middle of an exec, a cgroup frozen behind the engine's back) is first killed
through the engine (``docker kill``); when that does not do it either, and green runs on the
engine's host with its cgroup file system in view (a local engine, green as root: ``make demo``,
CI), every process of the container's cgroups is killed from the host: its freezer thawed (a
frozen process cannot die), each process sent ``SIGKILL`` and ``SIGCONT`` (a stopped one wakes
only to die). The engine then sees its container end and removes it. Elsewhere (a remote engine,
green in a container without the host's cgroups) nothing is done here, and the removal is
retried in the background (the janitor), the container taking no slot meanwhile.
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

import docker.errors
import requests
from docker import APIClient

from services.sandbox.base import EngineUnreachable, SandboxError
from services.sandbox.docker.disk import LOCAL_ENGINE
from services.sandbox.docker.errors import ENGINE_ERRORS
from services.shared.logging import get_logger

log = get_logger("services.sandbox.docker")

CGROUPS = Path("/sys/fs/cgroup")


def container_cgroups(container_id: str, root: Path = CGROUPS) -> list[Path]:
    """The cgroup folders of the container ``container_id`` (its full id) green can see: the
    engine's ``cgroupfs`` driver (``<controller>/docker/<id>``, cgroup v1; ``docker/<id>`` or
    ``system.slice/docker-<id>.scope`` under v2) and its ``systemd`` driver
    (``<controller>/system.slice/docker-<id>.scope``). Empty when none is in view."""
    if len(container_id) < 12 or not container_id.isalnum():
        return []
    names = (f"docker/{container_id}", f"system.slice/docker-{container_id}.scope")
    tops = [root, *_children(root)]  # v2's one hierarchy, or v1's controllers
    return [top / name for top in tops for name in names if (top / name / "cgroup.procs").is_file()]


def _children(root: Path) -> list[Path]:
    try:
        return [p for p in root.iterdir() if p.is_dir() and not p.is_symlink()]
    except OSError:
        return []


def kill_cgroup_processes(container_id: str, root: Path = CGROUPS) -> int:
    """Thaw the container's freezer and kill every process of its cgroups (``SIGKILL``, then
    ``SIGCONT`` for a stopped one); how many processes were signalled (0: no cgroup of it in
    view, or none left)."""
    folders = container_cgroups(container_id, root)
    for folder in folders:
        for state in ("freezer.state", "cgroup.freeze"):  # v1: THAWED; v2: 0
            with contextlib.suppress(OSError):
                (folder / state).write_text("THAWED" if state == "freezer.state" else "0")
    pids: set[int] = set()
    for folder in folders:
        with contextlib.suppress(OSError):
            pids.update(int(p) for p in (folder / "cgroup.procs").read_text().split())
    pids -= {0, os.getpid()}  # 0: a process outside green's pid namespace
    for pid in pids:
        for sig in (signal.SIGKILL, signal.SIGCONT):
            with contextlib.suppress(OSError):
                os.kill(pid, sig)
    if pids:
        log.warning("sandbox.unjammed", container=container_id[:12], processes=len(pids))
    return len(pids)


def unjam(api: APIClient, container_id: str, name: str, error: SandboxError) -> bool:
    """After a removal of the container that failed with ``error``: kill what keeps the engine
    from removing it, through the engine (``docker kill``), then (a local engine) through its
    cgroups; whether anything was tried, so the removal is worth trying again. Only for an
    engine that answered with an error or not in time: one that cannot be reached at all (gone,
    restarting) is left to the janitor's retries."""
    log.warning("sandbox.remove_failed", container=name, error=str(error)[-300:])
    if isinstance(error, EngineUnreachable) and not timed_out(error):
        return False
    with contextlib.suppress(*ENGINE_ERRORS, docker.errors.APIError):
        api.kill(container_id)
    if api.base_url == LOCAL_ENGINE:
        kill_cgroup_processes(container_id)
    return True


def timed_out(error: BaseException) -> bool:
    """Whether a timeout is among the causes of ``error`` (the engine took too long: jammed,
    not gone)."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, TimeoutError | requests.exceptions.Timeout) or "timed out" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False
