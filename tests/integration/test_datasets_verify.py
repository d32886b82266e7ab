"""``arena tasks verify`` against a real green: every bundled fixture is verified, each
deliberately broken one comes back with its reason; results are stored per task and image
digest and drive ``arena run --verified-only``."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from fixtures.catalog import load_broken_tasks, load_tasks
from services.arena.app import app as cli
from services.arena.tasks_client import narrow_run_ids
from tests.integration.conftest import leftover_containers
from tests.integration.helpers import OPERATOR, OPERATOR_TOKEN, submit_task, wait_terminal
from tests.support import web

pytestmark = pytest.mark.docker

GOOD = [str(t.id) for t in load_tasks()]
BROKEN = {str(t.id): t.expect_broken for t in load_broken_tasks()}


def _verify_cli(green_url: str, *refs: str):
    args = ["tasks", "verify", *refs, "--green", green_url, "--api-token", OPERATOR_TOKEN]
    return CliRunner().invoke(cli, args, catch_exceptions=False, terminal_width=250)


def test_verify_every_fixture_and_catch_the_broken_ones(start_green, docker_client):
    green = start_green()
    result = _verify_cli(green.url, *GOOD, *BROKEN)
    print(result.output)
    assert result.exit_code == 1, result.output  # the broken ones are not verified
    n = len(GOOD) + len(BROKEN)
    not_ok = ", ".join(f"arvo:{b}" for b in BROKEN)  # the client names tasks by reference
    assert f"{len(GOOD)}/{n} verified; not: {not_ok}" in re.sub(r"\s+", " ", result.output)

    rows = web.get(
        f"{green.url}/datasets/verifications",
        params={"task": [*GOOD, *BROKEN, "123"]},
        headers=OPERATOR,
        timeout=10,
    ).json()
    by_ref = {r["ref"]: r for r in rows}
    assert set(by_ref) == {*GOOD, *BROKEN}  # 123 was never verified
    for ref in GOOD:
        row = by_ref[ref]
        assert row["verified"] and row["reason"] is None, row
        assert [s["name"] for s in row["steps"]] == ["ground_truth", "reproduce", "fix"]
        # the image the checks ran on (the engine is shared: a tag may move on since)
        assert re.fullmatch(r"sha256:[0-9a-f]{64}", row["image_digest"]), row
    fix_broken = by_ref["900901"]
    assert not fix_broken["verified"]
    assert fix_broken["reason"].startswith("fix: the PoC still crashes after patch.diff")
    crash_broken = by_ref["900902"]
    assert not crash_broken["verified"]
    assert crash_broken["reason"] == (
        "reproduce: top in-project frame is tga_rle_decode (/src/tgadec/src/rle.c), "
        "error.txt says xml_decode_entity (/src/xmlmini/src/entity.c)"
    )
    assert leftover_containers(docker_client, green.owner) == []  # one container per step, gone

    kept = narrow_run_ids(green.url, OPERATOR_TOKEN, [*BROKEN, *GOOD[:2]], None, 0, True)
    assert kept == GOOD[:2]

    # Tasks carry what verification found; an assessment can keep the verified ones only.
    ok, broken = (
        submit_task(green.url, {"task": "900001"}),
        submit_task(green.url, {"task": "900901"}),
    )
    assert ok["verified"] is True and broken["verified"] is False
    assert (
        web.get(f"{green.url}/tasks/{broken['id']}", headers=OPERATOR).json()["verified"] is False
    )
    body = {"task_ids": ["900001", "900901", "900003"], "verified_only": True}
    started = web.post(f"{green.url}/assessments", json=body, headers=OPERATOR, timeout=30)
    assert started.status_code == 202, started.text
    assert len(started.json()["task_ids"]) == 2 and started.json()["left_out"] == ["arvo:900901"]
    none_ok = {"task_ids": ["900902"], "verified_only": True}
    refused = web.post(f"{green.url}/assessments", json=none_ok, headers=OPERATOR, timeout=30)
    assert refused.status_code == 422 and "none of these tasks is verified" in refused.text
    for task in (ok, broken):
        wait_terminal(green.url, task["id"])


def test_dataset_routes_need_the_operator_and_check_ids(start_green):
    green = start_green()
    assert web.post(f"{green.url}/datasets/verify", json={"task": "900001"}).status_code == 401
    assert web.get(f"{green.url}/datasets/ids").status_code == 401
    bad = web.post(
        f"{green.url}/datasets/verify", json={"task": "../etc"}, headers=OPERATOR, timeout=10
    )
    assert bad.status_code == 422
    missing = web.post(
        f"{green.url}/datasets/verify", json={"task": "123"}, headers=OPERATOR, timeout=30
    ).json()
    assert not missing["verified"] and missing["reason"].startswith("assets: ")
    ids = web.get(f"{green.url}/datasets/ids", headers=OPERATOR, timeout=10).json()["ids"]
    assert set(GOOD) | set(BROKEN) <= set(ids)


def test_verify_checks_what_the_reproduce_and_fix_kinds_judge_with(start_green, docker_client):
    """arena tasks verify arvo-poc:/arvo-fix: ARVO's checks, then the PoC asset on the
    vulnerable build, the fixed build on it (a -fix image for 900001, the fallback for 900002)
    and the corpus on both; 900901's fix does not stop the crash: its fixed build says so."""
    green = start_green()
    result = _verify_cli(green.url, "arvo-poc:900001-l2", "arvo-fix:900002", "arvo-fix:900901")
    print(result.output)
    assert result.exit_code == 1, result.output
    rows = {
        (r["kind"], r["ref"]): r
        for kind, ref in (("arvo-poc", "900001-l2"), ("arvo-fix", "900002"), ("arvo-fix", "900901"))
        for r in web.get(
            f"{green.url}/datasets/verifications",
            params={"task": f"{kind}:{ref}"},
            headers=OPERATOR,
            timeout=10,
        ).json()
    }
    steps = ["ground_truth", "reproduce", "fix", "poc", "fixed_build", "corpus"]
    for key in (("arvo-poc", "900001-l2"), ("arvo-fix", "900002")):
        row = rows[key]
        assert row["verified"] and [s["name"] for s in row["steps"]] == steps, row
    details = {s["name"]: s["detail"] for s in rows[("arvo-fix", "900002")]["steps"]}
    assert "as error.txt says" in details["poc"] and "patch.diff applied" in details["fixed_build"]
    assert details["corpus"] == "4 inputs run clean on both builds"
    poc_details = {s["name"]: s["detail"] for s in rows[("arvo-poc", "900001-l2")]["steps"]}
    assert "the image arena" in poc_details["fixed_build"] and "-fix" in poc_details["fixed_build"]
    broken = rows[("arvo-fix", "900901")]
    assert not broken["verified"] and "fixed_build: the fixed build" in broken["reason"]
    assert leftover_containers(docker_client, green.owner) == []


