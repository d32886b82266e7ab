"""A private PostgreSQL server for the test session, and the ``database_url`` fixture that runs a
test on SQLite and on PostgreSQL; ``own_postgres`` is a cluster of one test's own, whose server
the test may stop and start again (``stop_server``/``start_server``: a database outage).

The cluster is Debian's ``postgresql`` package (scripts/ensure-postgres.sh installs it): ``initdb``
into a temp dir, ``pg_ctl start`` on 127.0.0.1:<free port> with its unix socket in that dir, one
fresh database per test, stopped at the end of the session. PostgreSQL refuses to run as root, so
as root the server runs as the ``postgres`` OS user (``runuser``). Without the package the
PostgreSQL half of a test skips, and under ``ARENA_STRICT=1`` (CI) that is a failure.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.servers import free_port

STRICT = os.environ.get("ARENA_STRICT") == "1"


def pg_bin(name: str) -> str | None:
    """A PostgreSQL server program: on PATH, or in Debian's versioned directory."""
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


class PostgresCluster:
    """One throw-away cluster: ``start()``, ``new_database()`` -> URL, ``stop()``."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="arena-pg-"))
        self.data = self.root / "data"
        self.port = free_port()
        self.as_root = os.geteuid() == 0
        self.user = "postgres"

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        cmd = ["runuser", "-u", "postgres", "--", *args] if self.as_root else list(args)
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=check)

    def start(self) -> PostgresCluster:
        initdb, pg_ctl = pg_bin("initdb"), pg_bin("pg_ctl")
        if not (initdb and pg_ctl):
            raise RuntimeError("PostgreSQL is not installed (run scripts/ensure-postgres.sh)")
        if self.as_root:
            shutil.chown(self.root, user="postgres")
        self.root.chmod(0o700)
        init = [initdb, "-D", str(self.data), "-U", self.user, "--auth=trust", "-E", "UTF8"]
        self._run(*init, "--no-sync")
        self.start_server()
        return self

    def start_server(self) -> None:
        """Start the server of the initialised cluster (again, after :meth:`stop_server`)."""
        pg_ctl = pg_bin("pg_ctl")
        assert pg_ctl is not None
        options = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=300"
        )
        proc = self._run(
            pg_ctl, "-D", str(self.data), "-o", options, "-l", str(self.root / "server.log"),
            "-w", "-t", "60", "start", check=False,
        )  # fmt: skip
        if proc.returncode != 0:
            log = (
                (self.root / "server.log").read_text()
                if (self.root / "server.log").exists()
                else ""
            )
            raise RuntimeError(f"pg_ctl start failed: {proc.stderr}{proc.stdout}\n{log[-2000:]}")

    def stop_server(self, mode: str = "fast") -> None:
        """Stop the server, keeping the cluster (a database outage: ``fast`` disconnects every
        client at once, as a crash or a restart does). :meth:`start_server` brings it back."""
        pg_ctl = pg_bin("pg_ctl")
        assert pg_ctl is not None
        self._run(pg_ctl, "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://{self.user}@127.0.0.1:{self.port}/{database}"

    def new_database(self, prefix: str = "t") -> str:
        """A fresh, empty database; returns its SQLAlchemy URL."""
        import psycopg

        name = f"{prefix}_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url().replace("+psycopg", ""), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        pg_ctl = pg_bin("pg_ctl")
        if pg_ctl and self.data.exists():
            self._run(pg_ctl, "-D", str(self.data), "-m", "immediate", "-w", "stop", check=False)
        shutil.rmtree(self.root, ignore_errors=True)


def _started_cluster() -> Iterator[PostgresCluster]:
    """A started cluster, stopped afterwards (skips without the package; fails under
    ARENA_STRICT)."""
    cluster = PostgresCluster()
    try:
        cluster.start()
    except Exception as exc:
        cluster.stop()
        message = f"PostgreSQL could not start ({exc}); run scripts/ensure-postgres.sh"
        if STRICT:
            pytest.fail(f"ARENA_STRICT: {message}")
        pytest.skip(message)
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresCluster]:
    """The session's PostgreSQL cluster."""
    yield from _started_cluster()


@pytest.fixture
def own_postgres() -> Iterator[PostgresCluster]:
    """A cluster of this test's own, for tests that stop and restart the server (an outage must
    not reach the other tests' databases)."""
    yield from _started_cluster()


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty database on each backend: a SQLite file, or a fresh database on the cluster."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/db.sqlite"
    return request.getfixturevalue("postgres").new_database()
