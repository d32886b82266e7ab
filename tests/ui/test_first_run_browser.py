"""The dashboard after a newcomer's first runs, in a real browser.

An assessment started over A2A (``Task ID: arvo:<n>``) is on the runs page, has its own page, and
its task links to it; every command of a long task can be read on the page (no inner scroll box
hiding them); the trajectory page links only to green, never to purple's own address; the
submission table names each column once; and the login survives a restart of green.
"""

from __future__ import annotations

import re

import pytest

from fixtures.catalog import get_task
from tests.integration.helpers import rpc, text_message
from tests.support import web
from tests.support.scripted_purple import Script

pytestmark = [pytest.mark.docker, pytest.mark.browser]

TOKEN = "first-run-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
N_COMMANDS = 14


def _script() -> Script:
    t = get_task(900004)
    loc = {"file": t.fix_file, "function": t.fix_function, "line_start": 1, "line_end": 3}
    commands = [f"seq 1 {30 + i}" for i in range(N_COMMANDS)]  # ~30 lines of output each
    return Script(commands=commands, submissions=[{"locations": [loc]}])


def _a2a_assessment(green_url: str) -> tuple[str, str]:
    """(assessment id, task id) of a blocking A2A ``Task ID:`` request."""
    params = {"message": text_message("Task ID: arvo:900004"), "configuration": {"blocking": True}}
    body = rpc(green_url, "message/send", params, headers=AUTH).json()
    assert body["result"]["status"]["state"] == "completed", body
    (row,) = web.get(f"{green_url}/tasks", headers=AUTH, timeout=10).json()["items"]
    return row["assessment_id"], row["id"]


def _log_in(page, url: str) -> None:
    page.goto(f"{url}/ui/tasks")
    assert "/ui/login" in page.url
    page.fill("#token", TOKEN)
    page.click("form.stack button[type=submit]")
    page.wait_for_url(re.compile(r".*/ui/tasks$"))


def _assessment_is_listed_and_linked(page, url: str, aid: str, task_id: str, shoot) -> None:
    page.goto(f"{url}/ui")
    runs = page.locator("table.runs")
    assert aid[:8] in runs.inner_text(), "the A2A assessment is missing from the runs page"
    runs.locator(f"a[href='/ui/runs/{aid}']").first.click()
    page.wait_for_url(re.compile(rf".*/ui/runs/{aid}$"))
    assert page.locator("h1").first.inner_text() != "Not found"
    assert "900004" in page.locator("main").inner_text()
    shoot(page, "first-run-01-a2a-run")

    page.goto(f"{url}/ui/tasks")  # the task list's run link leads to the same page
    page.locator(f"#task-rows a[href='/ui/runs/{aid}']").click()
    page.wait_for_url(re.compile(rf".*/ui/runs/{aid}$"))
    assert page.locator("h1").first.inner_text() != "Not found"
    page.goto(f"{url}/ui/tasks/{task_id}")  # and so does the task's own page
    assert page.locator(f"a[href='/ui/runs/{aid}']").count() >= 1


def _every_command_is_readable(page, url: str, task_id: str, shoot) -> None:
    page.goto(f"{url}/ui/tasks/{task_id}")
    commands = page.locator("#commands > li")
    assert commands.count() >= N_COMMANDS
    page.click("#commands-box > summary")  # folded below the result once the task has ended
    for i in range(commands.count()):  # open every output: the list gets long
        page.locator("#commands > li details").nth(i).evaluate("d => d.open = true")
    sizes = page.locator("#commands").evaluate(
        "l => ({scroll: l.scrollHeight, client: l.clientHeight})"
    )
    assert sizes["scroll"] <= sizes["client"] + 1, f"an inner scroll box hides commands: {sizes}"
    last = commands.nth(N_COMMANDS - 1)  # the script's last command (the submission follows)
    last.scroll_into_view_if_needed()
    assert last.is_visible() and f"seq 1 {30 + N_COMMANDS - 1}" in last.inner_text()
    headers = page.locator("#submission thead th").all_inner_texts()
    assert len(headers) == len(set(headers)), f"a column is named twice: {headers}"
    shoot(page, "first-run-02-commands")


def _trajectory_links_stay_on_green(page, url: str, task_id: str, purple_url: str) -> None:
    page.goto(f"{url}/ui/tasks/{task_id}/trajectory")
    hrefs = page.locator("main a").evaluate_all("as => as.map(a => a.href)")
    outside = [h for h in hrefs if not h.startswith(url)]
    assert not outside, f"links a browser may not reach: {outside}"
    json_link = page.locator("a", has_text="through green")
    if json_link.count():  # purple answered: its trajectory through green, as JSON
        r = page.request.get(url + json_link.get_attribute("href"))
        assert r.status == 200 and "steps" in r.json()
        assert purple_url.split("//")[1] in page.locator("main").inner_text()  # shown as text


def test_a2a_run_on_the_dashboard_and_login_survives_a_restart(
    start_green, scripted_purple, page, shoot
):
    purple_url, _ = scripted_purple(_script())
    green = start_green(purple_url=purple_url, api_token=TOKEN)
    aid, task_id = _a2a_assessment(green.url)
    assert web.get(f"{green.url}/assessments/{aid}", headers=AUTH).status_code == 200

    _log_in(page, green.url)
    _assessment_is_listed_and_linked(page, green.url, aid, task_id, shoot)
    _every_command_is_readable(page, green.url, task_id, shoot)
    _trajectory_links_stay_on_green(page, green.url, task_id, purple_url)

    green.stop()  # the same green again (same port, database and token): still logged in
    again = start_green(purple_url=purple_url, api_token=TOKEN)
    assert again.url == green.url
    page.goto(f"{again.url}/ui/tasks")
    assert "/ui/login" not in page.url, "the restart logged the browser out"
    assert task_id[:8] in page.locator("#task-rows").inner_text()
