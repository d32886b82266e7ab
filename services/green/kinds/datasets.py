"""The optional dataset capability of a task kind: list its ids, prefetch, verify, keep images.

A kind runs tasks with :class:`~services.green.kinds.base.TaskKind` alone. A kind that can also
prepare a real run offers :class:`OffersDatasets`: given green's context it returns its
:class:`DatasetSupport` (ids, prefetch, verify), and may also keep its task images under a
disk budget (:class:`ImageSupport`). Green reaches a kind's dataset work only through these
protocols (``services/green/assessments/dataset_tools.py``; REST ``/datasets/*``): a kind that offers none is
answered with a sentence naming it, and green stores every kind's verifications the same way.

All methods block (downloads, Docker): green calls them in threads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from services.sandbox.base import SandboxProvider

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from services.green.config import GreenSettings


class DatasetsUnavailable(RuntimeError):
    """The kind offers dataset tools, but not on this green (the sentence says what is missing,
    e.g. a local Docker engine)."""


@dataclass(frozen=True)
class DatasetContext:
    """What green gives a kind to build its dataset tools with."""

    settings: GreenSettings
    sandboxes: SandboxProvider
    """The provider task containers come from (verification runs its checks in such containers)."""
    engine: Engine
    """Green's database (a kind may keep its own figures there, e.g. when an image was used)."""


@dataclass
class Verification:
    """What a kind's check of one task found; green stores it per kind, id and image digest."""

    image: str
    image_digest: str
    """The image's content id (``sha256:...``) the checks ran on; ``unknown`` if none did."""
    verified: bool
    reason: str | None = None
    """Why it is not verified (None when it is)."""
    steps: list[dict[str, Any]] = field(default_factory=list)
    """Each check: name, ok, seconds, detail."""
    seconds: float = 0.0


@runtime_checkable
class DatasetSupport(Protocol):
    """A kind's dataset work; ids are the kind's own, already checked by its ``canonical``."""

    def ids(self) -> list[str] | None:
        """Every id the kind's source holds, in order; None when the source cannot list them
        (e.g. a remote HTTP folder)."""
        ...

    def prefetch(self, ref_id: str, dry_run: bool) -> dict[str, Any]:
        """Fetch what the task needs before a run (or, dry, say what and how large): a JSON
        object. Raises UnknownTask / AssetError (``services/green/kinds/errors.py``)."""
        ...

    def verify(self, ref_id: str) -> Verification:
        """Certify that the task can be judged (e.g. it reproduces, its fix holds); a task
        that is not gets its reason, never an exception for its own faults."""
        ...


@runtime_checkable
class ImageSupport(Protocol):
    """Optional, beside :class:`DatasetSupport`: the kind's task images under a disk budget."""

    def images(self) -> dict[str, Any]:
        """The budget, its use and the task images (least recently used first)."""
        ...

    def budget_status(self) -> dict[str, Any]:
        """The budget and its use, without the list of images (cheap: for /healthz)."""
        ...

    def enforce(self) -> list[str]:
        """Apply the budget now; the removed images."""
        ...

    def task_ended(self, image: str) -> None:
        """Called after every task green ran (of any kind) with its image; never raises."""
        ...


@runtime_checkable
class OffersDatasets(Protocol):
    """A kind (class instance) that offers dataset tools."""

    def datasets(self, context: DatasetContext) -> DatasetSupport:
        """The kind's dataset tools on this green (DatasetsUnavailable, with a sentence, when
        this green lacks what they need)."""
        ...
