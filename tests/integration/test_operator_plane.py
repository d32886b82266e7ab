"""The operator plane is the operator's: credentials, ownership, disclosure, bounds, bad input.

Every test here attacks a real green (real containers, real HTTP on 127.0.0.1) the way an agent
under test, or any stranger on the network, could.
"""

from __future__ import annotations

import json
import stat
import time

import httpx
import pytest

from services.green.app import create_app as create_green
from tests.integration.helpers import (
    OPERATOR,
    rpc,
    start_a2a_task,
    submit_task,
    text_message,
    wait_status,
    wait_terminal,
)
from tests.support import web
from tests.support.fake_llm import FakeReply
from tests.support.scripted_purple import Script
from tests.support.servers import ThreadedServer

pytestmark = pytest.mark.docker

VALID = {
    "locations": [
        {"file": "src/entity.c", "function": "xml_decode_entity", "line_start": 1, "line_end": 2}
    ]
}
INTERNAL_ERROR = -32603


def _error(resp: httpx.Response) -> dict:
    body = resp.json()
    assert "error" in body, body
    assert body["error"]["code"] != INTERNAL_ERROR, body
    return body["error"]


def test_anonymous_callers_are_refused_on_every_operator_route(start_green, scripted_purple):
    purple_url, _ = scripted_purple(Script(commands=[], submissions=[VALID]))
    green = start_green(purple_url=purple_url)
    url = green.url
    rest = [
        web.post(f"{url}/tasks", json={"task": "arvo:900001"}),
        web.get(f"{url}/tasks"),
        web.get(f"{url}/tasks/x"),
        web.get(f"{url}/tasks/x/commands"),
        web.post(f"{url}/tasks/x/cancel"),
        web.post(f"{url}/assessments", json={"task_ids": ["arvo:900001"]}),
        web.get(f"{url}/assessments/x"),
    ]
    wrong = {"Authorization": "Bearer not-the-token"}
    rest.append(web.get(f"{url}/tasks", headers=wrong))
    rest.append(web.get(f"{url}/tasks", headers={"Authorization": "Bearer tök\u00e9n".encode()}))
    for r in rest:
        assert r.status_code == 401, (r.request.url, r.text)
        assert r.headers["www-authenticate"] == "Bearer"
    assert web.get(f"{url}/healthz").status_code == 200
    assert web.get(f"{url}/.well-known/agent-card.json").status_code == 200

    a2a = [
        rpc(url, "message/send", {"message": text_message("Task ID: arvo:900001")}),
        rpc(url, "message/stream", {"message": text_message("Task ID: arvo:900001")}),
        rpc(
            url,
            "SendMessage",
            {"message": {"role": "ROLE_USER", "messageId": "m", "parts": [{"text": "arvo:1"}]}},
            version="1.0",
        ),
        rpc(url, "ListTasks", {}, version="1.0"),
        rpc(url, "GetTask", {"id": "x"}, version="1.0"),
        rpc(url, "CancelTask", {"id": "x"}, version="1.0"),
        rpc(url, "tasks/get", {"id": "x"}),
        rpc(url, "tasks/cancel", {"id": "x"}),
        rpc(url, "message/send", {"message": text_message('{"participants": {"a": "http://x"}}')}),
    ]
    for r in a2a:
        assert r.status_code == 401, r.text
        assert "credential" in r.text
    listed = web.get(f"{url}/tasks", headers=OPERATOR).json()
    assert listed["total"] == 0, "a refused request must create nothing"


def test_health_shows_the_engine_pool_and_image_budget_only_to_the_operator(start_green):
    """/healthz answers anyone (purple, load balancers); the engines' addresses, load and errors,
    and the image budget, are infrastructure the agent under test has no business seeing."""
    url = start_green(image_budget_gb=100).url
    anonymous = web.get(f"{url}/healthz", timeout=10).json()
    assert anonymous["status"] == "ok" and anonymous["instance"]
    assert "engines" not in anonymous and "images" not in anonymous
    wrong = web.get(f"{url}/healthz", headers={"authorization": "Bearer nope"}).json()
    assert "engines" not in wrong
    operator = web.get(f"{url}/healthz", headers=OPERATOR, timeout=10).json()
    assert [e["up"] for e in operator["engines"]] == [True] and "images" in operator


