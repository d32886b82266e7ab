"""GREEN_IMAGE_BUDGET_GB with real images: task images beyond the budget are removed least
recently used first, never one a queued or running task needs, after a prefetch and after a
task ends; the figures show in /healthz and ``arena tasks images``.

Several task images are simulated by committing containers of fixture images under a
repository of this test only (distinct image ids, each the full size of a fixture image)."""

from __future__ import annotations

import time
import uuid

import pytest
from typer.testing import CliRunner

from services.arena.app import app as cli
from services.green.store.crud import TaskStore
from services.green.store.db import make_engine
from services.green.store.models import Task, TaskStatus
from tests.integration.helpers import OPERATOR, OPERATOR_TOKEN, submit_task, wait_terminal
from tests.support import web
from tests.support.docker_proxy import DockerProxy
from tests.support.task_images import copy_image, present, remove_all

pytestmark = pytest.mark.docker
TWO = ("900001", "900002")


@pytest.fixture
def budget_template(docker_client):
    template = f"arena-budget-{uuid.uuid4().hex[:8]}/arvo:{{id}}-vul"
    yield template
    remove_all(docker_client, template)


def test_budget_removes_lru_unused_task_images(
    start_green, green_settings, docker_client, budget_template
):
    tpl = budget_template
    tags = {
        ref: copy_image(docker_client, f"arena/arvo:{ref}-vul", tpl, ref)
        for ref in ("900001", "900002", "900003")
    }
    size = docker_client.images.get(tags["900001"]).attrs["Size"]
    green = start_green(image_template=tpl, image_budget_gb=1.5 * size / 1e9)

    health = web.get(f"{green.url}/healthz", headers=OPERATOR, timeout=10).json()
    assert health["images"] == {
        "budget_gb": pytest.approx(1.5 * size / 1e9),
        "used_gb": pytest.approx(3 * size / 1e9, abs=0.01),
        "images": 3,
        "over": True,
        "engines": {
            "local": {"used_gb": pytest.approx(3 * size / 1e9, abs=0.01), "images": 3, "over": True}
        },
    }

    # A replica sharing the database runs a task that needs 900001's image.
    store = TaskStore(make_engine(green_settings.database_url))
    store.add(
        Task(
            id=str(uuid.uuid4()),
            ref_id="900001",
            status=TaskStatus.running,
            purple_url="http://127.0.0.1:9",
            max_steps=1,
            task_timeout_s=60,
            command_timeout_s=10,
            owner="another-replica",
        )
    )
    r = web.post(
        f"{green.url}/datasets/prefetch", json={"task": "900002"}, headers=OPERATOR, timeout=120
    )
    assert r.status_code == 200, r.text
    body = r.json()  # 900001 needed, 900002 in use: 900003 goes; under a loaded engine its
    # delete may outlast green's Docker timeout: deferred with a sentence, done by the engine
    assert body["removed_images"] == [tags["900003"]] or body.get("budget_deferred"), body
    deadline = time.monotonic() + 120
    while len(present(docker_client, tpl)) > 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert present(docker_client, tpl) == {tags["900001"], tags["900002"]}

    # The replica's task ends; a task of 900001 runs here (purple is unreachable: it fails
    # fast) and, when it ends, the budget removes the never-used 900004, then 900002 (older).
    store.update(next(t.id for t in store.list()[0]), status=TaskStatus.failed)
    tags["900004"] = copy_image(docker_client, "arena/arvo:900004-vul", tpl, "900004")
    task = submit_task(green.url, {"task": "arvo:900001"})
    assert wait_terminal(green.url, task["id"])["status"] == "failed"
    deadline = time.monotonic() + 30
    while present(docker_client, tpl) != {tags["900001"]} and time.monotonic() < deadline:
        time.sleep(0.2)
    assert present(docker_client, tpl) == {tags["900001"]}

    out = (
        CliRunner()
        .invoke(
            cli,
            ["tasks", "images", "--green", green.url, "--api-token", OPERATOR_TOKEN],
            catch_exceptions=False,
            terminal_width=200,
        )
        .output
    )
    assert tags["900001"] in out and "1 task image(s)" in out, out


def test_a_slow_engine_is_answered_with_sentences_not_500s(
    start_green, docker_client, budget_template, tmp_path
):
    """The engine made slow through a proxy: image deletes held back past green's Docker
    timeout, then every call past /healthz's checks. The prefetch still answers 200 (its image
    is there; the budget's removal is deferred, with a sentence, and the engine finishes it),
    /datasets/images 503 with Retry-After and a sentence, /healthz 503 with a sentence. Before,
    a delete that timed out made /datasets/prefetch a 500."""
    tpl = budget_template
    tags = {ref: copy_image(docker_client, f"arena/arvo:{ref}-vul", tpl, ref) for ref in TWO}
    size = docker_client.images.get(tags["900001"]).attrs["Size"]
    proxy = DockerProxy(tmp_path / "engine.sock").start()
    try:
        proxy.delay = lambda req: 4.0 if req.startswith(b"DELETE ") and b"/images/" in req else 0
        green = start_green(
            image_template=tpl,
            image_budget_gb=1.5 * size / 1e9,
            docker_hosts=[proxy.url],
            docker_timeout_s=2,
        )
        r = web.post(
            f"{green.url}/datasets/prefetch", json={"task": "900002"}, headers=OPERATOR, timeout=60
        )
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["removed_images"] == [], body
        [why] = body["budget_deferred"]
        assert f"did not remove {tags['900001']} in time" in why, why
        deadline = time.monotonic() + 30  # the engine got the delete all the same
        while tags["900001"] in present(docker_client, tpl) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert present(docker_client, tpl) == {tags["900002"]}

        proxy.delay = lambda req: 5.0  # every call: longer than green's timeout and checks
        r = web.get(f"{green.url}/datasets/images", headers=OPERATOR, timeout=30)
        assert r.status_code == 503 and r.headers["retry-after"], r.text
        assert "the Docker engine did not answer in time" in r.json()["detail"]
        # /healthz answers at once from the engine monitor's last look: healthy until the
        # engine has missed its checks (three in a row), then degraded with a sentence
        deadline = time.monotonic() + 90
        while True:
            r = web.get(f"{green.url}/healthz", timeout=10)
            assert r.status_code in (200, 503), r.text
            if r.json()["status"] == "degraded" or time.monotonic() > deadline:
                break
            time.sleep(1)
        assert r.status_code == 503 and r.json()["status"] == "degraded", r.text
        assert "the Docker engine did not answer" in r.json()["detail"]
    finally:
        proxy.delay = lambda req: 0.0
        proxy.stop()
