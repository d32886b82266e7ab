"""A hostile purple (and its friends outside) against green's HTTP plane: issue 20, attacks 4-11,
and issue 39, attack 11 (bodies admitted before they are read).

Green runs as its own process with its real server (its connection cap, read deadline, RSS of
its own); the purple is the real purple service with a hostile policy; tasks run in real
containers. Each test is one attack and fails on the code before the fix. Latencies and memory
are printed (run with -s), not asserted as times.
"""

from __future__ import annotations

import asyncio
import json
import re
import select
import socket
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator

import httpx
import pytest

from fixtures.catalog import IMAGE_TEMPLATE
from services.green.tasks.live_task import BUSY, NOT_SERVED
from services.purple.app import create_app as create_purple
from services.purple.config import PurpleSettings
from tests.integration.helpers import OPERATOR, OPERATOR_TOKEN, wait_status, wait_terminal
from tests.support import web
from tests.support.hostile_http import (
    MIB,
    Flood,
    FloodPolicy,
    HostileTrajectory,
    PeakRss,
    Prober,
    execute_rpc,
    reply_text,
)
from tests.support.servers import ServiceProcess, free_port, serve

pytestmark = pytest.mark.docker
TASK = "arvo:900001"


@pytest.fixture
def green_process(tmp_path, fixture_assets) -> Iterator[Callable[..., ServiceProcess]]:
    """Start green as ``python -m services.green`` (its real server); keyword arguments are
    GREEN_* settings by their lower-case name."""
    started: list[ServiceProcess] = []

    def start(port: int | None = None, **settings: object) -> ServiceProcess:
        port = port or free_port()
        env = {
            "GREEN_DATABASE_URL": f"sqlite:///{tmp_path}/green-{port}.db",
            "GREEN_LOG_DIR": str(tmp_path / "logs"),
            "GREEN_ASSET_SOURCE": str(fixture_assets),
            "GREEN_ASSET_CACHE_DIR": str(tmp_path / "cache"),
            "GREEN_IMAGE_TEMPLATE": IMAGE_TEMPLATE,
            "GREEN_API_TOKEN": OPERATOR_TOKEN,
            "GREEN_API_TOKEN_FILE": str(tmp_path / "operator-token"),
            "GREEN_INSTANCE_NAME": f"hostile-http-{port}",
            "GREEN_PURPLE_ALLOWLIST": '["http://127.0.0.1:*"]',
            "GREEN_CONTAINER_MEMORY": "1g",
            "GREEN_PURPLE_POLL_S": "0.5",
            "GREEN_TASK_TIMEOUT_S": "180",
            "GREEN_IDLE_TIMEOUT_S": "90",
            "GREEN_COMMAND_TIMEOUT_S": "30",
        }
        env |= {f"GREEN_{k.upper()}": str(v) for k, v in settings.items()}
        green = ServiceProcess("services.green", port, env, tmp_path / f"green-{port}.out")
        started.append(green.start(timeout=240))
        return green

    yield start
    for green in started:
        green.stop()


@pytest.fixture
def flooding_purple(tmp_path) -> Iterator[Callable[..., tuple[str, Flood, HostileTrajectory]]]:
    """A real purple whose policy floods green (tests/support/hostile_http.FloodPolicy) and
    whose trajectory endpoint answers 600 MiB."""
    stack: list = []

    def start(green_url: str, flood: Flood) -> tuple[str, Flood, HostileTrajectory]:
        port = free_port()
        settings = PurpleSettings(
            port=port,
            log_dir=tmp_path / "logs",
            trajectory_dir=tmp_path / "traj",
        )
        app = HostileTrajectory(
            create_purple(
                settings, make_policy=lambda kind="rca_task": FloodPolicy(green_url, flood)
            )
        )
        cm = serve(app, port)
        srv = cm.__enter__()
        stack.append(cm)
        return srv.url, flood, app

    yield start
    for cm in reversed(stack):
        cm.__exit__(None, None, None)


def _task_under_attack(green_process, flooding_purple, flood: Flood, **settings: object):
    """Green, a hostile purple and one task of it, running; (green, purple's app, task)."""
    port = free_port()
    purple_url, _, app = flooding_purple(f"http://127.0.0.1:{port}", flood)
    green = green_process(port=port, purple_url=purple_url, **settings)
    r = web.post(f"{green.url}/tasks", headers=OPERATOR, json={"task": TASK}, timeout=30)
    assert r.status_code == 202, r.text
    task = r.json()
    assert flood.started.wait(120), "the hostile purple never got its task"
    return green, app, task