def test_card_declares_the_operator_bearer_scheme(start_green):
    green = start_green()
    card = web.get(f"{green.url}/.well-known/agent-card.json", headers={"A2A-Version": "1.0"})
    card = card.json()
    schemes = card["securitySchemes"]
    [(name, scheme)] = schemes.items()
    assert scheme["httpAuthSecurityScheme"]["scheme"] == "bearer"
    plain = web.get(f"{green.url}/.well-known/agent-card.json").json()  # no header: 0.3's form
    assert plain["securitySchemes"][name] | {"description": ""} == {
        "type": "http",
        "scheme": "bearer",
        "description": "",
    }
    intake = next(s for s in card["skills"] if s["id"] == "rca_assessment")
    assert intake["securityRequirements"] == [{"schemes": {name: {}}}]


def test_first_start_generates_a_private_token_and_keeps_it(green_settings, tmp_path, caplog):
    token_file = tmp_path / "keys" / "operator-token"
    settings = green_settings.model_copy(update={"api_token": None, "api_token_file": token_file})
    srv = ThreadedServer(create_green(settings), port=settings.port).start()
    try:
        token = token_file.read_text().strip()
        assert len(token) >= 32
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        ok = web.get(f"{srv.url}/tasks", headers={"Authorization": f"Bearer {token}"})
        assert ok.status_code == 200
        assert web.get(f"{srv.url}/tasks").status_code == 401
    finally:
        srv.stop()
    log = (settings.log_dir / "log_test" / "agents.log").read_text()
    assert "auth.operator_token_generated" in log and str(token_file) in log
    assert token not in log, "the token itself is never logged"
    again = ThreadedServer(create_green(settings), port=settings.port).start()
    try:  # a restart keeps the same token
        r = web.get(f"{again.url}/tasks", headers={"Authorization": f"Bearer {token}"})
        assert r.status_code == 200
    finally:
        again.stop()


def test_a2a_tasks_belong_to_the_credential_that_created_them(start_green, scripted_purple):
    purple_url, _ = scripted_purple(Script(commands=["true"] * 3, pause_s=1.0, submissions=[VALID]))
    green = start_green(purple_url=purple_url, open_operator_plane=True)
    url = green.url
    mine = start_a2a_task(url, "Task ID: arvo:900001")
    theirs = start_a2a_task(url, "Task ID: arvo:900002", headers=None)  # 900001: unfinished
    # each sees only its own
    for headers, own, other in ((OPERATOR, mine, theirs), (None, theirs, mine)):
        listed = rpc(url, "ListTasks", {}, headers=headers, version="1.0").json()["result"]
        assert [t["id"] for t in listed.get("tasks", [])] == [own["id"]]
        assert "error" in rpc(url, "tasks/get", {"id": other["id"]}, headers=headers).json()
    # the anonymous caller can neither cancel nor write into the operator's task
    _error(rpc(url, "tasks/cancel", {"id": mine["id"]}))
    _error(
        rpc(
            url,
            "message/send",
            {"message": text_message("submit", taskId=mine["id"], contextId=mine["contextId"])},
        )
    )
    deadline = time.monotonic() + 120
    while True:
        got = rpc(url, "tasks/get", {"id": mine["id"]}, headers=OPERATOR).json()["result"]
        if got["status"]["state"] in ("completed", "failed", "canceled"):
            break
        assert time.monotonic() < deadline, got["status"]
        time.sleep(0.5)
    assert got["status"]["state"] == "completed"
    assert len([a for a in got["artifacts"] if a["name"] == "Result"]) == 1


FLB = ("file_recall", "hunk_recall", "line_recall", "line_precision", "line_f1", "flb_iou")


