"""The dashboard in a real browser: log in, start a task, watch its commands stream in while it
runs, then read the scores next to the ground truth, the trajectory and the run's plots.

Real green (with an operator token), real purple (the ReAct agent against the local fake LLM),
real task containers, Debian's chromium. A screenshot of every page lands in build/artifacts/ui/.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.responses import HTMLResponse
from starlette.routing import Route

from services.green.kinds.arvo.judge import Judge
from tests.support import web
from tests.support.fake_llm import FakeReply
from tests.support.servers import serve

pytestmark = [pytest.mark.docker, pytest.mark.browser, pytest.mark.slow]

TOKEN = "ui-test-token"
SRC = "/workspace/src-vul/tinflate"
STEP_DELAY_S = 1.5
"""The fake model thinks this long per step, so the page sees commands arrive one by one."""


def submission_for_900007(assets: Path) -> list[dict]:
    """Rank 1 at the crash site (a miss: the fix is two frames up), rank 2 on the real fix."""
    task = assets / "900007"
    gt = Judge().prepare(task / "patch.diff", task / "repo-vul.tar.gz").ground_truth
    fix = gt.regions[0]
    return [
        {"file": "src/tables.c", "function": "tinf_match_length", "line_start": 20,
         "line_end": 24, "description": "where the read overflows"},
        {"file": fix.file, "function": fix.function.name if fix.function else None,
         "line_start": fix.start, "line_end": fix.end, "description": "the unchecked length"},
    ]  # fmt: skip


def script_agent(llm, locations: list[dict]) -> None:
    steps = [
        ("run_bash_cmd", {"command": "head -20 /workspace/error.txt"}),
        ("run_bash_cmd", {"command": f"ls {SRC}/src"}),
        ("show_file", {"path": f"{SRC}/src/tables.c", "start_line": 1, "end_line": 30}),
        ("search_code", {"pattern": "tinf_match_length", "file_pattern": "*.c"}),
        ("show_file", {"path": f"{SRC}/src/inflate.c", "start_line": 30, "end_line": 60}),
        ("submit_localization", {"locations": locations, "reasoning": "length not checked"}),
    ]
    llm.push(
        *(
            FakeReply(
                content=f"Step {i}: looking further.",
                tool_calls=[call],
                prompt_tokens=800 + 400 * i,
                completion_tokens=40 + i,
                cost=0.001 * (i + 1),
                delay_s=STEP_DELAY_S,
            )
            for i, call in enumerate(steps)
        )
    )


def commands_shown(page) -> int:
    return page.locator("#commands > li").count()


def wait_for_more_commands(page, than: int, timeout_s: float = 60) -> int:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        n = commands_shown(page)
        if n > than:
            return n
        page.wait_for_timeout(100)
    raise AssertionError(f"the command list stayed at {than} for {timeout_s}s")


def log_in(page, url: str, shoot) -> None:
    """Anonymous: sent to the login page; a wrong token is refused, the right one logs in."""
    page.goto(f"{url}/ui/tasks")
    assert "/ui/login" in page.url
    page.fill("#token", "not-the-token")
    page.click("form.stack button[type=submit]")
    assert page.locator(".error").inner_text() == "That token is not right."
    shoot(page, "01-login")
    page.fill("#token", TOKEN)
    page.click("form.stack button[type=submit]")
    page.wait_for_url(re.compile(r".*/ui/tasks$"))


def start_and_watch(page, url: str, shoot) -> str:
    """Start a task from the runs page, then see the command list grow without a reload."""
    page.goto(f"{url}/ui")
    shoot(page, "02-runs-empty")
    page.fill("input[name=task]", "arvo:900007")
    page.click("form.start button[type=submit]")
    page.wait_for_url(re.compile(r".*/ui/tasks/[0-9a-f-]{36}$"))
    assert "global-buffer-overflow" in page.locator("pre.report").inner_text()

    first = wait_for_more_commands(page, 0)
    page.evaluate("window.__probe = 42")
    grown = wait_for_more_commands(page, first)
    assert page.evaluate("window.__probe") == 42, "the page reloaded instead of streaming"
    assert page.locator("#status .badge").inner_text() == "running"
    assert "AddressSanitizer" in page.locator("#commands > li").first.text_content()
    assert grown >= 2
    wait_for_more_commands(page, 2)
    page.wait_for_timeout(300)
    shoot(page, "03-task-running", full_page=False)
    return page.url.rsplit("/", 1)[-1]


def read_result(page, shoot) -> None:
    """Once the task ends: scores, the submission against the ground truth, the source."""
    page.wait_for_selector("#scores", timeout=120_000)
    assert page.locator("#status .badge").inner_text() == "completed"
    rows = page.locator("#submission tbody tr")
    assert rows.count() == 2
    assert "✗ miss" in rows.nth(0).inner_text()  # the crash site is not the fix
    assert rows.nth(1).locator("td.hit").count() == 3  # file, function and line all hit
    assert "src/inflate.c" in page.locator("#ground-truth").inner_text()
    assert "found by rank(s) 2" in page.locator("#explanation").inner_text()
    assert page.locator("pre.source .ln.gt.loc").count() >= 1  # the fix lines, in the source
    assert commands_shown(page) >= 6
    shoot(page, "04-task-ended")

    page.click("text=purple's trajectory")  # LLM messages, tool calls, tokens, cost per step
    # its page loaded before its #steps is read (the task page has a #steps of its own)
    page.wait_for_url(re.compile(r".*/ui/tasks/[0-9a-f-]{36}/trajectory$"))
    assert page.locator("#steps tbody tr").count() >= 6
    text = page.locator("#steps").inner_text()
    assert "run_bash_cmd" in text and "submit_localization" in text and "1200" in text
    shoot(page, "05-trajectory")


def failing_assessment(url: str) -> str:
    """An assessment whose purple is unreachable: an agent failure, counted apart from infra."""
    auth = {"authorization": f"Bearer {TOKEN}"}
    body = {"task_ids": ["arvo:900001"], "purple_url": "http://127.0.0.1:9"}
    run = web.post(f"{url}/assessments", json=body, headers=auth, timeout=30).json()
    deadline = time.monotonic() + 120
    while web.get(f"{url}/assessments/{run['id']}", headers=auth).json()["status"] == "running":
        assert time.monotonic() < deadline, "the assessment did not end"
        time.sleep(0.3)
    return run["id"]


def lists_and_plots(page, url: str, task_id: str, run_id: str, shoot) -> None:
    page.goto(f"{url}/ui/tasks")
    assert page.locator("#task-rows tr").count() == 2
    page.select_option("select[name=bug_class]", "global-buffer-overflow")
    page.click("form.filters button[type=submit]")
    # the click returns once the filtered page's navigation has begun; count its rows once loaded
    page.wait_for_url(re.compile(r".*/ui/tasks\?.*bug_class=global-buffer-overflow.*"))
    assert page.locator("#task-rows tr").count() == 1
    assert task_id[:8] in page.locator("#task-rows").inner_text()
    page.goto(f"{url}/ui/tasks?status=failed&run={run_id}")
    assert "900001" in page.locator("#task-rows").inner_text()
    page.goto(f"{url}/ui/tasks")
    shoot(page, "06-tasks")

    page.goto(f"{url}/ui")
    assert "infra 0 · agent 1" in page.locator("table.runs").inner_text()
    shoot(page, "07-runs")
    page.goto(f"{url}/ui/runs/none")
    images = page.locator(".plots img")
    assert images.count() == 4
    for i in range(4):
        images.nth(i).scroll_into_view_if_needed()
        page.wait_for_function(
            "img => img.complete && img.naturalWidth > 0", arg=images.nth(i).element_handle()
        )
    shoot(page, "08-run-plots")


def test_watch_a_task_live_then_read_its_result(
    start_green, llm, llm_purple, fixture_assets, page, shoot
):
    script_agent(llm, submission_for_900007(fixture_assets))
    purple = llm_purple()
    green = start_green(purple_url=purple.url, api_token=TOKEN)
    blocked: list[str] = []  # the dashboard works under its own Content-Security-Policy
    page.on("console", lambda m: blocked.append(m.text) if "Content Security" in m.text else None)

    log_in(page, green.url, shoot)
    task_id = start_and_watch(page, green.url, shoot)
    read_result(page, shoot)
    run_id = failing_assessment(green.url)
    lists_and_plots(page, green.url, task_id, run_id, shoot)
    assert blocked == []


def test_another_page_cannot_frame_the_dashboard(start_green, page, shoot):
    """A page on another port of the same host (the same site: the Strict session cookie goes
    along) frames the logged-in dashboard under a decoy; the browser refuses to show it."""
    green = start_green(api_token=TOKEN)
    page.goto(f"{green.url}/ui/login")
    page.fill("#token", TOKEN)
    page.click("form.stack button[type=submit]")
    page.wait_for_url(re.compile(r".*/ui$"))
    assert page.locator("form.start").count() == 1  # logged in: the runs page and its form

    html = f'<h1>win a prize</h1><iframe id="f" src="{green.url}/ui"></iframe>'
    decoy = Starlette(routes=[Route("/", lambda _: HTMLResponse(html))])

    refused: list[str] = []
    page.on("console", lambda m: refused.append(m.text) if "frame-ancestors" in m.text else None)
    with serve(decoy) as evil:
        page.goto(evil.url)
        page.wait_for_timeout(1500)
        shoot(page, "09-framed-refused")
        framed = [f for f in page.frames if f is not page.main_frame]
        assert framed, "the decoy has its frame"
        for frame in framed:
            assert frame.locator("form.start").count() == 0, "the dashboard showed in a frame"
    assert refused, "the browser gave no frame-ancestors refusal"
