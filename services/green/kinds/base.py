"""The task-kind seam: what a kind (ARVO, SWE-bench, ...) provides to green's lifecycle."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

from services.green.kinds.traits import KindTraits
from services.sandbox.base import Sandbox, SandboxProvider
from services.shared.protocol import TaskAssignment, TaskPaths

if TYPE_CHECKING:
    from services.green.config import GreenSettings
    from services.shared.outcome import TaskOutcome


S = TypeVar("S", bound=BaseModel)
"""The kind's submission (ARVO: ``LocJson``)."""
R = TypeVar("R", bound=BaseModel)
"""The kind's score of one task (ARVO: ``ArvoScore``)."""
G = TypeVar("G", bound=BaseModel)
"""The kind's ground truth (ARVO: ``GroundTruth``)."""


def stored(value: BaseModel | None) -> dict[str, Any] | None:
    """A plan's submission, score or ground truth as the store and the API keep it (JSON, the
    models' aliases as keys): the one place they become dicts."""
    return None if value is None else value.model_dump(mode="json", by_alias=True)


@runtime_checkable
class TaskPlan(Protocol[S, R, G]):
    """What a kind prepared for one task on green's side (never sent to the agent as such).

    Typed by the kind's own pydantic models of a submission (``S``), a score (``R``) and the
    ground truth (``G``); green's lifecycle passes them along as they are and only the store's
    edge turns them into JSON (:func:`stored`).

    Optional: ``offers`` (the requests beyond execute and submit the task serves, told to the
    agent in ``TaskAssignment.offers``) and, for ``run_poc``, ``async run_poc(task_id) ->
    CommandResult`` (ARVO's locate conditions, :mod:`.arvo.conditions`).
    """

    image: str
    """The task container's image."""
    paths: TaskPaths
    """Where things are inside the container (told to the agent)."""
    workdir: str
    """Where the agent's commands run."""
    writable: tuple[str, ...]
    """What the agent's commands may write besides their home and ``/tmp`` (they run as a uid of
    their own; these paths become its own before its first command): ARVO's ``/workspace``; a
    kind whose agent edits the project names its tree."""
    log_key: str
    """The per-task log file name (``<kind>_<id>``, e.g. ``arvo_10055``)."""

    async def populate(self, sandbox: Sandbox) -> None:
        """Put the agent's workspace into a fresh container (through the Docker API, and
        ``sandbox.setup`` for green's own commands as root: before the agent's first command)."""
        ...

    def wrap(self, command: str) -> str:
        """The agent's command as the container must run it (e.g. with an environment
        activated first); the command itself is what is logged and stored."""
        ...

    def describe(self, task: TaskAssignment) -> str:
        """The task description the agent reads first."""
        ...

    async def read_submission(self, sandbox: Sandbox) -> tuple[S | None, list[str]]:
        """Read and validate what the agent submitted: (submission, []) or (None, errors)."""
        ...

    async def score(self, submission: S | None) -> R:
        """Score a valid submission (None: no valid submission, every metric 0). May take
        long (e.g. run tests in a fresh container); CPU work goes to a thread, not the loop."""
        ...

    def ground_truth(self) -> G | None:
        """What the answer is judged against, stored with the task (hidden until it ends)."""
        ...


@runtime_checkable
class TaskKind(Protocol):
    """A task family green can host. What a kind may offer beyond running tasks is optional,
    each capability its own protocol: dataset tools (:mod:`.datasets` ``OffersDatasets``) and a
    report for the dashboard (:mod:`.report` ``OffersReports``). Errors: :mod:`.errors`."""

    name: str
    """The prefix of task ids: ``arvo`` in ``arvo:10055``."""
    traits: KindTraits
    """What it declares of itself: metrics, what of its scores anyone may see, its scoring
    version, its bugs (a class attribute)."""
    assignment: type[TaskAssignment]
    """The data part purple receives (:class:`RcaTask`, :class:`SweTask`)."""

    def canonical(self, ref_id: str) -> str:
        """Validate the syntax of an id within the kind and return its canonical form
        (ValueError, with a sentence, if bad). A static method: no settings needed."""
        ...

    def check(self, ref_id: str) -> None:
        """Raise UnknownTask when the source has no such task. May block (downloads)."""
        ...

    def prepare(self, ref_id: str) -> TaskPlan[Any, Any, Any]:
        """Fetch and check everything the task needs. May block."""
        ...

    def aggregate(self, outcomes: Iterable[TaskOutcome]) -> dict[str, Any]:
        """Means over finished tasks of this kind (ValueError for a task not ended)."""
        ...


class KindClass(Protocol):
    """A registered kind's class (see :mod:`services.green.kinds.registry`)."""

    name: str
    traits: KindTraits

    def canonical(self, ref_id: str) -> str:
        """The id check of :meth:`TaskKind.canonical`, callable on the class."""
        ...

    def from_settings(self, settings: GreenSettings, sandboxes: SandboxProvider) -> TaskKind | None:
        """The kind as green's settings configure it; None when they do not enable it."""
        ...
