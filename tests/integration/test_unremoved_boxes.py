"""Issue 52: a judging container green could not remove is counted in the operator's
``/healthz``, with a sentence, and takes no slot while green retries its removal.

The jam is real: a file of the container's layer made immutable on the host, so the engine's
``docker rm -f`` fails ("operation not permitted") whatever is killed. The container is made
through green's own engine pool and removed as a judge's box is (``JudgeBox.close``: nobody
hands it to the janitor), on green's own event loop.
"""

from __future__ import annotations

import asyncio
import secrets
import subprocess
import time
from pathlib import Path

import pytest

from services.sandbox.base import SandboxError, SandboxSpec
from tests.integration.helpers import OPERATOR
from tests.support import web

pytestmark = pytest.mark.docker

IMAGE = "arena/python-base:3.11-bookworm"


def test_a_judging_box_green_cannot_remove_is_counted_and_holds_no_slot(
    start_green, docker_client
) -> None:
    green = start_green()
    orch = green.server.config.app.state.orchestrator
    loop = orch._health.get_loop()  # green's event loop, in the server's thread

    def on_green(coro):
        return asyncio.run_coroutine_threadsafe(coro, loop).result(timeout=120)

    spec = SandboxSpec(
        image=IMAGE,
        task_id=secrets.token_hex(8),
        ref_id="4242",
        memory="256m",
        labels={"arena.purpose": "judge", "arena.build": "patched"},
    )
    box = on_green(orch.sandboxes.create(spec))
    jam: Path | None = None
    try:
        assert on_green(box.setup("echo x > /jam", 30)).exit_code == 0
        upper = docker_client.api.inspect_container(box.id)["GraphDriver"]["Data"]["UpperDir"]
        jam = Path(upper) / "jam"
        subprocess.run(["chattr", "+i", str(jam)], check=True)
        with pytest.raises(SandboxError):
            on_green(box.remove())
        health = web.get(f"{green.url}/healthz", headers=OPERATOR, timeout=10).json()
        assert health["judging_boxes_unremoved"] == 1 == health["containers_unremoved"], health
        assert f"could not remove 1 judging container(s) ({box.name})" in health["unremoved"]
        assert all(row["running"] == 0 for row in health["engines"]), health["engines"]
        subprocess.run(["chattr", "-i", str(jam)], check=True)
        jam = None
        deadline = time.monotonic() + 90  # the janitor's next attempt (its backoff doubles)
        while time.monotonic() < deadline:
            health = web.get(f"{green.url}/healthz", headers=OPERATOR, timeout=10).json()
            if health["judging_boxes_unremoved"] == 0:
                break
            time.sleep(0.5)
        assert health["judging_boxes_unremoved"] == 0 and "unremoved" not in health, health
        assert docker_client.containers.list(all=True, filters={"id": box.id}) == []
    finally:
        if jam is not None:
            subprocess.run(["chattr", "-i", str(jam)], check=False)
