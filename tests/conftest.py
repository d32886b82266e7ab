"""Suite-wide rules.

With ``ARENA_STRICT=1`` (CI sets it), a Docker test that would be skipped because its engine,
compose or images are missing FAILS instead: on CI a green run must mean the real containers ran.
The same holds for browser tests (marker ``browser``) when Debian's chromium is missing.
Opt-in tests (marker ``llm``: ``make test-llm``) stay skipped unless asked for.
"""

from __future__ import annotations

import os

import pytest

STRICT = os.environ.get("ARENA_STRICT") == "1"
pytest_plugins = [
    "tests.support.postgres",  # the PostgreSQL cluster and ``database_url``
    "tests.support.parallel",  # several workers (pytest -n 4 --dist loadscope): by module
]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report = outcome.get_result()
    opt_in = "llm" in item.keywords  # make test-llm: skipped unless asked for, strict or not
    if (
        STRICT
        and report.skipped
        and not opt_in
        and ("docker" in item.keywords or "browser" in item.keywords)
    ):
        what = " and ".join(m for m in ("docker", "browser") if m in item.keywords)
        report.outcome = "failed"
        report.longrepr = (
            f"ARENA_STRICT: a {what} test was skipped: {call.excinfo.value if call.excinfo else ''}"
        )
