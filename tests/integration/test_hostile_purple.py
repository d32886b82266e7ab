"""A hostile purple on a real task, against green with default settings: every attack fails and
it scores 0 on a task it does not solve.

The purple is the real purple service; only its policy is hostile (tests/support/hostile_purple.py).
Everything it receives over HTTP is recorded and searched for the bug's id.
"""

from __future__ import annotations

import hashlib
import json
import shlex
import time
from collections.abc import Iterator

import pytest

from fixtures.catalog import load_tasks
from services.purple.app import create_app as create_purple
from services.purple.config import PurpleSettings
from tests.integration.conftest import leftover_containers
from tests.integration.helpers import OPERATOR, rpc, start_a2a_task, submit_task, wait_terminal
from tests.support import web
from tests.support.hostile_purple import AttackReport, HostilePolicy
from tests.support.scripted_purple import Observed, Script, ScriptedPolicy
from tests.support.servers import free_port, serve

pytestmark = pytest.mark.docker

TARGET = "900007"


class RecordingApp:
    """Wraps purple's ASGI app and keeps the body of every HTTP request it receives."""

    def __init__(self, app) -> None:
        self.app, self.bodies = app, []
        self.state = app.state

    async def __call__(self, scope, receive, send) -> None:
        async def recording_receive():
            message = await receive()
            if message["type"] == "http.request":
                self.bodies.append(message.get("body", b""))
            return message

        await self.app(scope, recording_receive, send)


@pytest.fixture
def hostile(tmp_path, green_settings) -> Iterator[tuple[str, AttackReport, RecordingApp]]:
    report = AttackReport()
    ids = [t.id for t in load_tasks()]
    port = free_port()
    settings = PurpleSettings(
        port=port,
        log_dir=tmp_path / "logs",
        trajectory_dir=tmp_path / "traj",
    )
    green_url = f"http://127.0.0.1:{green_settings.port}"
    app = RecordingApp(
        create_purple(
            settings, make_policy=lambda kind="rca_task": HostilePolicy(green_url, ids, report)
        )
    )
    with serve(app, port) as srv:
        yield srv.url, report, app


def test_a_hostile_purple_learns_nothing_touches_nothing_and_scores_zero(
    start_green, hostile, docker_client
):
    purple_url, report, recorder = hostile
    green = start_green(purple_url=purple_url)  # default settings: the operator plane is closed
    sent = start_a2a_task(green.url, f"Task ID: arvo:{TARGET}")
    report.operator_a2a_task.update(id=sent["id"], cid=sent["contextId"])

    deadline = time.monotonic() + 180
    while True:
        a2a = rpc(green.url, "tasks/get", {"id": sent["id"]}, headers=OPERATOR).json()["result"]
        if a2a["status"]["state"] in ("completed", "failed", "canceled"):
            break
        assert time.monotonic() < deadline, a2a["status"]
        time.sleep(0.5)

    # every attack on green was refused
    assert len(report.attempts) >= 20
    for attempt in report.attempts:
        assert attempt.status in (401, 403, 404, 422, 429), (attempt.name, attempt.body[:300])
        if attempt.name.startswith("A2A"):
            assert "error" in json.loads(attempt.body), (attempt.name, attempt.body[:300])
    assert report.learned == []

    # the operator's assessment was neither cancelled nor written into
    assert a2a["status"]["state"] == "completed", a2a["status"]
    results = [a for a in a2a["artifacts"] if a["name"] == "Result"]
    assert len(results) == 1
    [outcome] = next(p["data"] for p in results[0]["parts"] if "data" in p)["tasks"]
    assert outcome["status"] == "completed"
    for metric in ("file@1", "file@5", "func@1", "func@5", "line@1", "line@5", "iou"):
        assert outcome["scores"][metric] == 0, (metric, outcome["scores"])

    # nothing it received names the bug: not the task message, not any reply or command output
    received = b"\n".join(recorder.bodies).decode("utf-8", "replace")
    everything = received + "\n".join(report.outputs) + "\n".join(a.body for a in report.attempts)
    assert f"Task ID: arvo:{TARGET}" not in received  # sanity: we search the right bytes
    assert "rca_task" in received, "the task message was recorded"
    assert TARGET not in everything
    assert "arvo:" not in received and "arvo_" not in everything

    # no decoy task was created, and nothing was left running
    listed = web.get(f"{green.url}/tasks", headers=OPERATOR).json()
    assert listed["total"] == 1
    assert leftover_containers(docker_client, green.owner) == []


