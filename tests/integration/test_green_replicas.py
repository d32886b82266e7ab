"""Green replicas starting together on one empty PostgreSQL database.

Ten rounds of two real processes that run green's start-up migration (``make_engine``, what
``python -m services.green`` calls before it serves) at the same instant on an empty database: both
succeed and the schema is at head (no ``create_all`` race). Then two whole green processes,
started together on an empty database: both serve ``/healthz``. The race is in the migration, so
the rounds run only that (0.7 s of CPU a process against 2 s for a whole green); the threads of
one process race it in ``tests/store/test_migrations.py``."""

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

MIGRATE = (
    "import sys\n"
    "from services.green.store.db import make_engine\n"
    "make_engine(sys.argv[1]).dispose()\n"
)


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
    for round_ in range(10):
        url = postgres.new_database(f"migrate{round_}")
        processes = [
            subprocess.Popen(
                [sys.executable, "-c", MIGRATE, url],
                cwd=REPO,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
            )
            for _ in range(2)
        ]
        outputs = [p.communicate(timeout=120)[0].decode(errors="replace") for p in processes]
        codes = [p.returncode for p in processes]
        assert codes == [0, 0], f"round {round_}: {codes}\n" + "\n".join(outputs)
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
