"""The fix kind's verdict never rests on the judged code's cooperation, and what green takes out of
the tree is green's own reading (``docs/security.md``, the fix judge's rows).

Through green, as a hostile agent writes them, on ``arvo-fix:900007`` (tinflate): a constructor
that leaves clean as root with the judge's folder present, ``__asan_default_options`` returning
``report_globals=0``, ``no_sanitize("address")`` on the crashing function, and a ``diff.external``
driver in the tree's ``.git/config`` that printed a context diff naming src/inflate.c while
``patch -p1`` edited the Makefile: each is refused at submit, by name. From outside the build
(the judge on the patch directly, as if the text check had missed it): the binary defines the
hook or the constructor, and a header that turns the sanitizer off everywhere leaves no symbol
but silences the canary. And a task of another shape (900101: no git in the image, a standalone
driver) resolves its developers' fix, through green, judged on its runs and saying so.
"""

from __future__ import annotations

import time

import pytest

from fixtures.catalog import get_task
from services.green.config import GreenSettings
from tests.integration.conftest import leftover_containers
from tests.integration.direct_judge import judge_patches
from tests.integration.helpers import submit_task, wait_terminal
from tests.support.scripted_purple import Script, apply_patch_commands, write_bytes_command
from tests.support.silencing_patches import (
    constructor_exit_patch,
    context_diff_commands,
    default_options_patch,
    no_sanitize_patch,
    silenced_header_patch,
)

pytestmark = pytest.mark.docker


def run_in_turn(green_url: str, observed, project: str, ref: str, n: int) -> list[dict]:
    """Submit ``n`` tasks of ``ref`` one at a time (the n-th runs the n-th script)."""
    ids = []
    for i in range(1, n + 1):
        ids.append(submit_task(green_url, {"task": ref})["id"])
        deadline = time.monotonic() + 120
        while observed.keys[project] < i:
            assert time.monotonic() < deadline, "purple never got the task"
            time.sleep(0.1)
    return [wait_terminal(green_url, i, timeout=600) for i in ids]


def test_silencing_patches_and_a_chosen_diff_are_refused_through_green(
    start_green, scripted_purple, docker_client
):
    task = get_task(900007)
    attacks = {
        "a constructor or destructor attribute": apply_patch_commands(constructor_exit_patch(task)),
        "a *_default_options": apply_patch_commands(default_options_patch(task)),
        "a no_sanitize attribute": apply_patch_commands(no_sanitize_patch(task)),
        "the patch changes Makefile, a build script": context_diff_commands(task),
    }
    scripts = [Script(commands=c, submissions=[None]) for c in attacks.values()]
    purple_url, observed = scripted_purple(
        Script(by_key={task.project: scripts}, key_command="basename $PWD")
    )
    green = start_green(purple_url=purple_url, judge_fuzz_runs=300)
    done = run_in_turn(green.url, observed, task.project, "arvo-fix:900007", len(scripts))

    for (named, _), record in zip(attacks.items(), done, strict=True):
        scores = record["scores"] or {}
        print(named, record["status"], record["error"], scores.get("explanation"))
    for (named, _), record in zip(attacks.items(), done, strict=True):
        scores = record["scores"] or {}
        assert scores.get("resolved", 0) == 0, (named, scores.get("explanation"))
        assert record["status"] == "failed" and record["failure_kind"] == "agent", record
        assert named in (record["error"] or ""), (named, record["error"])
    refusals = [" ".join(r.errors) for r in observed.submit_replies if not r.accepted]
    assert any("src/window.c" in r and "constructor" in r for r in refusals), refusals
    assert leftover_containers(docker_client, green.owner) == []


@pytest.fixture
def judge(green_settings: GreenSettings):
    """The kind's plan and judge on one patch (what a patch the text check missed would get)."""
    settings = green_settings.model_copy(
        update={"judge_fuzz_runs": 300, "judge_run_timeout_s": 20, "fix_floor": False}
    )
    return lambda ref, patches: judge_patches(settings, ref, patches)


def test_the_built_binary_and_the_canary_show_a_silenced_sanitizer(judge):
    task = get_task(900007)
    scores = judge(
        "900007",
        {
            "hook": default_options_patch(task),
            "constructor": constructor_exit_patch(task),
            "header": silenced_header_patch(task),
            "comment": no_sanitize_patch(task).replace(
                '+__attribute__((no_sanitize("address")))', "+/* checked */"
            ),
        },
    )
    for name, score in scores.items():
        print(name, score.metrics(), score.explanation)
        assert score.builds == 1 and score.crash_fixed == 0 and score.resolved == 0, name
    why = {name: " ".join(s.explanation) for name, s in scores.items()}
    assert "__asan_default_options (global)" in why["hook"], why["hook"]
    assert "before or after main" in why["constructor"] and "arena_quiet" in why["constructor"]
    assert "the canary" in why["header"] and "does not report" in why["header"], why["header"]
    assert "the canary" not in why["comment"]  # the PoC still crashes: nothing to check
    assert "crashed" in why["comment"]


def test_a_task_without_git_and_with_a_standalone_driver_resolves_its_fix_through_green(
    start_green, scripted_purple, fixture_assets, docker_client
):
    fix = (fixture_assets / "900101" / "patch.diff").read_bytes()
    commands = [
        "! command -v git",
        write_bytes_command("/tmp/agent.diff", fix),
        "patch -p1 < /tmp/agent.diff",
    ]
    purple_url, _ = scripted_purple(Script(commands=commands, submissions=[None]))
    green = start_green(purple_url=purple_url, judge_fuzz_runs=300)
    record = wait_terminal(green.url, submit_task(green.url, {"task": "arvo-fix:900101"})["id"])

    assert record["status"] == "completed", record["error"]
    scores = record["scores"]
    assert scores["resolved"] == 1.0, scores["explanation"]
    assert record["submission"]["files"] == ["src/record.c"]
    assert scores["fuzzed"] is False
    assert any("standalone driver" in line for line in scores["explanation"])
    assert "the canary" in scores["sanitizer_checked"]
    assert any(c.startswith("the binary") for c in scores["sanitizer_checked"])
    assert leftover_containers(docker_client, green.owner) == []
