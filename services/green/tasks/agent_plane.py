"""The agent plane whichever protocol carries it (A2A's ``execute``/``submit``/``run_poc``, the
MCP tools at ``/mcp``): which running task a bearer token names, and the one place a request's
failure becomes the sentence the agent reads. The requests themselves are :class:`LiveTasks`'s
(one command at a time per task, its bounds and its records), never a copy."""

from __future__ import annotations

import secrets
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TypeVar

from services.green.store.errors import AGENT_SENTENCE, STORAGE_ERRORS
from services.green.tasks.live_task import LiveTask, LiveTasks, RequestRefused, TaskNotFound
from services.shared.logging import get_logger

log = get_logger("services.green.tasks.agent_plane")

T = TypeVar("T")


@dataclass(frozen=True)
class Refused:
    """A request green did not serve, with the one sentence the agent is told."""

    why: str


async def answer(tasks: LiveTasks, task_id: str, request: Awaitable[T]) -> T | Refused:
    """The answer to an agent's request of task ``task_id``, or its refusal: the limits' and the
    token's own sentence; a failure of green's database or of green itself is one generic
    sentence (the detail goes to green's log, never to the agent)."""
    try:
        return await request
    except (RequestRefused, TaskNotFound) as exc:
        why = f"unknown task {task_id}" if isinstance(exc, TaskNotFound) else str(exc)
        log.info("request.refused", context_id=task_id, reason=why)
    except STORAGE_ERRORS as exc:  # e.g. reading an ended task: infra, never the agent's
        log.error("request.storage_failed", context_id=task_id, error=str(exc))
        if (live := tasks.get(task_id)) is not None:
            live.storage_broke(exc, "request")
        why = AGENT_SENTENCE
    except Exception:  # green's own bug: the agent learns nothing of green's internals
        log.exception("request.failed", context_id=task_id)
        why = AGENT_SENTENCE
    return Refused(why)


def task_of_token(tasks: LiveTasks, token: str) -> LiveTask | None:
    """The task this process holds whose token is ``token`` (each compared in constant time);
    None for any other string. Whether it is running is :meth:`LiveTasks.running`'s to say."""
    given = token.encode("utf-8", "replace")
    found = None
    for live in tasks:
        if secrets.compare_digest(given, live.token.encode()):
            found = live
    return found