def test_ground_truth_is_for_the_operator_and_only_when_the_bug_is_done(
    start_green, scripted_purple
):
    fast, _ = scripted_purple(Script(commands=["true"], submissions=[VALID]))
    slow, _ = scripted_purple(Script(commands=["sleep 1"] * 8, submissions=[VALID]))
    green = start_green(purple_url=fast, open_operator_plane=True)
    # an anonymous caller (plane opened) gets numbers, never the answer
    anon = web.post(f"{green.url}/tasks", json={"task": "arvo:900001"}).json()
    done = wait_terminal(green.url, anon["id"])
    anon_view = web.get(f"{green.url}/tasks/{anon['id']}").json()
    assert anon_view["ground_truth"] is None
    # nor its fingerprint: a hash of the answer lets a guess be checked offline
    assert "ground_truth_sha256" not in (anon_view["provenance"] or {})
    assert set(anon_view["scores"]) <= {
        *("file@1", "file@5", "func@1", "func@5", "line@1", "line@5", "iou"),
        *(f"{m}{v}" for m in FLB for v in ("", "_path")),  # FLBench's metrics
        *("scorable", "submitted", "n_locations", "resolved"),
        *("bug_class", "project"),  # read from error.txt, which the agent has too
    }
    assert anon_view["disclosed"] == "public" and "scores.floors" in anon_view["withheld"]
    assert anon_view["scores"]["file@1"] == done["scores"]["file@1"] == 1.0
    assert "entity.c" not in str(anon_view["scores"])  # no region, file or explanation
    assert done["ground_truth"] and done["scores"]["regions"]  # the operator's view

    # while another task of the same bug runs, even the operator gets no ground truth
    running = submit_task(green.url, {"task": "arvo:900001", "purple_url": slow})
    wait_status(green.url, running["id"], "running")
    during = web.get(f"{green.url}/tasks/{anon['id']}", headers=OPERATOR).json()
    assert during["ground_truth"] is None and "regions" not in during["scores"]
    assert "ground_truth_sha256" not in (during["provenance"] or {})
    # the floors say whether the crash frame is the fix: withheld too, and said so
    assert "floors" not in during["scores"] and during["scores"]["project"] == "xmlmini"
    assert during["disclosed"] == "pending"
    assert {"ground_truth", "scores.floors", "provenance.ground_truth_sha256"} <= set(
        during["withheld"]
    )
    listed = web.get(f"{green.url}/tasks", headers=OPERATOR).json()["items"]
    assert all(t["ground_truth"] is None for t in listed)
    a2a = rpc(green.url, "message/send", {"message": text_message("Task ID: arvo:900001")})
    assert a2a.status_code == 409 and "unfinished" in _error(a2a)["message"]  # no decoy
    wait_terminal(green.url, running["id"])
    after = web.get(f"{green.url}/tasks/{anon['id']}", headers=OPERATOR).json()
    assert after["ground_truth"] and after["scores"]["regions"]
    assert len(after["provenance"]["ground_truth_sha256"]) == 64
    assert (after["disclosed"], after["withheld"]) == ("all", []) and after["scores"]["floors"]


def test_9_no_anonymous_caller_creates_or_reads_tasks_of_a_bug_while_one_is_unfinished(
    start_green, scripted_purple
):
    """The operator plane is open (AgentBeats). An agent whose task runs makes decoy tasks of
    its own bug to score guesses on, over REST and A2A, and reads the scores, submission and
    commands of an earlier task of that bug: all refused while its task is unfinished. Another
    bug is not affected, the operator is not, and after the task the numbers are shown again."""
    fast, _ = scripted_purple(Script(commands=["true"], submissions=[VALID]))
    slow, _ = scripted_purple(Script(commands=["sleep 1"] * 30, submit=False))
    green = start_green(purple_url=fast, open_operator_plane=True)
    earlier = submit_task(green.url, {"task": "arvo:900001"})
    assert wait_terminal(green.url, earlier["id"])["scores"]["file@1"] == 1.0
    agents = submit_task(green.url, {"task": "arvo:900001", "purple_url": slow})
    wait_status(green.url, agents["id"], "running")

    decoy = web.post(f"{green.url}/tasks", json={"task": "arvo:900001"})  # anonymous
    assert decoy.status_code == 409 and "unfinished" in decoy.json()["detail"], decoy.text
    batch = web.post(f"{green.url}/assessments", json={"task_ids": ["arvo:900002", "900001"]})
    assert batch.status_code == 409, batch.text
    for text in ("Task ID: arvo:900001", json.dumps(AGENTBEATS_DECOY)):
        a2a = rpc(green.url, "message/send", {"message": text_message(text)})
        assert a2a.status_code == 409 and "unfinished" in _error(a2a)["message"], a2a.text
    seen = web.get(f"{green.url}/tasks/{earlier['id']}").json()
    assert seen["status"] == "completed" and seen["scores"] is seen["submission"] is None
    listed = web.get(f"{green.url}/tasks", params={"ref": "arvo:900001"}).json()["items"]
    assert len(listed) == 2 and all(t["scores"] is None for t in listed)
    for task_id in (earlier["id"], agents["id"]):
        r = web.get(f"{green.url}/tasks/{task_id}/commands")
        assert r.status_code == 403 and "operator's" in r.text, r.text
        page = web.get(f"{green.url}/ui/tasks/{task_id}").text
        assert 'id="submission"' not in page and 'data-seq="1"' not in page
        assert "the commands, submission and scores of its tasks are the operator" in page
    assert web.get(f"{green.url}/ui/tasks/{agents['id']}/stream").status_code == 403
    other = web.post(f"{green.url}/tasks", json={"task": "arvo:900002"})  # another bug: fine
    assert other.status_code == 202, other.text
    operator = web.get(f"{green.url}/tasks/{earlier['id']}", headers=OPERATOR).json()
    assert operator["scores"]["file@1"] == 1.0 and operator["submission"]
    assert web.get(f"{green.url}/tasks/{earlier['id']}/commands", headers=OPERATOR).json()

    for task_id in (agents["id"], other.json()["id"]):
        web.post(f"{green.url}/tasks/{task_id}/cancel", headers=OPERATOR)
        wait_terminal(green.url, task_id)
    after = web.get(f"{green.url}/tasks/{earlier['id']}").json()
    assert after["scores"]["file@1"] == 1.0 and after["ground_truth"] is None
    assert web.get(f"{green.url}/tasks/{earlier['id']}/commands").status_code == 200


