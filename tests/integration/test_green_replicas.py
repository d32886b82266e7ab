"""Green replicas starting together on one empty PostgreSQL database.

Ten rounds of two real processes that run green's start-up migration (``make_engine``, what
``python -m services.green`` calls before it serves) at the same instant on an empty database: both
succeed and the schema is at head (no ``create_all`` race). Then two whole green processes,
started together on an empty database: both serve ``/healthz``. The race is in the migration, so
the rounds run only that, in processes forked from one that has imported green: each pair is
released by one closed pipe, closer together than two interpreters that each import green first
(0.7 s of CPU a process), and the ten rounds import it once. The threads of one process race it
in ``tests/store/test_migrations.py``."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from services.green.store.db import MIGRATIONS
from services.shared.db import connect_engine
from services.shared.migrate import current, head
from tests.integration.helpers import OPERATOR_TOKEN
from tests.support import web
from tests.support.servers import REPO, ServiceProcess, free_port

pytestmark = [pytest.mark.docker, pytest.mark.slow]

RACE = """
import os, sys, traceback
from services.green.store.db import make_engine

for round_, url in enumerate(sys.argv[1:]):
    go_r, go_w = os.pipe()
    racers = []
    for _ in range(2):
        pid = os.fork()
        if pid == 0:  # a racer: its own process, its own connections
            os.close(go_w)
            os.read(go_r, 1)  # end of file for both at once, when the parent closes its end
            try:
                make_engine(url).dispose()
            except BaseException:
                traceback.print_exc()
                os._exit(1)
            os._exit(0)
        racers.append(pid)
    os.close(go_r)
    os.close(go_w)
    codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in racers]
    print(f"round {round_}: {codes}", flush=True)
"""
"""Each argument a database: two processes forked from this one migrate it at the same instant."""


def green_env(settings, database_url: str, name: str) -> dict[str, str]:
    return {
        "GREEN_ASSET_SOURCE": settings.asset_source,
        "GREEN_IMAGE_TEMPLATE": settings.image_template,
        "GREEN_DATABASE_URL": database_url,
        "GREEN_LOG_DIR": str(settings.log_dir),
        "GREEN_ASSET_CACHE_DIR": str(settings.asset_cache_dir),
        "GREEN_INSTANCE_NAME": name,
        "GREEN_API_TOKEN": OPERATOR_TOKEN,
    }


def at_head(url: str) -> bool:
    engine = connect_engine(url)
    try:
        return current(engine) == head(MIGRATIONS)
    finally:
        engine.dispose()


def test_two_processes_migrating_together_on_empty_postgres_ten_times(postgres):
    urls = [postgres.new_database(f"migrate{round_}") for round_ in range(10)]
    proc = subprocess.run(
        [sys.executable, "-c", RACE, *urls],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rounds = proc.stdout.splitlines()
    assert rounds == [f"round {i}: [0, 0]" for i in range(10)], proc.stdout + proc.stderr
    for round_, url in enumerate(urls):
        assert at_head(url), f"round {round_}"


def start_together(replicas: list[ServiceProcess]) -> list[BaseException]:
    barrier = threading.Barrier(len(replicas))
    errors: list[BaseException] = []

    def start(replica: ServiceProcess) -> None:
        try:
            barrier.wait()
            replica.start(timeout=90)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=start, args=(r,)) for r in replicas]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return errors


def test_two_replicas_started_together_on_empty_postgres_both_serve(
    green_settings, postgres, tmp_path
):
    url = postgres.new_database("replicas")
    replicas = [
        ServiceProcess(
            "services.green",
            free_port(),
            green_env(green_settings, url, f"replica-{i}"),
            tmp_path / f"green-{i}.out",
        )
        for i in range(2)
    ]
    try:
        assert start_together(replicas) == []
        for replica in replicas:
            health = web.get(f"{replica.url}/healthz", timeout=10)
            assert health.status_code == 200, health.text
        assert at_head(url)
    finally:
        for replica in replicas:
            replica.stop()
