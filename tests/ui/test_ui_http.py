"""The dashboard over real HTTP (green served by uvicorn): the credential, the live stream's
protocol, the start form's errors, and the ground truth rule."""

from __future__ import annotations

import re
import time
import uuid

import httpx
import pytest

from services.green.store.crud import TaskStore
from services.green.store.db import make_engine
from services.green.store.models import Command, Task, TaskStatus, utcnow
from tests.support import web
from tests.support.scripted_purple import Script

pytestmark = pytest.mark.docker


@pytest.fixture
def green_database_url(database_url: str) -> str:
    """This module runs on SQLite and on PostgreSQL."""
    return database_url


TOKEN = "s3cret-operator-token"
SECRET_FILE = "src/only_in_the_ground_truth.c"


def seed(
    green_settings, status: TaskStatus, commands: int = 0, ref_id: str = "900007", **fields
) -> str:
    store = TaskStore(make_engine(green_settings.database_url))
    task_id = str(uuid.uuid4())
    store.add(
        Task(
            id=task_id,
            ref_id=ref_id,
            purple_url="http://127.0.0.1:9",
            max_steps=10,
            task_timeout_s=60,
            command_timeout_s=10,
            status=status,
            owner="someone-else",  # not failed by this green's start-up
            ground_truth={"files": [{"path": SECRET_FILE, "lines": [3], "regions": []}]},
            scores={"file@1": 1.0, "explanation": [f"rank 1 {SECRET_FILE}: file ✓"]},
            finished_at=utcnow() if status.terminal else None,
            **fields,
        )
    )
    for seq in range(1, commands + 1):
        store.add_command(
            Command(task_id=task_id, seq=seq, command=f"echo {seq}", exit_code=0,
                    duration_s=0.01, output=f"out {seq}")
        )  # fmt: skip
    return task_id


def form_token(c: httpx.Client) -> str:
    """The session's CSRF token, as the dashboard's own forms carry it."""
    page = c.get("/ui").text
    return re.search(r'name="csrf" value="([^"]+)"', page).group(1)


@pytest.fixture
def green(start_green):
    return start_green(api_token=TOKEN)


def client(green, **kw) -> httpx.Client:
    return httpx.Client(base_url=green.url, timeout=30, follow_redirects=False, **kw)


@pytest.fixture
def session(green):
    """A client logged in through the login form (it holds the session cookie)."""
    with client(green) as c:
        r = c.post("/ui/login", data={"token": TOKEN, "next": "/ui/tasks"})
        assert r.status_code == 303 and r.headers["location"] == "/ui/tasks"
        yield c


def test_anonymous_pages_redirect_to_login_and_streams_get_401(green, green_settings):
    task_id = seed(green_settings, TaskStatus.completed)
    with client(green) as c:
        for path in ("/ui", "/ui/tasks?status=running", f"/ui/tasks/{task_id}", "/ui/runs/none"):
            r = c.get(path)
            assert r.status_code == 303, path
            assert r.headers["location"].startswith("/ui/login?next=/ui"), path
        assert c.get(f"/ui/tasks/{task_id}/stream").status_code == 401
        assert c.post("/ui/tasks", data={"task": "arvo:900001"}).status_code == 303
        assert c.get("/ui/login").status_code == 200
        # a cookie that no login handed out is worth nothing
        c.cookies.set("arena_ui_session", TOKEN)
        assert c.get("/ui").status_code == 303


def test_login_sets_a_strict_httponly_session_cookie_that_is_not_the_token(green):
    with client(green) as c:
        bad = c.post("/ui/login", data={"token": "wrong", "next": "/ui"})
        assert bad.status_code == 401 and "not right" in bad.text
        r = c.post("/ui/login", data={"token": TOKEN, "next": "https://evil.example/"})
        assert r.status_code == 303 and r.headers["location"] == "/ui"  # no open redirect
        cookie = r.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/ui" in cookie
        assert TOKEN not in cookie
        assert c.get("/ui").status_code == 200
        assert c.post("/ui/logout").status_code == 403  # no form token: not from our page
        assert c.post("/ui/logout", data={"csrf": form_token(c)}).status_code == 303
        assert c.get("/ui").status_code == 303  # the session is gone on the server too