AGENTBEATS_DECOY = {
    "participants": {"agent": "http://127.0.0.1:9"},
    "config": {"task_ids": ["arvo:900001"]},
}


def test_intake_is_bounded(start_green, scripted_purple):
    purple_url, _ = scripted_purple(Script(commands=["sleep 2"], submissions=[VALID]))
    green = start_green(
        purple_url=purple_url, max_queued_tasks=2, max_assessment_tasks=3, intake_per_minute=4
    )
    url = green.url
    too_many_ids = {"task_ids": ["arvo:900001", "arvo:900002", "arvo:900003", "arvo:900004"]}
    r = web.post(f"{url}/assessments", json=too_many_ids, headers=OPERATOR)
    assert r.status_code == 422 and "at most 3" in r.text
    first = web.post(f"{url}/tasks", json={"task": "arvo:900001"}, headers=OPERATOR)
    second = web.post(f"{url}/tasks", json={"task": "arvo:900002"}, headers=OPERATOR)
    assert first.status_code == second.status_code == 202
    full = web.post(f"{url}/tasks", json={"task": "arvo:900003"}, headers=OPERATOR)
    assert full.status_code == 429 and int(full.headers["retry-after"]) >= 1
    assert "GREEN_MAX_QUEUED_TASKS" in full.text
    a2a = rpc(url, "message/send", {"message": text_message("arvo:1 arvo:2")}, headers=OPERATOR)
    assert a2a.status_code == 429 and int(a2a.headers["retry-after"]) >= 1
    assert "GREEN_MAX_QUEUED_TASKS" in _error(a2a)["message"]
    over_rate = web.post(f"{url}/tasks", json={"task": "arvo:900003"}, headers=OPERATOR)
    assert over_rate.status_code == 429 and "per minute" in over_rate.text  # the 5th this minute
    assert web.get(f"{url}/tasks", headers=OPERATOR).json()["total"] == 2


def test_green_calls_no_purple_outside_the_allow_list(start_green, scripted_purple):
    purple_url, _ = scripted_purple(Script(commands=[], submissions=[VALID]))
    green = start_green(purple_url=purple_url, purple_allowlist=[])
    answers = []
    for target in ("http://127.0.0.1:9", f"{green.url}", "http://169.254.169.254"):
        r = web.post(
            f"{green.url}/tasks",
            json={"task": "arvo:900001", "purple_url": target},
            headers=OPERATOR,
        )
        assert r.status_code == 422 and "not allowed" in r.text
        answers.append(r.json()["detail"].replace(target, "<url>"))
        a2a = rpc(
            green.url,
            "message/send",
            {"message": text_message("Task ID: arvo:900001", metadata={"purple_url": target})},
            headers=OPERATOR,
        )
        assert "not allowed" in _error(a2a)["message"] or "not allowed" in a2a.text
    assert len(set(answers)) == 1, "the answer must not depend on what listens there"
    assert web.get(f"{green.url}/tasks", headers=OPERATOR).json()["total"] == 0


