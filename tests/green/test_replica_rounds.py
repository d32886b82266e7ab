"""services/green/tasks/replicas.py: a round of the replica's work that fails is retried by the next;
the log says which kind of failure it was. A database away or locked for a moment is expected:
one warning line, no traceback (each round logged an error with a full traceback before, every
poll while a lock lasted). Anything else keeps its traceback."""

from __future__ import annotations

import asyncio

from sqlalchemy.exc import OperationalError
from structlog.testing import capture_logs

from services.green.store.errors import DatabaseUnavailable
from services.green.tasks import replicas
from services.shared.aio import cancel_and_wait


async def _rounds(error: Exception) -> list[dict]:
    async def work() -> None:
        raise error

    def failed() -> list[dict]:
        return [e for e in logs if e["event"] == "replica.round_failed"]

    with capture_logs() as logs:
        rounds = asyncio.create_task(replicas._every(0.01, work))
        async with asyncio.timeout(30):  # two rounds: the one that failed and the next
            while len(failed()) < 2:
                await asyncio.sleep(0.01)
        await cancel_and_wait(rounds)
    return failed()


async def test_a_database_away_fails_a_round_with_a_warning_and_no_traceback() -> None:
    for error in (
        DatabaseUnavailable("the database did not answer claim within 1.5 s"),
        OperationalError("UPDATE task_contexts", {}, Exception("database is locked")),
    ):
        failed = await _rounds(error)
        assert failed, error
        assert {e["log_level"] for e in failed} == {"warning"}
        assert not any("exc_info" in e for e in failed)
        assert failed[0]["work"] == "work" and "database" in failed[0]["error"]


async def test_any_other_failure_of_a_round_is_an_error_with_its_traceback() -> None:
    failed = await _rounds(KeyError("a bug of green's"))
    assert failed and {e["log_level"] for e in failed} == {"error"}
    assert all(isinstance(e["exc_info"], KeyError) for e in failed)
