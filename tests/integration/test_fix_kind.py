"""The fix kind (``arvo-fix``): patches judged in fresh containers of the task image.

On every bundled fixture (the kind's plan and judge, real containers): the ground-truth patch is
resolved; a patch that does not compile has ``builds`` 0 and the compiler's message in its
explanation; a patch that deletes the body of the crashing function builds and stops the crash
but not ``behaviour_kept`` (the corpus inputs behave otherwise than on the fixed build). Through
green with a scripted purple: an edit of the fuzz harness and an empty patch are refused, a
patch whose build loops is stopped at its bound as the patch's failure, a tree whose ``.git`` the
agent removed is judged on its edit (green diffs the tree itself), and an engine cut while a
patch is judged ends the task as infra.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from pathlib import Path

import httpx
import pytest

from fixtures.catalog import FixtureTask, get_task, load_bare_tasks, load_tasks
from services.green.config import GreenSettings
from services.green.kinds.arvo.fix.judge import FixPatch, FixScore
from services.green.kinds.arvo.fix.kind import ArvoFixKind
from services.sandbox.docker import DockerSandboxProvider
from tests.integration.conftest import leftover_containers
from tests.integration.helpers import OPERATOR_TOKEN, submit_task, wait_status, wait_terminal
from tests.support.docker_proxy import DockerProxy
from tests.support.fix_patches import (
    broken_patch,
    diff,
    gut_patch,
    harness_file,
    harness_patch,
)
from tests.support.scripted_purple import Script, apply_patch_commands

pytestmark = pytest.mark.docker

LEAKS_WITHOUT_ITS_BODY = {900003}
"""add_hardlink owns the name it is given: without its body the name leaks, and LeakSanitizer
reports it (the PoC still "crashes")."""


def looping_patch(task: FixtureTask) -> str:
    """A patch whose build does not end: 2**40 empty declarations out of a macro (the compiler
    grows by about 100 MB a second on it: with 4 GB it runs past any bound below half a
    minute here, and with less it is killed for its memory: both the patch's failure)."""
    lines = ["#define A0 ;\n", *(f"#define A{i} A{i - 1} A{i - 1}\n" for i in range(1, 41))]
    source = (task.src_dir / task.crash_file).read_text().splitlines(keepends=True)
    return diff(task.crash_file, source, [*lines, "A40\n", *source])


@pytest.fixture
def judge_kind(green_settings: GreenSettings):
    def make(**overrides) -> tuple[ArvoFixKind, DockerSandboxProvider]:
        settings = green_settings.model_copy(
            update={"judge_fuzz_runs": 300, "judge_run_timeout_s": 20, **overrides}
        )
        provider = DockerSandboxProvider(label_prefix="arena", owner=settings.instance_name)
        return ArvoFixKind.from_settings(settings, provider), provider

    return make


@pytest.mark.parametrize("task", load_tasks() + load_bare_tasks(), ids=lambda t: str(t.id))
def test_every_fixture_judges_its_fix_a_gutted_function_and_a_broken_build(
    task: FixtureTask, judge_kind, docker_client, green_settings, fixture_assets
):
    """One test per fixture (its three judgements at once), so that each has pytest's own
    bound rather than all fifteen sharing one."""
    kind, provider = judge_kind(fix_floor=False)
    patches = {
        "fix": (fixture_assets / str(task.id) / "patch.diff").read_text(),
        "gutted": gut_patch(task),
        "broken": broken_patch(task),
    }

    async def judge(which: str, patch: str) -> FixScore:
        plan = await asyncio.to_thread(kind.prepare, str(task.id))
        plan.task_id = f"fix-test-{task.id}-{which}"
        return await plan.score(FixPatch(patch=patch, files=[]))

    async def every() -> list[FixScore]:
        try:
            return await asyncio.gather(*(judge(w, p) for w, p in patches.items()))
        finally:
            await provider.aclose()

    for which, score in zip(patches, asyncio.run(every()), strict=True):
        m, why = score.metrics(), score.explanation
        print(task.id, which, m, why[:2])
        if which == "fix":
            assert m == dict.fromkeys(m, 1.0), (task.id, why)
        elif which == "gutted":
            assert m["builds"] == 1 and m["behaviour_kept"] == 0 and m["resolved"] == 0, why
            if m["crash_fixed"] == 0 and task.id not in LEAKS_WITHOUT_ITS_BODY:
                # the gutted function was on the canary's path too: it no longer reports
                assert any(line.startswith("the canary") for line in why), why
            else:
                assert m["crash_fixed"] == float(task.id not in LEAKS_WITHOUT_ITS_BODY), why
            assert any(line.startswith("corpus input") for line in why), why
        else:
            assert m["applied"] == 1 and m["builds"] == 0 and m["resolved"] == 0, why
            assert "error: expected expression" in why[1], why
            assert "error: expected expression" in (score.build_log or "")
    assert leftover_containers(docker_client, green_settings.instance_name) == []


def test_a_build_that_never_ends_is_stopped_at_its_bound(judge_kind, docker_client):
    kind, provider = judge_kind(judge_build_timeout_s=8, container_memory="4g")
    task = get_task(900001)

    async def judge() -> FixScore:
        plan = await asyncio.to_thread(kind.prepare, "900001")
        plan.task_id = "fix-test-loop"
        try:
            return await plan.score(FixPatch(patch=looping_patch(task), files=[]))
        finally:
            await provider.aclose()

    score = asyncio.run(judge())
    assert score.applied == 1 and score.builds == 0 and score.resolved == 0
    assert "did not finish within 8 s" in score.explanation[1], score.explanation


def test_a_fix_task_through_green_is_resolved_refused_or_empty(
    start_green, scripted_purple, fixture_assets, docker_client
):
    """900002 has no -fix image: its fixed build is the fallback (patch.diff built once)."""
    task = get_task(900002)
    fix = (fixture_assets / "900002" / "patch.diff").read_text()
    scripts = [
        Script(commands=apply_patch_commands(fix), submissions=[None]),
        Script(commands=apply_patch_commands(harness_patch(task)), submissions=[None]),
        Script(commands=["git status --short"], submissions=[None]),
        Script(commands=["echo '/* edited */' >> src/rle.c && rm -rf .git"], submissions=[None]),
    ]
    purple_url, observed = scripted_purple(
        Script(by_key={task.project: scripts}, key_command="basename $PWD")
    )
    green = start_green(purple_url=purple_url, judge_fuzz_runs=300)
    ids = []
    for n in range(1, len(scripts) + 1):  # one at a time: the n-th task runs the n-th script
        ids.append(submit_task(green.url, {"task": "arvo-fix:900002"})["id"])
        deadline = time.monotonic() + 120
        while observed.keys[task.project] < n:
            assert time.monotonic() < deadline, "purple never got the task"
            time.sleep(0.1)
    done = [wait_terminal(green.url, i, timeout=300) for i in ids]
    resolved, harness, empty, no_git = (wait_terminal(green.url, i) for i in ids)

    assert resolved["status"] == "completed", resolved["error"]
    assert resolved["scores"]["resolved"] == 1.0, resolved["scores"]["explanation"]
    assert resolved["submission"]["files"] == ["src/rle.c"]
    floors = resolved["scores"]["floors"]
    assert floors["empty"]["resolved"] == 0 and "crash_frame" in floors
    runs = {(r["build"], r["input"]) for r in resolved["scores"]["runs"]}
    assert ("patched", "poc") in runs and ("fixed", "rle-exact.tga") in runs

    refusals = [r.errors for r in observed.submit_replies if not r.accepted]
    assert any(harness_file(task) in e and "the fuzz harness" in e for e in refusals[0])
    assert harness["status"] == "failed" and harness["failure_kind"] == "agent"
    assert "the fuzz harness" in harness["error"]
    assert harness["scores"]["resolved"] == 0 and harness["scores"]["submitted"] is False
    assert "has no changes" in refusals[1][0]
    assert empty["status"] == "failed" and empty["failure_kind"] == "agent"
    # the agent removed the tree's git baseline: green never reads it, the edit is judged
    assert no_git["status"] == "completed", no_git["error"]
    assert no_git["scores"]["resolved"] == 0 and no_git["submission"]["files"] == ["src/rle.c"]
    assert all(d["ref"] == "arvo-fix:900002" for d in done)
    assert "# Vulnerability fixing task" in observed.descriptions[0]

    with httpx.Client(base_url=green.url, timeout=30) as ui:  # the patch beside each run
        assert ui.post("/ui/login", data={"token": OPERATOR_TOKEN}).status_code == 303
        page = ui.get(f"/ui/tasks/{resolved['id']}").text
    assert "Submitted patch" in page and "diff --git a/src/rle.c b/src/rle.c" in page
    assert 'id="runs"' in page and "<td>patched</td>" in page and "<td>fixed</td>" in page
    assert leftover_containers(docker_client, green.owner) == []


def test_an_engine_cut_while_a_patch_is_judged_is_infra(
    start_green, scripted_purple, docker_client, monkeypatch
):
    """The build would loop (the patch's failure at its bound); the engine goes away while it
    runs: green cannot show the agent caused that, so the task ends as infra."""
    proxy = DockerProxy(Path(f"/tmp/arena-proxy-{secrets.token_hex(4)}.sock")).start()
    try:
        monkeypatch.setenv("DOCKER_HOST", proxy.url)
        task = get_task(900001)
        purple_url, _ = scripted_purple(
            Script(commands=apply_patch_commands(looping_patch(task)), submissions=[None])
        )
        green = start_green(purple_url=purple_url, cleanup_retry_s=1.0, container_memory="4g")
        submitted = submit_task(green.url, {"task": "arvo-fix:900001"})
        wait_status(green.url, submitted["id"], "evaluating", timeout=120)
        time.sleep(3)  # the judge's container is building the patch
        proxy.stop()
        done = wait_terminal(green.url, submitted["id"], timeout=120)
        proxy.start()
        assert done["status"] == "failed" and done["failure_kind"] == "infra", (
            done["end_reason"],
            done["error"],
        )
        back = time.monotonic()
        while leftover_containers(docker_client, green.owner) and time.monotonic() - back < 30:
            time.sleep(0.5)
        assert leftover_containers(docker_client, green.owner) == []
    finally:
        proxy.stop()
