"""Green's dataset tools over every kind that offers them: ids, prefetch, verify, task images,
and the stored verifications.

Kind-neutral: each kind's own work is behind the protocol of ``services/green/kinds/datasets.py``
(a kind that offers none is answered with :class:`NotOffered`, a sentence naming it). Green
stores every kind's verifications alike (per kind, id and image digest), bounds them with
GREEN_VERIFY_CONCURRENCY, and hooks each image budget to the end of every task.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from sqlalchemy.engine import Engine

from services.green.config import GreenSettings
from services.green.kinds.base import TaskKind
from services.green.kinds.datasets import (
    DatasetContext,
    DatasetsUnavailable,
    DatasetSupport,
    ImageSupport,
    OffersDatasets,
)
from services.green.store.crud import VerificationStore
from services.green.store.models import TaskVerification
from services.sandbox.base import SandboxProvider
from services.shared.task_ref import TaskRef


class NotOffered(LookupError):
    """This green cannot do that for the kind; ``status`` is the HTTP answer (404: the kind does
    not offer it or is not served; 503: it does, but this green lacks what it needs)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class DatasetTools:
    def __init__(
        self, kinds: Mapping[str, TaskKind], context: DatasetContext, verify_concurrency: int = 1
    ) -> None:
        self.kinds = set(kinds)
        self.verifications = VerificationStore(context.engine)
        self._support: dict[str, DatasetSupport] = {}
        self._unavailable: dict[str, str] = {}
        for name, kind in kinds.items():
            if not isinstance(kind, OffersDatasets):
                continue
            try:
                self._support[name] = kind.datasets(context)
            except DatasetsUnavailable as exc:
                self._unavailable[name] = str(exc)
        self._slots = threading.BoundedSemaphore(max(1, verify_concurrency))

    def offered(self) -> list[str]:
        """The kinds whose dataset tools this green has."""
        return sorted(self._support)

    def support(self, kind: str) -> DatasetSupport:
        """The kind's dataset tools, or NotOffered with a sentence naming the kind."""
        if kind in self._support:
            return self._support[kind]
        if kind in self._unavailable:
            raise NotOffered(503, f"the {kind} kind's dataset tools: {self._unavailable[kind]}")
        if kind not in self.kinds:
            raise NotOffered(404, f"this green does not serve the task kind {kind!r}")
        raise NotOffered(
            404, f"the task kind {kind!r} offers no dataset tools (ids, prefetch, verify)"
        )

    def images(self, kind: str) -> ImageSupport:
        """The kind's task-image budget, or NotOffered."""
        support = self.support(kind)
        if not isinstance(support, ImageSupport):
            raise NotOffered(404, f"the task kind {kind!r} keeps no task images under a budget")
        return support

    def ids(self, kind: str) -> list[str] | None:
        return self.support(kind).ids()

    def prefetch(self, ref: TaskRef, dry_run: bool) -> dict[str, Any]:
        return self.support(ref.kind).prefetch(ref.id, dry_run)

    def verify(self, ref: TaskRef) -> TaskVerification:
        """Run the kind's checks (at most GREEN_VERIFY_CONCURRENCY at once) and store the result."""
        support = self.support(ref.kind)
        with self._slots:
            v = support.verify(ref.id)
        return self.verifications.put(
            TaskVerification(
                kind=ref.kind,
                ref=ref.id,
                image=v.image,
                image_digest=v.image_digest,
                verified=v.verified,
                reason=v.reason,
                steps=v.steps,
                seconds=v.seconds,
            )
        )

    def latest(self, refs: Iterable[TaskRef]) -> dict[TaskRef, TaskVerification]:
        """The newest stored verification of each task that has one (any kind)."""
        by_kind: dict[str, set[str]] = {}
        for ref in refs:
            by_kind.setdefault(ref.kind, set()).add(ref.id)
        found: dict[TaskRef, TaskVerification] = {}
        for kind, ids in by_kind.items():
            for ref_id, row in self.verifications.latest(ids, kind).items():
                found[TaskRef(kind, ref_id)] = row
        return found

    def task_end_hooks(self) -> list[Callable[[str], None]]:
        """What each image budget does after a task ends."""
        return [s.task_ended for s in self._support.values() if isinstance(s, ImageSupport)]


def make_dataset_tools(
    settings: GreenSettings,
    kinds: Mapping[str, TaskKind],
    sandboxes: SandboxProvider,
    engine: Engine,
) -> DatasetTools:
    """The dataset tools of this green's kinds (their hooks for the orchestrator's task ends are
    :meth:`DatasetTools.task_end_hooks`)."""
    context = DatasetContext(settings=settings, sandboxes=sandboxes, engine=engine)
    return DatasetTools(kinds, context, settings.verify_concurrency)