# ---- attack 4: connection exhaustion with a valid task token ---------------------------------


def test_4_an_execute_flood_runs_one_command_and_never_starves_the_operator(
    green_process, flooding_purple
):
    flood = Flood(size=70, command="sleep 5", wait_for_go=True)
    green, _, task = _task_under_attack(
        green_process, flooding_purple, flood, max_connections=64, max_steps=30
    )
    with Prober(f"{green.url}/healthz") as quiet:  # the baseline, in the same run
        time.sleep(3)
    with (
        Prober(f"{green.url}/healthz") as health,
        Prober(f"{green.url}/tasks?limit=5", OPERATOR) as listing,
    ):
        time.sleep(0.5)
        flood.go.set()  # the probes are running: flood now
        assert flood.done.wait(120), "the flood never ended"
        time.sleep(1)
    print(f"\nbefore the flood: {quiet.summary()}")
    print(f"execute flood of {flood.size} x '{flood.command}' on one task:")
    print(" ", health.summary())
    print(" ", listing.summary())
    ran = [a for a in flood.answers if "<returncode>" in a]
    busy = [a for a in flood.answers if BUSY in a]
    too_many = [a for a in flood.answers if "too many connections" in a]
    print(f"  answers: {len(ran)} ran, {len(busy)} refused as busy, {len(too_many)} over the "
          f"credential's connections, {flood.size - len(ran) - len(busy) - len(too_many)} other")  # fmt: skip
    assert len(ran) <= 1, ran
    assert len(ran) + len(busy) + len(too_many) >= flood.size - 10, flood.answers
    for prober in (health, listing):
        answered = len(prober.latencies)
        assert answered >= 10 and len(prober.failures) <= answered // 10, prober.summary()
    flood.release.set()
    done = wait_terminal(green.url, task["id"])
    assert done["status"] == "completed", done
    assert done["steps"] <= 2, done  # the answer file, and at most one 'sleep 5'


# ---- attack 5: trajectory blow-up -----------------------------------------------------------


def test_5_a_huge_or_endless_trajectory_is_cut_and_green_stays_small(
    green_process, flooding_purple
):
    flood = Flood(size=1, command="true")
    flood.release.set()
    green, hostile, task = _task_under_attack(
        green_process, flooding_purple, flood, trajectory_timeout_s=3
    )
    wait_terminal(green.url, task["id"])
    page = f"{green.url}/ui/tasks/{task['id']}/trajectory"
    with PeakRss(green.proc.pid) as rss:
        r = web.get(page, headers=OPERATOR, timeout=120)
    print(f"\n600 MiB trajectory: green's RSS "
          f"{rss.base:.0f} -> peak {rss.peak:.0f} MiB (+{rss.growth:.0f})")  # fmt: skip
    assert r.status_code == 200, r.text[:500]
    assert "larger than" in r.text and "gives none of it" in r.text, r.text[:2000]
    assert rss.growth < 100, rss.growth
    # the REST route arena run reads it through: the same bound, a sentence, green stays small
    with PeakRss(green.proc.pid) as rss:
        r = web.get(f"{green.url}/tasks/{task['id']}/trajectory", headers=OPERATOR, timeout=120)
    assert r.status_code == 502 and "larger than" in r.json()["detail"], r.text[:2000]
    assert rss.growth < 100, rss.growth
    hostile.drip = True  # a byte a second, forever: the total time limit ends it
    t0 = time.monotonic()
    r = web.get(page, headers=OPERATOR, timeout=120)
    print(f"endless trajectory: the page answered in {time.monotonic() - t0:.1f} s")
    assert r.status_code == 200 and "did not arrive within 3 s" in r.text, r.text[:2000]


# ---- attack 6: no body size limit ------------------------------------------------------------