def test_the_bearer_header_works_everywhere(green, green_settings):
    task_id = seed(green_settings, TaskStatus.completed, commands=2)
    with client(green, headers={"authorization": f"Bearer {TOKEN}"}) as c:
        assert c.get("/ui/tasks").status_code == 200
        assert "event: end" in c.get(f"/ui/tasks/{task_id}/stream").text
    with client(green, headers={"authorization": "Bearer nope"}) as c:
        assert c.get(f"/ui/tasks/{task_id}/stream").status_code == 401


def test_with_the_operator_plane_open_the_dashboard_is_open(start_green):
    green = start_green(open_operator_plane=True)
    with client(green) as c:
        assert c.get("/ui").status_code == 200
        assert "Log out" not in c.get("/ui/tasks").text


def test_stream_replays_commands_after_a_seq_and_resumes_from_last_event_id(
    session, green_settings
):
    task_id = seed(green_settings, TaskStatus.completed, commands=4)
    c = session
    text = c.get(f"/ui/tasks/{task_id}/stream?after=1").text
    assert [line for line in text.splitlines() if line.startswith("id: ")] == [
        "id: 2",
        "id: 3",
        "id: 4",
    ]
    assert text.index("event: status") < text.index("event: end")
    resumed = c.get(f"/ui/tasks/{task_id}/stream", headers={"last-event-id": "3"}).text
    assert "id: 4" in resumed and "id: 3" not in resumed
    assert c.get("/ui/tasks/nope/stream").status_code == 404
    assert c.get(f"/ui/tasks/{task_id}/stream?after=-1").status_code == 422
    assert c.get(f"/ui/tasks/{task_id}/stream?after=x").status_code == 422


def test_ground_truth_and_scores_only_for_ended_tasks(session, green_settings):
    running = seed(green_settings, TaskStatus.running, ref_id="900006")
    ended = seed(green_settings, TaskStatus.completed)
    c = session
    page = c.get(f"/ui/tasks/{running}").text
    assert SECRET_FILE not in page and "appear here once the task has ended" in page
    assert '<code id="instance">someone-else</code>' in page  # the replica that runs it
    rows = c.get("/ui/tasks", params={"fragment": "rows"}).text
    assert '<code class="small" data-instance>someone-else</code>' in rows  # in the list too
    assert SECRET_FILE in c.get(f"/ui/tasks/{ended}").text
    # while a task of the same bug is unfinished, not even the operator sees its ground truth
    seed(green_settings, TaskStatus.running, ref_id="900007")
    assert SECRET_FILE not in c.get(f"/ui/tasks/{ended}").text


def test_a_running_task_of_one_kind_hides_the_answer_of_another_kind_on_the_same_bug(
    session, green, green_settings
):
    """The three ARVO kinds ask questions of the same bugs: an ended fix task's ground truth (the
    fix) would answer a running locate task of its bug, so what is disclosed goes by the bug."""
    store = TaskStore(make_engine(green_settings.database_url))
    auth = {"authorization": f"Bearer {TOKEN}"}
    made = session.post("/tasks", json={"task": "arvo-poc:900006-l2"}, headers=auth)
    assert made.status_code == 202, made.text
    assert store.get(made.json()["id"]).bug == "arvo:900006"  # intake names the bug
    fix = seed(green_settings, TaskStatus.completed, ref_id="900002", kind="arvo-fix",
               bug="arvo:900002")  # fmt: skip
    assert SECRET_FILE in session.get(f"/ui/tasks/{fix}").text
    assert session.get(f"/tasks/{fix}", headers=auth).json()["ground_truth"]
    seed(green_settings, TaskStatus.running, ref_id="900002", bug="arvo:900002")  # locate
    assert SECRET_FILE not in session.get(f"/ui/tasks/{fix}").text
    view = session.get(f"/tasks/{fix}", headers=auth).json()
    assert view["ground_truth"] is None and view["disclosed"] == "pending"


