"""The comparison page in a real browser: check two runs on the runs page, press compare, read
the paired differences; the page raises no Content-Security-Policy violation."""

from __future__ import annotations

import re

import pytest

from services.green.store.crud import TaskStore
from services.green.store.db import make_engine
from tests.ui.test_ui_compare import _prov, _run

pytestmark = [pytest.mark.docker, pytest.mark.browser]

TOKEN = "ui-compare-token"


def test_check_two_runs_and_compare_them(start_green, green_settings, page, shoot):
    green = start_green(api_token=TOKEN)
    engine = make_engine(green_settings.database_url)
    store = TaskStore(engine)
    refs = ["920001", "920002", "920003"]
    older = _run(engine, store, [(r, 0.0, _prov()) for r in refs])
    newer = _run(engine, store, [(r, 1.0, _prov()) for r in refs])
    violations: list[str] = []
    page.on(
        "console",
        lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None,
    )
    page.goto(f"{green.url}/ui/login")
    page.fill("#token", TOKEN)
    page.click("form.stack button[type=submit]")
    page.wait_for_url(re.compile(r".*/ui$"))
    page.check(f'input[name=runs][value="{newer}"]')
    page.check(f'input[name=runs][value="{older}"]')
    page.click("text=Compare the checked runs")
    page.wait_for_url(re.compile(r".*/ui/compare\?.*"))
    shoot(page, "10-compare")
    assert "3 task(s) scored by both" in page.inner_text("main")
    row = page.locator("table.compare tr", has_text="file@1").inner_text()
    assert "+1.000" in row and "3 / 0 / 0" in row  # newer (checked first in page order) - older
    assert not violations, violations