def test_on_an_open_plane_dataset_work_still_needs_the_operator_token(start_green):
    """Issue 52: with GREEN_OPEN_OPERATOR_PLANE on, anyone may create tasks, but verifying a
    task (builds), prefetching one (downloads, an image pulled) and applying the image budget
    (images removed) are work no task asked for: an anonymous caller gets 401 and a sentence,
    and nothing is done; the operator's token does them."""
    green = start_green(open_operator_plane=True)
    anonymous = {
        "/datasets/verify": {"task": "124"},
        "/datasets/prefetch": {"task": "900001", "dry_run": True},
        "/datasets/images/enforce": None,
    }
    for path, body in anonymous.items():
        refused = web.post(f"{green.url}{path}", json=body, timeout=30)
        assert refused.status_code == 401, (path, refused.text)
        assert "only the operator may ask for" in refused.json()["detail"], refused.text
        assert refused.headers["www-authenticate"] == "Bearer"
    assert web.get(f"{green.url}/datasets/ids", timeout=10).status_code == 200  # a read: open
    seen = web.get(f"{green.url}/datasets/verifications", params={"task": "124"}, timeout=10)
    assert seen.status_code == 200 and seen.json() == []  # the refused verification never ran

    verified = web.post(
        f"{green.url}/datasets/verify", json={"task": "124"}, headers=OPERATOR, timeout=30
    )
    assert verified.status_code == 200 and verified.json()["reason"].startswith("assets: ")
    seen = web.get(f"{green.url}/datasets/verifications", params={"task": "124"}, timeout=10)
    assert [row["ref"] for row in seen.json()] == ["124"]
    dry = web.post(
        f"{green.url}/datasets/prefetch",
        json={"task": "900001", "dry_run": True},
        headers=OPERATOR,
        timeout=60,
    )
    assert dry.status_code == 200, dry.text
    enforced = web.post(f"{green.url}/datasets/images/enforce", headers=OPERATOR, timeout=60)
    assert enforced.status_code == 200 and "removed" in enforced.json(), enforced.text