def _push(port: int, path: str, total_mib: int, declared: bool) -> tuple[str, int]:
    """POST ``total_mib`` MiB to ``path`` (declared with Content-Length, or chunked) until green
    answers or closes; (green's answer, bytes sent)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    length = f"Content-Length: {total_mib * MIB}" if declared else "Transfer-Encoding: chunked"
    s.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              f"{length}\r\n\r\n".encode())  # fmt: skip
    chunk = b"[" * MIB
    framed = chunk if declared else b"%x\r\n%s\r\n" % (len(chunk), chunk)
    sent = 0
    answered = select.poll()  # not select(): the suite's process may hold fds past 1024
    answered.register(s, select.POLLIN)
    for _ in range(total_mib):
        if answered.poll(0):
            break  # green has answered (or closed)
        try:
            s.sendall(framed)
        except OSError:
            break
        sent += len(chunk)
    answer = b""
    try:
        while len(answer) < 4096 and (data := s.recv(4096)):
            answer += data
    except OSError:
        pass
    s.close()
    return answer.decode("latin-1"), sent


def test_6_a_huge_body_is_refused_while_it_is_read_before_authentication(green_process):
    green = green_process()
    for path in ("/", "/tasks", "/ui/login"):
        for declared in (True, False):
            with PeakRss(green.proc.pid) as rss:
                answer, sent = _push(green.port, path, 400, declared)
            how = "declared" if declared else "chunked"
            print(f"\n400 MiB {how} to {path}: {sent / MIB:.0f} MiB sent before the answer "
                  f"{answer.split(chr(13))[0]!r}, RSS +{rss.growth:.0f} MiB")  # fmt: skip
            assert sent < 64 * MIB, (path, how, sent)
            assert answer.startswith("HTTP/1.1 413"), (path, how, answer[:300])
            assert "larger than" in answer and "BODY_MAX_BYTES" in answer, answer
            assert rss.growth < 50, (path, how, rss.growth)
    assert web.get(f"{green.url}/healthz").status_code == 200


# ---- attack 7: deep JSON --------------------------------------------------------------------


def _deep(depth: int) -> str:
    return '{"a": ' * depth + "1" + "}" * depth


@pytest.mark.parametrize("depth", [900, 2000])
def test_7_deep_json_rpc_is_an_invalid_request_never_an_internal_error(green_process, depth):
    green = green_process()
    msg = {
        "role": "user",
        "messageId": str(uuid.uuid4()),
        "parts": [{"kind": "text", "text": "hi"}],
    }
    bodies = {
        "message/send metadata": json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "message/send",
                "params": {"message": {**msg, "metadata": "@"}},
            }
        ).replace('"@"', _deep(depth)),
        "tasks/get": json.dumps(
            {"jsonrpc": "2.0", "id": 8, "method": "tasks/get", "params": {"id": "x", "m": "@"}}
        ).replace('"@"', _deep(depth)),
        "the envelope": '{"jsonrpc": "2.0", "id": 9, "method": "tasks/get", "x": '
        + "[" * depth
        + "]" * depth
        + "}",
    }
    for name, body in bodies.items():
        for headers in ({}, OPERATOR):
            r = web.post(f"{green.url}/", content=body, timeout=30,
                           headers={**headers, "content-type": "application/json"})  # fmt: skip
            assert r.status_code < 500, (name, r.status_code, r.text[:300])
            error = r.json()["error"]
            assert error["code"] in (-32600, -32602), (name, error)
            assert "levels deep" in error["message"], (name, error)


# ---- attack 8: clickjacking the dashboard ----------------------------------------------------


def test_8_the_dashboard_cannot_be_framed_and_its_forms_need_the_session_token(green_process):
    green = green_process(purple_url="http://127.0.0.1:9", purple_start_retry_s=120)
    r = web.post(f"{green.url}/tasks", headers=OPERATOR, json={"task": TASK}, timeout=30)
    task = r.json()
    with httpx.Client(base_url=green.url, timeout=30) as c:
        assert c.post("/ui/login", data={"token": OPERATOR_TOKEN}).status_code == 303
        page = c.get(f"/ui/tasks/{task['id']}")
        assert page.status_code == 200
        csp = page.headers.get("content-security-policy", "")
        assert "frame-ancestors 'none'" in csp and "script-src 'self'" in csp, csp
        assert "unsafe-inline" not in csp, csp
        assert page.headers.get("x-frame-options") == "DENY"
        assert page.headers.get("x-content-type-options") == "nosniff"
        assert page.headers.get("referrer-policy")
        assert "<script>" not in page.text and " style=" not in page.text  # nothing inline
        # the framed click: same site, the session cookie, an Origin that passes, no form token
        host = green.url.split("://", 1)[1]
        framed = c.post(f"/ui/tasks/{task['id']}/cancel", headers={"origin": f"http://{host}"})
        assert framed.status_code == 403, framed.text[:300]
        alive = web.get(f"{green.url}/tasks/{task['id']}", headers=OPERATOR).json()
        assert alive["status"] not in ("cancelled", "failed"), alive
        token = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
        ours = c.post(f"/ui/tasks/{task['id']}/cancel", data={"csrf": token})
        assert ours.status_code == 303, ours.text[:300]
    assert wait_terminal(green.url, task["id"])["status"] == "cancelled"


# ---- attack 9: negative counters ------------------------------------------------------------


def test_9_counters_from_the_agent_are_refused_unless_non_negative_finite_and_bounded(
    green_process, flooding_purple
):
    flood = Flood(size=1, command="true")
    flood.stats = {"cost": -1e300, "tokens_in": -7}
    flood.release.set()
    green, _, task = _task_under_attack(green_process, flooding_purple, flood)
    done = wait_terminal(green.url, task["id"])
    print(f"\nthe bad submission was answered: {flood.bad_submit}")
    assert "invalid submit data" in flood.bad_submit, flood.bad_submit
    assert "cost" in flood.bad_submit or "tokens_in" in flood.bad_submit, flood.bad_submit
    assert done["status"] == "completed", done
    assert done["cost"] >= 0 and done["tokens_in"] >= 0, done
    runs = web.get(f"{green.url}/ui", headers=OPERATOR).text
    assert "-1.00e300" not in runs and "e300" not in runs


# ---- attack 10: 500s on the operator plane ---------------------------------------------------

HUGE = "99999999999999999999"


def test_10_numbers_in_query_strings_have_ranges(green_process):
    green = green_process(purple_url="http://127.0.0.1:9", purple_start_retry_s=60)
    task = web.post(f"{green.url}/tasks", headers=OPERATOR, json={"task": TASK}).json()
    with httpx.Client(base_url=green.url, headers=OPERATOR, timeout=30) as c:
        for path in (
            f"/tasks?offset={HUGE}",
            f"/tasks?limit={HUGE}",
            f"/tasks/{task['id']}/commands?offset={HUGE}",
            f"/ui/tasks?page={HUGE}",
            f"/ui?page={HUGE}",
            f"/ui/tasks/{task['id']}/stream?after={HUGE}",
            "/tasks?offset=-1",
        ):
            r = c.get(path)
            assert r.status_code == 422, (path, r.status_code, r.text[:300])
        # a Last-Event-ID green never sent is ignored, not a broken stream
        assert c.post(f"/tasks/{task['id']}/cancel").status_code < 300
        wait_terminal(green.url, task["id"])
        for resume in ("\u00b2", HUGE, "-3", "x"):
            with c.stream(
                "GET", f"/ui/tasks/{task['id']}/stream",
                headers={"last-event-id": resume.encode("latin-1")},
            ) as r:  # fmt: skip
                assert r.status_code == 200, (resume, r.status_code)
                assert "event: end" in r.read().decode(), resume


# ---- attack 11: the task's status told to a stranger -----------------------------------------


def test_11_a_refusal_to_a_caller_without_the_token_does_not_tell_the_status(
    green_process, flooding_purple
):
    flood = Flood(size=1, command="true")
    green, _, task = _task_under_attack(green_process, flooding_purple, flood)
    assert flood.done.wait(60)
    wait_status(green.url, task["id"], "running")

    def stranger(task_id: str) -> str:
        return reply_text(web.post(f"{green.url}/", json=execute_rpc(task_id, "id", "guess")))

    while_running = stranger(task["id"])
    flood.release.set()
    assert wait_terminal(green.url, task["id"])["status"] == "completed"
    after_the_end = stranger(task["id"])
    never_existed = stranger(str(uuid.uuid4()))
    print(f"\nrefusals: {while_running!r} / {after_the_end!r} / {never_existed!r}")
    assert while_running == after_the_end == never_existed, (while_running, after_the_end)
    assert NOT_SERVED in while_running
    for word in ("completed", "running", "evaluating", "failed", "cancelled"):
        assert word not in after_the_end.replace("not running here", ""), after_the_end


# ---- the agent plane's two routes: message/send (answered directly) and message/stream -------


def test_an_execute_gets_the_same_reply_sent_or_streamed(green_process, flooding_purple):
    """``message/send`` is answered by the gate without the SDK's task machinery; the streamed
    form still goes through it. Both carry the one CommandResult, same fields, no A2A task."""
    flood = Flood(size=1, command="true")
    green, _, task = _task_under_attack(green_process, flooding_purple, flood)
    assert flood.done.wait(60)
    wait_status(green.url, task["id"], "running")
    sent = execute_rpc(flood.task_id, "echo same", flood.token)
    reply = web.post(f"{green.url}/", json=sent, timeout=30).json()["result"]
    streamed = {**sent, "method": "message/stream", "id": str(uuid.uuid4())}
    with web.stream("POST", f"{green.url}/", json=streamed, timeout=30) as r:
        events = [json.loads(line[5:]) for line in r.iter_lines() if line.startswith("data:")]
    flood.release.set()
    assert wait_terminal(green.url, task["id"])["status"] == "completed"
    assert len(events) == 1, events
    for message in (reply, events[0]["result"]):
        assert message["kind"] == "message" and "taskId" not in message, message
        data = next(p["data"] for p in message["parts"] if p["kind"] == "data")
        assert data["kind"] == "result" and data["output"] == "same\n" and data["exit_code"] == 0
        assert set(data) == {
            "kind", "exit_code", "output", "truncated", "bytes_cut", "timed_out", "duration_s"
        }  # fmt: skip
    commands = web.get(f"{green.url}/tasks/{task['id']}/commands", headers=OPERATOR).json()
    assert [c["command"] for c in commands].count("echo same") == 2


# ---- issue 39, attack 11: bodies read before the per-credential bound ------------------------


async def _post_body(port: int, source: str, size: int) -> str:
    """One anonymous POST to ``/`` of ``size`` bytes (a JSON-RPC message with one big text part)
    from the address ``source``; green's status line, or what ended the exchange."""
    head = b'{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"role":"user",'
    head += b'"messageId":"m","parts":[{"kind":"text","text":"'
    tail = b'"}]}}}'
    body = head + b"x" * (size - len(head) - len(tail)) + tail
    request = b"POST / HTTP/1.1\r\nHost: g\r\nContent-Type: application/json\r\n"
    request += b"Content-Length: %d\r\n\r\n" % len(body)
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))
    except OSError as exc:
        return type(exc).__name__
    answer = asyncio.ensure_future(reader.readline())  # a refusal comes while the body goes
    try:
        writer.write(request)
        for at in range(0, len(body), MIB):  # as a client does: it stops once refused
            if answer.done():
                break
            writer.write(body[at : at + MIB])
            await writer.drain()
    except OSError:
        pass  # refused and closed while sending: the answer came first
    try:
        async with asyncio.timeout(120):
            return (await answer).decode("latin-1").strip() or "closed"
    except (OSError, TimeoutError) as exc:
        return type(exc).__name__
    finally:
        writer.close()


