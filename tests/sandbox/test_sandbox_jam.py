"""A container its engine cannot remove (issue 52, attack 4's aftermath): it never holds a slot.

Two real jams on the default engine. A container whose processes are frozen and stopped behind
the engine's back is killed from the host through its cgroups (the removal's last resort,
``services/sandbox/docker/unjam.py``). A judging container whose removal the engine refuses (a
file of its layer made immutable on the host: ``docker rm -f`` fails with "operation not
permitted", whatever is killed) is set aside at once, whoever removed it: it takes no slot,
green's janitor counts it as a judging container (what ``/healthz`` shows the operator) and
removes it once the engine can.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import docker
import docker.errors
import pytest

from services.sandbox.base import SandboxError, SandboxSpec
from services.sandbox.docker import DockerSandboxProvider
from services.sandbox.docker.unjam import container_cgroups, kill_cgroup_processes
from services.sandbox.janitor import Janitor

pytestmark = pytest.mark.docker

IMAGE = os.environ.get("ARENA_QUOTA_IMAGE", "arena/python-base:3.11-bookworm")
PREFIX = f"arenajam{secrets.token_hex(3)}"


@pytest.fixture(scope="module")
def client() -> Iterator[docker.DockerClient]:
    try:
        client = docker.from_env()
        client.images.get(IMAGE)
    except Exception as e:
        pytest.skip(f"no Docker engine or no {IMAGE}: {e}")
    yield client
    for c in client.containers.list(all=True, filters={"label": f"{PREFIX}.managed=1"}):
        with contextlib.suppress(docker.errors.APIError):
            c.remove(force=True)
    client.close()


def _spec(**labels: str) -> SandboxSpec:
    return SandboxSpec(
        image=IMAGE, task_id=secrets.token_hex(8), ref_id="4242", memory="256m", labels=labels
    )


def test_a_frozen_and_stopped_container_is_killed_through_its_cgroups(
    client: docker.DockerClient,
) -> None:
    container = client.containers.run(
        IMAGE, ["sleep", "infinity"], detach=True, labels={f"{PREFIX}.managed": "1"}
    )
    try:
        folders = container_cgroups(container.id)
        if not folders:
            pytest.skip("the engine's cgroups are not in view of this process")
        pids = [int(p) for p in (folders[0] / "cgroup.procs").read_text().split()]
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        freezer = [f / "freezer.state" for f in folders if (f / "freezer.state").exists()]
        for state in freezer:
            state.write_text("FROZEN")
        assert kill_cgroup_processes(container.id) == len(pids) >= 1
        assert container.wait(timeout=20)["StatusCode"] == 137  # SIGKILL, without the engine
    finally:
        container.remove(force=True)


async def test_a_judging_container_the_engine_cannot_remove_takes_no_slot_and_is_retried(
    client: docker.DockerClient,
) -> None:
    provider = DockerSandboxProvider(client, label_prefix=PREFIX)
    janitor = Janitor(provider, lambda task_id: False, retry_s=0.2)
    box = await provider.create(_spec(**{"arena.purpose": "judge"}))
    jam: Path | None = None
    try:
        assert (await box.setup("echo x > /jam", 30)).exit_code == 0
        upper = client.api.inspect_container(box.id)["GraphDriver"]["Data"]["UpperDir"]
        jam = Path(upper) / "jam"
        subprocess.run(["chattr", "+i", str(jam)], check=True)
        assert box in provider.live
        with pytest.raises(SandboxError, match="cannot remove"):
            await box.remove()  # as a judge's box closes: nobody hands it to the janitor
        assert box not in provider.live  # its slot is free at once
        assert janitor.pending_of("judge") == [box.name] == janitor.pending
        await asyncio.sleep(1.0)  # the janitor tries again, and fails again
        assert janitor.pending_of("judge") == [box.name]
        subprocess.run(["chattr", "-i", str(jam)], check=True)
        jam = None
        deadline = time.monotonic() + 30
        while janitor.busy() and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert janitor.pending == []
        with pytest.raises(docker.errors.NotFound):
            client.api.inspect_container(box.id)
    finally:
        if jam is not None:
            subprocess.run(["chattr", "-i", str(jam)], check=False)
        await janitor.close()
        with contextlib.suppress(SandboxError):
            await box.remove()
        await provider.aclose()
