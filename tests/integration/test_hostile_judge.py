"""A hostile agent against the judge, from inside the patched build green judges (issue #52,
attacks 2 to 4), on ``arvo-fix:900007`` in real containers.

The agent's fix is the developers' own plus code on the input's path
(:mod:`tests.support.judged_code`): it replaces the judge's inputs folder with a file; it holds
768 MiB of deleted-but-open files under a 128 MiB cap while it kills green's scans every 2 ms;
it SIGSTOPs every new process and hangs. The judged code runs as the task container's agent uid,
with green's inputs, scans and kills root's: each attack is the agent's verdict, never infra;
after each, ``docker inspect`` of its judging containers answers at once and the next judging on
the same engine resolves the developers' fix.

Attack 2 goes through green, purple and the agent plane. Attacks 3 and 4 call ``fork`` and
``kill``, which green's submit check refuses by name (asserted here): the box is the defence for
the code that check cannot name, so they are judged directly, as a patch the check missed.
"""

from __future__ import annotations

import contextlib
import time

import docker
import docker.errors
import pytest

from fixtures.catalog import get_task
from services.green.kinds.arvo.fix.constructs import refused_constructs
from services.green.kinds.arvo.fix.judge import FixScore
from tests.integration.conftest import leftover_containers
from tests.integration.direct_judge import judge_patches
from tests.integration.helpers import submit_task, wait_terminal
from tests.support.judged_code import (
    HOLD_AND_KILL_SCANS,
    REPLACE_INPUTS,
    STOP_EVERY_NEW_PROCESS,
    attack_patch,
)
from tests.support.scripted_purple import Script, apply_patch_commands

pytestmark = pytest.mark.docker


def _inspect_every_judging_box(docker_client, since: int) -> None:
    """Every judging container created since ``since`` answers ``docker inspect`` at once."""
    events = docker_client.events(
        since=since, until=int(time.time()) + 1, decode=True, filters={"event": "create"}
    )
    seen = [
        e["id"]
        for e in events
        if e.get("Actor", {}).get("Attributes", {}).get("arena.purpose") == "judge"
    ]
    assert seen, "no judging container was created"
    prompt = docker.from_env(timeout=10).api  # an inspect that hangs fails the test
    for container in seen:
        with contextlib.suppress(docker.errors.NotFound):  # removed: the engine says so at once
            prompt.inspect_container(container)


def _judged(start_green, scripted_purple, docker_client, patch: str, **settings) -> dict:
    """The fix task of 900007 with ``patch`` through green, then an innocent task on the same
    green and engine; the first task's record."""
    purple_url, _ = scripted_purple(
        Script(commands=apply_patch_commands(patch), submissions=[None])
    )
    green = start_green(purple_url=purple_url, fix_floor=False, judge_fuzz_runs=300, **settings)
    since = int(time.time()) - 1
    task = submit_task(green.url, {"task": "arvo-fix:900007"})
    done = wait_terminal(green.url, task["id"], timeout=400)
    _inspect_every_judging_box(docker_client, since)

    harmless = attack_patch("static void arena_attack(void) {}\n")
    innocent, _ = scripted_purple(
        Script(commands=apply_patch_commands(harmless), submissions=[None])
    )
    after = submit_task(green.url, {"task": "arvo-fix:900007", "purple_url": innocent})
    next_one = wait_terminal(green.url, after["id"], timeout=300)
    assert next_one["status"] == "completed", next_one
    assert next_one["scores"]["resolved"] == 1.0, next_one["scores"]["explanation"]
    assert leftover_containers(docker_client, green.owner) == []
    return done


def _runs(done: dict) -> list[dict]:
    return done["scores"]["runs"]


def test_attack_2_the_judged_build_replacing_the_judges_inputs_is_its_own_failure(
    start_green, scripted_purple, docker_client
):
    """The first input it runs on replaces ``/tmp/arena-judge/inputs`` (and any ``/.arena*``
    folder) with a file and locks its own output folder. Before: green's next copy-in failed in
    the engine and the task ended ``failed/sandbox/infra`` (put in ``__asan_on_error``, only
    when the fix was wrong). Now green's folder is root's (the rename is refused) and the
    locked output folder fails the judged build's own runs: completed, not resolved."""
    done = _judged(start_green, scripted_purple, docker_client, attack_patch(REPLACE_INPUTS))
    assert done["status"] == "completed", (done["status"], done["failure_kind"], done["error"])
    assert done["failure_kind"] is None
    assert done["scores"]["resolved"] == 0.0, done["scores"]["explanation"]


def _judged_directly(green_settings, docker_client, attack: str, **settings) -> FixScore:
    """The fix of 900007 with ``attack`` judged as if the submit check had missed it (it does
    not: the check names a construct of it), then the developers' fix on the same engine."""
    patch = attack_patch(attack)
    assert refused_constructs(patch, (get_task(900007).path / "fix.patch").read_text()), (
        "the submit check lets it through"
    )
    settings = green_settings.model_copy(
        update={"judge_fuzz_runs": 300, "fix_floor": False, **settings}
    )
    since = int(time.time()) - 1
    scores = judge_patches(
        settings,
        "900007",
        {"attack": patch, "after": attack_patch("static void arena_attack(void) {}\n")},
        in_turn=True,
    )
    _inspect_every_judging_box(docker_client, since)
    assert scores["after"].resolved == 1.0, scores["after"].explanation
    assert leftover_containers(docker_client, settings.instance_name) == []
    return scores["attack"]


def test_attack_3_deleted_but_open_files_past_the_cap_stop_the_box_though_scans_are_killed(
    green_settings, docker_client
):
    """768 MiB held deleted-but-open under a 128 MiB cap while green's scans (``find``) are
    killed every 2 ms. The scans are root's, out of its reach: the box is stopped for its disk,
    the runs say so, and the fix is not resolved (a verdict, not an engine error)."""
    score = _judged_directly(
        green_settings, docker_client, HOLD_AND_KILL_SCANS, container_disk_bytes=128 * 2**20
    )
    stopped = [r for r in score.runs if "the judging container stopped (disk_limit)" in r.output]
    assert stopped, [r.output[:200] for r in score.runs]
    assert score.resolved == 0.0, score.explanation


def test_attack_4_a_build_that_stops_every_new_process_is_its_own_hang(
    green_settings, docker_client
):
    """The first input it runs on SIGSTOPs every process that starts from then on, and hangs.
    Green's kill, its execs and ``runc init`` are root's: the run is stopped at its bound (the
    agent's hang, a verdict), the container is removed, and the next judging resolves."""
    score = _judged_directly(
        green_settings, docker_client, STOP_EVERY_NEW_PROCESS, judge_run_timeout_s=8
    )
    assert any(r.timed_out for r in score.runs), [r.output[:200] for r in score.runs]
    assert score.resolved == 0.0, score.explanation
