"""``POST /tasks`` makes each task once, and says so:

- its answer is what happened to its task, even when the database held the insert past the
  request's deadline: a 503 ("try again") for a task that then landed had a client that did try
  again (``arena run`` retries 503s) make it twice, and a benchmark score a task twice (and the
  same for a run, ``POST /runs``, and an assessment);
- a task id of the client's choosing makes one task however often it is posted (an answer lost
  to a cut connection can be asked for again), at once or one after another; ``arena run``
  posts under its own ids and sends again a post whose answer was lost.

Real green servers on 127.0.0.1, real SQLite files.
"""

from __future__ import annotations

import sqlite3
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from services.arena.client import GreenClient
from tests.integration.helpers import OPERATOR
from tests.support.cutting_proxy import CuttingProxy
from tests.support.servers import ThreadedServer

pytestmark = pytest.mark.docker

LOCK_S = 3.0


def _post_under_lock(
    start_green, tmp_path: Path, route: str, body: dict, table: str
) -> tuple[httpx.Response, float, list[str]]:
    """Post ``body`` to a green whose database file's own busy timeout (5 s, the URL's
    ``?timeout=``) outlasts green's deadline (0.5 s: a caller gives up after 1.5 s), while
    another connection holds the file's write lock for :data:`LOCK_S`. Returns the answer, how
    long it took, and the ids in ``table`` once the lock is gone and every write has landed."""
    path = tmp_path / "green.db"
    green = start_green(database_url=f"sqlite:///{path}?timeout=5", database_deadline_s=0.5)
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN EXCLUSIVE")
    threading.Timer(LOCK_S, holder.execute, ["ROLLBACK"]).start()
    with httpx.Client(base_url=green.url, headers=OPERATOR, timeout=30) as client:
        t0 = time.monotonic()
        answer = client.post(route, json=body)
        took = time.monotonic() - t0
    time.sleep(max(0.0, t0 + LOCK_S + 1 - time.monotonic()))
    try:
        return answer, took, [row[0] for row in holder.execute(f"SELECT id FROM {table}")]
    finally:
        holder.close()


def test_a_post_whose_insert_outlived_the_deadline_is_answered_by_what_landed(
    start_green, tmp_path: Path
) -> None:
    answer, took, made = _post_under_lock(
        start_green, tmp_path, "/tasks", {"task": "arvo:900001"}, "task_contexts"
    )
    print(f"answered {answer.status_code} after {took:.1f} s; tasks made: {len(made)}")
    # before: 503 after 1.5 s, and the task made anyway when the lock went
    assert answer.status_code == 202, answer.text
    assert made == [answer.json()["id"]]
    assert took >= LOCK_S - 0.5  # it waited for the insert: the lock, not the deadline, ended it


@pytest.mark.parametrize(
    ("route", "body", "accepted"),
    [
        ("/runs", {"name": "nightly", "task_ids": ["arvo:900001"]}, 201),
        ("/assessments", {"task_ids": ["arvo:900001"], "purple_url": "http://127.0.0.1:9"}, 202),
    ],
)
def test_a_run_opened_while_the_insert_outlived_the_deadline_is_answered_by_what_landed(
    start_green, tmp_path: Path, route: str, body: dict, accepted: int
) -> None:
    """The same for a run (``POST /runs``, as ``arena run`` opens its run) and an assessment:
    before, 503 and the record made anyway, a second one on the dashboard once the client had
    posted again."""
    answer, _, opened = _post_under_lock(start_green, tmp_path, route, body, "assessments")
    assert answer.status_code == accepted, answer.text
    assert opened == [answer.json()["id"]]


def test_a_clients_task_id_makes_one_task_however_often_it_is_posted(start_green) -> None:
    green = start_green()
    mine = str(uuid.uuid4())
    body = {"id": mine, "task": "arvo:900001", "trial": 2}
    together = str(uuid.uuid4())  # posted by eight clients at once, beside four other tasks
    bodies = [{"id": together, "task": "arvo:900002"}] * 8 + [{"task": "arvo:900003"}] * 4
    with httpx.Client(base_url=green.url, headers=OPERATOR, timeout=30) as client:
        first = client.post("/tasks", json=body)
        again = client.post("/tasks", json=body)
        other = client.post("/tasks", json={**body, "trial": 3})
        malformed = client.post("/tasks", json={**body, "id": mine.upper()})
        with ThreadPoolExecutor(len(bodies)) as pool:
            at_once = list(pool.map(lambda b: client.post("/tasks", json=b), bodies))
        made = [t["id"] for t in client.get("/tasks", params={"limit": 100}).json()["items"]]
    assert (first.status_code, first.json()["id"]) == (202, mine), first.text
    assert (again.status_code, again.json()["id"]) == (200, mine), again.text
    assert again.json()["trial"] == 2
    assert other.status_code == 409 and "other parameters" in other.json()["detail"]
    assert malformed.status_code == 422
    same = sorted(r.status_code for r in at_once[:8] if r.json()["id"] == together)
    assert same == [200] * 7 + [202], [r.text for r in at_once[:8]]
    assert [r.status_code for r in at_once[8:]] == [202] * 4
    assert len(made) == len(set(made)) == 6 and {mine, together} <= set(made)