def test_bad_input_gets_clear_4xx_answers(session):
    c = session
    csrf = form_token(c)
    r = c.get("/ui/tasks?status=bogus")
    assert r.status_code == 422 and "unknown status &#39;bogus&#39;" in r.text
    assert r.headers["content-type"].startswith("text/html")  # a page, for a page
    assert c.get("/tasks/nope", headers={"authorization": f"Bearer {TOKEN}"}).json()["detail"]
    assert c.get("/ui/tasks?page=0").status_code == 422
    assert c.get("/ui/tasks/nope").status_code == 404
    assert c.get("/ui/runs/nope").status_code == 404
    assert c.get("/ui/runs/none/plots/nope.svg").status_code == 404
    r = c.post("/ui/tasks", data={"csrf": csrf, "task": ""})
    assert r.status_code == 422 and "Give a task" in r.text
    r = c.post("/ui/tasks", data={"csrf": csrf, "task": "arvo:999999999"})
    assert r.status_code == 404 and "Unknown task" in r.text
    r = c.post(
        "/ui/tasks", data={"csrf": csrf, "task": "arvo:9 00"}
    )  # not a task reference: no 500
    assert r.status_code == 422 and "not a task reference" in r.text
    r = c.post("/ui/tasks", data={"csrf": csrf, "task": "arvo:900001", "max_steps": "lots"})
    assert r.status_code == 422 and "step limit" in r.text
    r = c.post(
        "/ui/tasks",
        data={"csrf": csrf, "task": "arvo:900001"},
        headers={"origin": "http://evil.example"},
    )
    assert r.status_code == 403


def test_the_start_form_has_the_intake_bounds_of_the_api(start_green, scripted_purple):
    purple_url, _ = scripted_purple(Script(commands=["sleep 5"], submit=False))
    green = start_green(api_token=TOKEN, purple_url=purple_url, intake_per_minute=1)
    with client(green, headers={"authorization": f"Bearer {TOKEN}"}) as c:
        assert c.post("/ui/tasks", data={"task": "arvo:900001"}).status_code == 303
        r = c.post("/ui/tasks", data={"task": "arvo:900001"})
        assert r.status_code == 429 and "per minute" in r.text
        listed = c.get("/tasks").json()
    assert listed["total"] == 1


def test_a_live_task_streams_each_command_once_in_order_then_ends(start_green, scripted_purple):
    commands = [f"echo line-{i}" for i in range(1, 7)]
    purple_url, _ = scripted_purple(Script(commands=commands, pause_s=0.3, submit=False))
    green = start_green(api_token=TOKEN, purple_url=purple_url, idle_timeout_s=3)
    auth = {"authorization": f"Bearer {TOKEN}"}
    task = web.post(f"{green.url}/tasks", json={"task": "arvo:900001"}, headers=auth).json()
    ids, events, outputs = [], [], []
    with web.stream(
        "GET", f"{green.url}/ui/tasks/{task['id']}/stream", headers=auth, timeout=120
    ) as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        for line in r.iter_lines():
            if line.startswith("id: "):
                ids.append(int(line[4:]))
            elif line.startswith("event: "):
                events.append(line[7:])
            elif line.startswith("data: ") and events[-1] == "command":
                outputs.append(line)
    assert ids == list(range(1, len(commands) + 1))
    assert all(f"line-{i}" in outputs[i - 1] for i in range(1, len(commands) + 1))
    statuses = [e for e in events if e == "status"]
    assert statuses and events[-1] == "end"


def test_an_open_stream_closes_when_green_begins_to_stop(start_green, scripted_purple):
    purple_url, _ = scripted_purple(Script(commands=["sleep 20"], submit=False))
    green = start_green(api_token=TOKEN, purple_url=purple_url)
    auth = {"authorization": f"Bearer {TOKEN}"}
    task = web.post(f"{green.url}/tasks", json={"task": "arvo:900001"}, headers=auth).json()
    with web.stream(
        "GET", f"{green.url}/ui/tasks/{task['id']}/stream", headers=auth, timeout=60
    ) as r:
        lines = r.iter_lines()
        assert next(lines).startswith("retry:")
        green.server.config.app.state.orchestrator.begin_shutdown()  # what SIGTERM does first
        t0 = time.monotonic()
        for _ in lines:
            pass
        assert time.monotonic() - t0 < 5, "the stream held on after green began to stop"
    # end the task now: green's server would otherwise drain the in-flight 'sleep 20' first
    r = web.post(f"{green.url}/tasks/{task['id']}/cancel", headers=auth, timeout=30)
    assert r.status_code == 200, r.text