def test_11_bodies_are_admitted_by_caller_and_size_before_they_are_read(green_process):
    """400 anonymous POSTs of (almost) 8 MiB at once, from 100 addresses: 3.1 GiB of bodies. A
    body is admitted before it is read (by its caller's bytes in flight, and all anonymous
    callers' together), so green's memory stays far below what the bodies would take, the
    refused ones get 429 at once, and the operator is served meanwhile."""
    green = green_process()
    size, n, sources = 8 * MIB - 4096, 400, [f"127.0.1.{i}" for i in range(1, 101)]

    async def attack() -> list[str]:
        return await asyncio.gather(
            *(_post_body(green.port, sources[i % len(sources)], size) for i in range(n))
        )

    with PeakRss(green.proc.pid) as rss:
        answers = asyncio.run(attack())
    statuses = Counter(a.split(" ", 2)[1] if a.startswith("HTTP/") else a for a in answers)
    print(f"\n{n} x {size / MIB:.1f} MiB anonymous POSTs ({n * size / MIB / 1024:.1f} GiB): "
          f"{dict(statuses)}; green's RSS {rss.base:.0f} -> peak {rss.peak:.0f} MiB "
          f"(+{rss.growth:.0f} MiB)")  # fmt: skip
    assert rss.growth < 600, rss.growth  # the bodies: 3,200 MiB
    assert statuses["429"] > 0, statuses
    assert web.get(f"{green.url}/tasks?limit=1", headers=OPERATOR).status_code == 200
