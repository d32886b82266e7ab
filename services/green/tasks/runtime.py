"""What one task's run may touch of the process that runs it: :class:`TaskRuntime`.

The runner (:class:`services.green.tasks.run.TaskRun`) and the leak audit take this protocol, not
the :class:`~services.green.tasks.orchestrator.Orchestrator` that satisfies it, so the lifecycle's
inside depends on a short list of the process's parts and never on the process itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol

from services.green.config import GreenSettings
from services.green.store.crud import TaskStore
from services.green.store.models import Task
from services.green.store.offloop import Database
from services.green.tasks.endings import Endings
from services.green.tasks.live_task import LiveTask
from services.green.tasks.purple_link import PurpleLink
from services.sandbox.base import SandboxProvider
from services.sandbox.janitor import Janitor


class TaskRuntime(Protocol):
    """The process's parts a task's run uses: settings, the store and its thread, the sandboxes,
    purple, the writer of ends, and how it gives its slot back."""

    settings: GreenSettings
    db: Database
    store: TaskStore
    sandboxes: SandboxProvider
    janitor: Janitor
    """Removes a container in the background when its removal failed."""
    endings: Endings
    """Writes a task's end (and retries it while the database is away)."""
    wakeup: asyncio.Event
    """Set when a slot may have come free: the dispatcher looks at the queue again."""
    purple_link: Callable[[str], PurpleLink]
    """The conversation with purple at a URL."""

    @property
    def stopping(self) -> bool:
        """The process is shutting down (an ending without a submission is then green's)."""

    async def io(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run a blocking call (Docker, files) in green's thread pool."""

    async def get(self, task_id: str) -> Task:
        """The task's row as stored."""

    def forget(self, live: LiveTask, *, sweep: bool = False) -> None:
        """The run has ended: free its slot (``sweep``: look for a container it may have left)."""
