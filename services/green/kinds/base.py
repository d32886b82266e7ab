"""The task-kind seam: what a kind (ARVO, SWE-bench, ...) provides to green's lifecycle."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from services.sandbox.base import Sandbox, SandboxProvider
from services.shared.protocol import TaskAssignment, TaskPaths

if TYPE_CHECKING:
    from services.green.config import GreenSettings
    from services.shared.outcome import TaskOutcome


@runtime_checkable
class TaskPlan(Protocol):
    """What a kind prepared for one task on green's side (never sent to the agent as such)."""

    image: str
    """The task container's image."""
    paths: TaskPaths
    """Where things are inside the container (told to the agent)."""
    workdir: str
    """Where the agent's commands run."""
    log_key: str
    """The per-task log file name (``<kind>_<id>``, e.g. ``arvo_10055``)."""

    async def populate(self, sandbox: Sandbox) -> None:
        """Put the agent's workspace into a fresh container (through the Docker API)."""
        ...

    def wrap(self, command: str) -> str:
        """The agent's command as the container must run it (e.g. with an environment
        activated first); the command itself is what is logged and stored."""
        ...

    def describe(self, task: TaskAssignment) -> str:
        """The task description the agent reads first."""
        ...

    async def read_submission(self, sandbox: Sandbox) -> tuple[dict[str, Any] | None, list[str]]:
        """Read and validate what the agent submitted: (submission, []) or (None, errors)."""
        ...

    async def score(self, submission: dict[str, Any] | None) -> dict[str, Any]:
        """Score a valid submission (None: no valid submission, every metric 0). May take
        long (e.g. run tests in a fresh container); CPU work goes to a thread, not the loop."""
        ...

    def ground_truth(self) -> dict[str, Any] | None:
        """What the answer is judged against, stored with the task (hidden until it ends)."""
        ...


@runtime_checkable
class TaskKind(Protocol):
    """A task family green can host. What a kind may offer beyond running tasks is optional,
    each capability its own protocol: dataset tools (:mod:`.datasets` ``OffersDatasets``) and a
    report for the dashboard (:mod:`.report` ``OffersReports``). Errors: :mod:`.errors`."""

    name: str
    """The prefix of task ids: ``arvo`` in ``arvo:10055``."""
    assignment: type[TaskAssignment]
    """The data part purple receives (:class:`RcaTask`, :class:`SweTask`)."""

    def canonical(self, ref_id: str) -> str:
        """Validate the syntax of an id within the kind and return its canonical form
        (ValueError, with a sentence, if bad). A static method: no settings needed."""
        ...

    def check(self, ref_id: str) -> None:
        """Raise UnknownTask when the source has no such task. May block (downloads)."""
        ...

    def prepare(self, ref_id: str) -> TaskPlan:
        """Fetch and check everything the task needs. May block."""
        ...

    def aggregate(self, outcomes: Iterable[TaskOutcome]) -> dict[str, Any]:
        """Means over finished tasks of this kind (ValueError for a task not ended)."""
        ...


class KindClass(Protocol):
    """A registered kind's class (see :mod:`services.green.kinds.registry`)."""

    name: str

    def canonical(self, ref_id: str) -> str:
        """The id check of :meth:`TaskKind.canonical`, callable on the class."""
        ...

    def from_settings(self, settings: GreenSettings, sandboxes: SandboxProvider) -> TaskKind | None:
        """The kind as green's settings configure it; None when they do not enable it."""
        ...
