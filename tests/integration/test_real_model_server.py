"""Opt-in (``make test-llm``): purple through green on a fixture task against a *real*
OpenAI-compatible model server, llama-cpp-python's, with the small GGUF model from PyPI.

Not in the default ``make test``: building the server takes several minutes on two cores the
first time, and each task spends tens of seconds per model call. The model is far too weak to
localize a bug; the test checks the plumbing a real server exercises: the agent's reason reaches
green, green's token counts equal the server's ``usage``, ``max_tokens`` is honoured, a context
window too small for the prompt ends as the agent's failure with that reason, the ATIF
trajectory's steps carry the server's own counts, a timed-out call
is not sent again, and green's cancel stops purple's in-flight model call. Each test prints what
it saw (run with ``-s``); the lines are also appended to ``build/test-llm-report.txt``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import atif
import pytest

from services.purple.app import create_app as create_purple
from services.purple.config import PurpleSettings
from tests.integration.helpers import OPERATOR, submit_task, wait_terminal
from tests.support import web
from tests.support.model_server import (
    ALIAS,
    REPO,
    LlamaServer,
    UsageProxy,
    model_file,
    server_python,
)
from tests.support.servers import free_port, serve

pytestmark = [
    pytest.mark.docker,
    pytest.mark.llm,
    pytest.mark.timeout(2400),
    pytest.mark.skipif(
        not os.environ.get("ARENA_TEST_LLM"), reason="opt-in: make test-llm (a real model server)"
    ),
]
REPORT = REPO / "build" / "test-llm-report.txt"


def say(line: str) -> None:
    print(line, flush=True)
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    with REPORT.open("a", encoding="utf-8") as f:
        f.write(line + "\n")


@pytest.fixture(scope="module")
def model() -> tuple[Path, Path]:
    started = time.monotonic()
    python, gguf = server_python(), model_file()
    say(f"== model server environment ready in {time.monotonic() - started:.0f} s: {gguf.name}")
    return python, gguf


@pytest.fixture(scope="module")
def server_4k(model, tmp_path_factory) -> Iterator[LlamaServer]:
    with LlamaServer(*model, n_ctx=4096, log=tmp_path_factory.mktemp("llm") / "s.log") as s:
        yield s


def purple(tmp_path: Path, base_url: str, **settings: Any):
    port = free_port()
    config = PurpleSettings(
        port=port,
        policy="react",
        model=ALIAS,
        openai_base_url=base_url,
        openai_api_key="none",
        log_dir=tmp_path / "logs",
        trajectory_dir=tmp_path / "traj",
        **{"llm_timeout_s": 600, **settings},
    )
    return serve(create_purple(config), port)


def show(name: str, done: dict[str, Any], proxy: UsageProxy, seconds: float) -> None:
    say(f"-- {name}: {done['status']} ({done['end_reason']}) in {seconds:.0f} s")
    say(f"   green error : {done['error']}")
    say(f"   agent said  : {done['agent_reason']}")
    ok = [c for c in proxy.calls if c.get("usage")]
    server_in = sum(c["usage"]["prompt_tokens"] for c in ok)
    server_out = sum(c["usage"]["completion_tokens"] for c in ok)
    say(
        f"   tokens      : green {done['tokens_in']} in / {done['tokens_out']} out; "
        f"server {server_in} / {server_out} over {len(ok)} answered call(s)"
    )
    for i, c in enumerate(proxy.calls, 1):
        usage = c.get("usage") or {}
        say(
            f"   call {i}: {c.get('seconds')} s, status {c.get('status', '-')}, "
            f"prompt {usage.get('prompt_tokens', '-')}, completion "
            f"{usage.get('completion_tokens', '-')} (max_tokens {c['max_tokens']}), "
            f"finish {c.get('finish_reason')}, abandoned {c['abandoned']}"
            + (f", error {c['error'][:120]}" if c.get("error") else "")
        )


def test_reason_usage_and_max_tokens(server_4k, start_green, tmp_path) -> None:
    with (
        UsageProxy(server_4k.base_url) as proxy,
        purple(tmp_path, proxy.base_url, max_tokens=48, step_limit=3, context_window=4096) as p,
    ):
        green = start_green(purple_url=p.url, task_timeout_s=1200, idle_timeout_s=900)
        started = time.monotonic()
        done = wait_terminal(green.url, submit_task(green.url, {"task": "arvo:900001"})["id"], 1300)
        show("reason, usage, max_tokens", done, proxy, time.monotonic() - started)
        trajectory = web.get(
            f"{green.url}/tasks/{done['id']}/trajectory?format=atif", headers=OPERATOR
        )
    answered = [c for c in proxy.calls if c.get("usage")]
    assert answered and all(c["usage"]["completion_tokens"] <= 48 for c in answered)
    assert done["tokens_in"] == sum(c["usage"]["prompt_tokens"] for c in answered)
    assert done["tokens_out"] == sum(c["usage"]["completion_tokens"] for c in answered)
    if done["status"] != "completed":
        assert done["agent_reason"], "the agent's own reason must reach green"
    # as ATIF: one agent step per answered call, each with the server's own counts
    doc = atif.Trajectory.model_validate(trajectory.json())
    turns = [s for s in doc.steps if s.source == "agent"]
    say(f"   ATIF        : {len(doc.steps)} step(s), {len(turns)} agent step(s)")
    assert [(s.metrics.prompt_tokens, s.metrics.completion_tokens) for s in turns] == [
        (c["usage"]["prompt_tokens"], c["usage"]["completion_tokens"]) for c in answered
    ]
    assert doc.final_metrics.total_prompt_tokens == done["tokens_in"]
    assert all(s.metrics.cost_usd is None for s in turns)  # a local model has no price


def test_a_window_too_small_for_the_prompt(model, start_green, tmp_path) -> None:
    with (
        LlamaServer(*model, n_ctx=2048, log=tmp_path / "s2k.log") as small,
        UsageProxy(small.base_url) as proxy,
        purple(tmp_path, proxy.base_url, max_tokens=48) as p,
    ):
        green = start_green(purple_url=p.url, task_timeout_s=900, idle_timeout_s=600)
        started = time.monotonic()
        done = wait_terminal(green.url, submit_task(green.url, {"task": "arvo:900001"})["id"], 1000)
        show("window of 2,048 tokens", done, proxy, time.monotonic() - started)
    assert done["failure_kind"] == "agent"
    assert "context_length_exceeded" in done["agent_reason"]


def test_cancel_stops_the_in_flight_call(server_4k, start_green, tmp_path) -> None:
    with (
        UsageProxy(server_4k.base_url) as proxy,
        purple(tmp_path, proxy.base_url, max_tokens=512, step_limit=6, context_window=4096) as p,
    ):
        green = start_green(purple_url=p.url, task_timeout_s=1200, idle_timeout_s=900)
        task = submit_task(green.url, {"task": "arvo:900001"})
        deadline = time.monotonic() + 900
        while not (len(proxy.calls) >= 2 and proxy.in_flight == 1):
            assert time.monotonic() < deadline, "purple never made a second model call"
            time.sleep(0.2)
        asked = time.monotonic()
        r = web.post(f"{green.url}/tasks/{task['id']}/cancel", headers=OPERATOR, timeout=60)
        assert r.status_code == 200, r.text
        while web.get(f"{p.url}/tasks/{task['id']}").json()["status"] != "cancelled":
            assert time.monotonic() - asked < 30, "purple did not stop"
            time.sleep(0.1)
        stopped = time.monotonic() - asked
        done = wait_terminal(green.url, task["id"], 120)
        time.sleep(1)
        show("cancel during a model call", done, proxy, stopped)
        say(f"   purple cancelled {stopped:.1f} s after green's cancel")
    assert proxy.calls[-1]["abandoned"] and proxy.in_flight == 0
    assert "cancelled by green" in (done["agent_reason"] or "")
    assert done["tokens_in"] > 0  # the answered calls before the cancel


def test_a_timed_out_call_is_not_sent_again(server_4k, start_green, tmp_path) -> None:
    with (
        UsageProxy(server_4k.base_url) as proxy,
        purple(tmp_path, proxy.base_url, max_tokens=48, llm_timeout_s=3, context_window=4096) as p,
    ):
        green = start_green(purple_url=p.url, task_timeout_s=600, idle_timeout_s=300)
        started = time.monotonic()
        done = wait_terminal(green.url, submit_task(green.url, {"task": "arvo:900001"})["id"], 700)
        show("model call timeout of 3 s", done, proxy, time.monotonic() - started)
    assert len(proxy.calls) == 1 and proxy.calls[0]["abandoned"]
    assert "not sent again" in done["agent_reason"]