async def test_arena_sends_again_a_post_whose_answer_was_lost_and_finds_its_task(
    start_green,
) -> None:
    """Before, ``arena run`` never sent a post again once it had connected (a task must not be
    made twice): a lost answer failed its slot while green ran the task it had made."""
    green = start_green()
    async with (
        CuttingProxy(green.port) as proxy,
        httpx.AsyncClient(headers=OPERATOR, timeout=30) as http,
    ):
        client = GreenClient(http, proxy.url, grace_s=30)
        first = await client.post_task({"task": "arvo:900001"})
        assert first.status_code == 202 and client.keeps_ids
        proxy.cut_next = b"POST /tasks "
        lost = await client.post_task({"task": "arvo:900002"})
        assert proxy.cut == 1
        assert lost.status_code == 200, lost.text  # sent again: the task the lost answer made
        made = (await http.get(f"{green.url}/tasks")).json()["items"]
    assert sorted(t["id"] for t in made) == sorted([first.json()["id"], lost.json()["id"]])


async def test_until_green_has_kept_an_id_a_post_whose_answer_was_lost_is_not_sent_again(
    start_green,
) -> None:
    """An older green makes a task of every post, whatever its id: until green has answered a
    post with the client's id, a lost answer is an error (as before), never a second task."""
    green = start_green()
    async with (
        CuttingProxy(green.port) as proxy,
        httpx.AsyncClient(headers=OPERATOR, timeout=30) as http,
    ):
        client = GreenClient(http, proxy.url, grace_s=30)
        proxy.cut_next = b"POST /tasks "
        with pytest.raises(httpx.TransportError):
            await client.post_task({"task": "arvo:900001"})
        made = (await http.get(f"{green.url}/tasks")).json()["items"]
    assert len(made) == 1 and not client.keeps_ids


def test_a_task_posted_again_is_found_whatever_the_intake_bounds_say_now(start_green) -> None:
    """Posted again, an id makes no task, so the bounds on making tasks do not apply: here an
    anonymous caller (the plane opened) whose first post made the only task green may queue, of
    a bug now busy (with that very task). Both bounds refused the second post before."""
    green = start_green(open_operator_plane=True, max_queued_tasks=1)
    body = {"id": str(uuid.uuid4()), "task": "arvo:900001"}
    with httpx.Client(base_url=green.url, timeout=30) as anonymous:
        first = anonymous.post("/tasks", json=body)
        again = anonymous.post("/tasks", json=body)
        another = anonymous.post("/tasks", json={"task": "arvo:900001"})
    assert first.status_code == 202, first.text
    assert (again.status_code, again.json()["id"]) == (200, body["id"]), again.text
    assert another.status_code in (409, 429)  # a new task of it is still refused


def test_past_the_rate_a_post_naming_an_id_asks_the_dataset_host_nothing(start_green) -> None:
    """An anonymous caller (the plane opened) past its rate posts under ids of its choosing:
    each is refused by the rate (429), and none costs a request to the dataset host (the task
    source): before, each was checked there and answered 404, outbound requests past the limit
    and an oracle of which ids the host has."""
    asked: list[str] = []

    async def host(scope, receive, send) -> None:  # a dataset host that has no task
        if scope["type"] != "http":
            return
        asked.append(scope["path"])
        await send({"type": "http.response.start", "status": 404, "headers": []})
        await send({"type": "http.response.body", "body": b"no such task"})

    source = ThreadedServer(host).start()
    try:
        green = start_green(open_operator_plane=True, intake_per_minute=2, asset_source=source.url)
        with httpx.Client(base_url=green.url, timeout=30) as anonymous:
            spent = [anonymous.post("/tasks", json={"task": f"arvo:{n}"}) for n in (1, 2)]
            asked.clear()
            past = [
                anonymous.post("/tasks", json={"id": str(uuid.uuid4()), "task": f"arvo:{n}"})
                for n in (3, 4, 5)
            ]
    finally:
        source.stop()
    assert [r.status_code for r in spent] == [404, 404], [r.text for r in spent]
    assert [r.status_code for r in past] == [429] * 3, [r.text for r in past]
    assert all("per minute" in r.json()["detail"] for r in past)
    assert asked == []
