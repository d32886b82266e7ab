"""Browser tests of the dashboard: Debian's headless chromium driven by Playwright for Python.

The browser is the system's (/usr/bin/chromium, installed by scripts/ensure-chromium.sh);
Playwright's own browser download is never used. Without chromium the tests skip, and under
ARENA_STRICT=1 (CI) that skip is a failure. Screenshots go to build/artifacts/ui/.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from fixtures.catalog import REPO_ROOT
from tests.integration.conftest import (  # noqa: F401  (fixtures reused from the integration tests)
    analyst_url,
    docker_client,
    fixture_assets,
    green_database_url,
    green_settings,
    llm,
    llm_purple,
    scripted_purple,
    shared_log_run,
    start_green,
)

CHROMIUM = os.environ.get("ARENA_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = REPO_ROOT / "build" / "artifacts" / "ui"


@pytest.fixture(scope="module")
def browser():
    """Module-scoped: Playwright's sync API runs an event loop in the main thread while it is
    open, which would break later tests that call ``asyncio.run``."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no chromium at {CHROMIUM}; run scripts/ensure-chromium.sh")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser) -> Iterator:
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    page.set_default_timeout(20_000)
    yield page
    context.close()


@pytest.fixture
def shoot():
    """``shoot(page, name)`` saves a full-page screenshot as build/artifacts/ui/<name>.png."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)

    def take(page, name: str, full_page: bool = True) -> Path:
        path = ARTIFACTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=full_page)
        return path

    return take