def test_malformed_a2a_input_is_invalid_params_never_internal_error(start_green, scripted_purple):
    purple_url, _ = scripted_purple(Script(commands=["sleep 2"] * 3, submissions=[VALID]))
    green = start_green(purple_url=purple_url)
    url = green.url
    cases = {
        "fullwidth digits": text_message("Task ID: arvo:\uff19\uff10\uff10\uff10\uff10\uff11"),
        "config not an object": text_message(
            json.dumps({"participants": {"agent": purple_url}, "config": [1]})
        ),
        "purple_url not a string": text_message("Task ID: arvo:900001", metadata={"purple_url": 5}),
        "timeout overflows": text_message(
            json.dumps(
                {
                    "participants": {"agent": purple_url},
                    "config": {"task_ids": [900001], "task_timeout_s": 1e12},
                }
            )
        ),
        "ids not a list": text_message(
            json.dumps({"participants": {"agent": purple_url}, "config": {"task_ids": {"a": 1}}})
        ),
    }
    for name, message in cases.items():
        r = rpc(url, "message/send", {"message": message}, headers=OPERATOR)
        body = r.json()
        if "error" in body:
            assert body["error"]["code"] != INTERNAL_ERROR, (name, body)
            assert body["error"]["message"], name
        else:  # a polite refusal message is fine too: what matters is no -32603
            assert body["result"]["parts"][0]["text"].startswith("Refused"), (name, body)
    # a non-ASCII token on the agent plane is a wrong token, not a crash
    task = submit_task(url, {"task": "arvo:900001"})
    wait_status(url, task["id"], "running")
    execute = text_message(
        "execute: id", contextId=task["id"], metadata={"token": "t\u00f6k\u00e9n-\u2603"}
    )
    reply = rpc(url, "message/send", {"message": execute}).json()
    assert "missing or wrong task token" in str(reply["result"]), reply
    assert web.get(f"{url}/tasks", headers=OPERATOR).json()["total"] == 1


def test_7_no_face_shows_an_earlier_attempts_answer_while_a_task_of_its_bug_runs(
    start_green, llm, llm_purple, scripted_purple
):
    """The plane is open. An earlier attempt at arvo:900001, in a run that has ended, wrote its
    answer (its loc.json, submitted with a tool call). While another task of that bug runs, an anonymous
    caller reads that attempt's trajectory over REST (as purple sent it and as ATIF) and on the dashboard (before: served
    whole, the answer in it), and the run's means on its page and in its record (before:
    the scores of that attempt). All withheld, saying why; the operator still sees them, and
    everyone does once the bug's tasks have ended."""
    submit = {"locations": VALID["locations"], "reasoning": "the entity is decoded past its end"}
    llm.push(FakeReply(tool_calls=[("submit_localization", submit)]))
    green = start_green(purple_url=llm_purple().url, open_operator_plane=True)
    url = green.url
    run = {"name": "nightly", "task_ids": ["arvo:900001"]}
    run_id = web.post(f"{url}/runs", json=run, headers=OPERATOR).json()["id"]
    earlier = submit_task(url, {"task": "arvo:900001", "run_id": run_id})
    wait_terminal(url, earlier["id"])
    assert web.post(f"{url}/runs/{run_id}/end", json={}, headers=OPERATOR).status_code == 200
    slow, _ = scripted_purple(Script(commands=["sleep 1"] * 30, submit=False))
    running = submit_task(url, {"task": "arvo:900001", "purple_url": slow})
    wait_status(url, running["id"], "running")

    faces = [
        f"/tasks/{earlier['id']}/trajectory",
        f"/tasks/{earlier['id']}/trajectory?format=atif",
        f"/ui/tasks/{earlier['id']}/trajectory",
        f"/ui/tasks/{earlier['id']}/trajectory.json",
    ]
    for face in faces:
        r = web.get(f"{url}{face}")
        assert r.status_code == 403 and "are the operator" in r.text, (face, r.text[:300])
        assert "entity.c" not in r.text
    assert "entity.c" in web.get(f"{url}{faces[0]}", headers=OPERATOR).text
    assert "entity.c" in web.get(f"{url}{faces[1]}", headers=OPERATOR).text
    page = web.get(f"{url}/ui/runs/{run_id}").text
    assert 'id="means"' not in page  # no mean made of the withheld attempt's scores
    assert 'id="means"' not in web.get(f"{url}/ui/runs").text
    record = web.get(f"{url}/assessments/{run_id}").json()["result"]
    assert record["aggregate"] is None and record["tasks"][0]["scores"] is None
    assert web.get(f"{url}/assessments/{run_id}", headers=OPERATOR).json()["result"]["aggregate"]

    web.post(f"{url}/tasks/{running['id']}/cancel", headers=OPERATOR)
    wait_terminal(url, running["id"])
    assert "entity.c" in web.get(f"{url}{faces[0]}").text
    assert "entity.c" in web.get(f"{url}{faces[1]}").text  # the same rule, as ATIF
    assert 'id="means"' in web.get(f"{url}/ui/runs/{run_id}").text
    assert web.get(f"{url}/assessments/{run_id}").json()["result"]["aggregate"]
