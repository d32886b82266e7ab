"""Two real green processes on one PostgreSQL database, started at the same instant on an empty
database, ten times: both serve /healthz and the schema is at head (no create_all race)."""

from __future__ import annotations

import threading

import pytest

from services.green.store.db import MIGRATIONS
from services.shared.db import connect_engine
from services.shared.migrate import current, head
from tests.integration.helpers import OPERATOR_TOKEN
from tests.support import web
from tests.support.servers import ServiceProcess, free_port

pytestmark = [pytest.mark.docker, pytest.mark.slow]


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


def test_two_replicas_started_together_on_empty_postgres_ten_times(
    green_settings, postgres, tmp_path
):
    for round_ in range(10):
        url = postgres.new_database(f"replicas{round_}")
        replicas = [
            ServiceProcess(
                "services.green",
                free_port(),
                green_env(green_settings, url, f"replica-{round_}-{i}"),
                tmp_path / f"green-{round_}-{i}.out",
            )
            for i in range(2)
        ]
        try:
            errors = start_together(replicas)
            assert errors == [], f"round {round_}: {errors}"
            for replica in replicas:
                health = web.get(f"{replica.url}/healthz", timeout=10)
                assert health.status_code == 200, f"round {round_}: {health.text}"
            engine = connect_engine(url)
            assert current(engine) == head(MIGRATIONS)
            engine.dispose()
        finally:
            for replica in replicas:
                replica.stop()