SEARCH = r"""
import os, sys
needles = [bytes.fromhex(h) for h in sys.argv[1:]]
hits = set()
for root, dirs, files in os.walk("/"):
    if root.startswith(("/proc", "/sys", "/dev")):
        dirs[:] = []
        continue
    for name in files:
        path = os.path.join(root, name)
        try:
            if os.path.islink(path) or os.path.getsize(path) > 64 << 20:
                continue
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            continue
        hits.update((i, path) for i, n in enumerate(needles) if n in data)
env = "\n".join(f"{k}={v}" for k, v in os.environ.items()).encode()
hits.update((i, "environment") for i, n in enumerate(needles) if n in env)
print("searched: hits", sorted(hits))
"""


def test_a_hostile_purple_on_a_reproduce_task_finds_no_poc_no_fix_and_no_hash_of_either(
    start_green, tmp_path, fixture_assets, docker_client
):
    """Level 2 (the most help: the crash report): the task's PoC, the fix, and their md5, sha1
    and sha256 are nowhere in the agent's container (files, environment), in anything green
    sends it, or on the dashboard's pages it can reach without the operator's token."""
    poc = (fixture_assets / "900003" / "poc").read_bytes()
    fix = (fixture_assets / "900003" / "patch.diff").read_bytes()
    added = [ln[1:] for ln in fix.decode().splitlines() if ln.startswith("+") and len(ln) > 20]
    texts = [
        *(hashlib.new(a, d).hexdigest() for a in ("md5", "sha1", "sha256") for d in (poc, fix)),
        *added[:3],
    ]
    needles = [poc, fix, *(t.encode() for t in texts), *(t.upper().encode() for t in texts[:6])]
    control = b"static int add_hardlink("  # in the source the agent gets: the search must find it
    search = f"python3 -c {shlex.quote(SEARCH)} " + " ".join(n.hex() for n in [control, *needles])
    observed = Observed()
    port = free_port()
    settings = PurpleSettings(
        port=port,
        log_dir=tmp_path / "logs",
        trajectory_dir=tmp_path / "traj",
    )
    script = Script(commands=[search, "env; ls -la /tmp /workspace"], submissions=[b"x"])
    app = RecordingApp(
        create_purple(
            settings, make_policy=lambda kind="rca_task": ScriptedPolicy(script, observed)
        )
    )
    with serve(app, port) as srv:
        unhidden = start_green(purple_url=srv.url, hide_poc=False)  # the defence off: found
        wait_terminal(unhidden.url, submit_task(unhidden.url, {"task": "arvo-poc:900003-l2"})["id"])
        unhidden.stop()
        app.bodies.clear()
        green = start_green(purple_url=srv.url)
        task = submit_task(green.url, {"task": "arvo-poc:900003-l2"})
        done = wait_terminal(green.url, task["id"])
        anonymous = [
            web.get(f"{green.url}{path}", timeout=10, follow_redirects=True).text
            for path in ("/ui", f"/ui/tasks/{task['id']}", f"/tasks/{task['id']}", "/kinds")
        ]
    assert done["status"] == "completed" and done["scores"]["reproduced"] == 0.0
    found, searched = observed.results[0].output, observed.results[2].output
    assert "(1, '/tmp/poc')" in found, found[-2000:]  # needle 1: the PoC
    hits = "[(0, '/src/tarlite/lib/archive.c'), (0, '/workspace/src-vul/tarlite/lib/archive.c')]"
    assert f"searched: hits {hits}" in searched, searched  # the control needle only
    received = b"\n".join(app.bodies)
    assert b"poc_task" in received and b"/workspace/error.txt" in received  # we search them
    for needle in needles:
        assert needle not in received, needle[:80]
        assert all(needle.decode("latin-1") not in page for page in anonymous), needle[:80]
    assert leftover_containers(docker_client, green.owner) == []
