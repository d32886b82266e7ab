"""ARVO's dataset tools behind green's dataset protocol (``services/green/kinds/datasets.py``):
list ids, prefetch, verify, and the disk budget of task images.

Blocking (Docker, downloads): green calls it in threads and bounds verifications with
GREEN_VERIFY_CONCURRENCY; the images this work is using are never removed by the budget.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import docker
import structlog

from services.green.kinds.arvo.assets import AssetSource, LocalAssetSource
from services.green.kinds.arvo.datasets import prefetch
from services.green.kinds.arvo.datasets.images import Engines, ImageBudget, image_digest
from services.green.kinds.arvo.datasets.splits import local_ids
from services.green.kinds.arvo.datasets.verify import TaskVerifier
from services.green.kinds.arvo.judge import Judge
from services.green.kinds.datasets import DatasetContext, DatasetsUnavailable, Verification
from services.green.store.crud import ImageUseStore

log = structlog.get_logger(__name__)


class ArvoDatasets:
    def __init__(
        self,
        context: DatasetContext,
        assets: AssetSource,
        client: docker.DockerClient,
        engines: Engines | None = None,
        judge: Judge | None = None,
    ) -> None:
        """``client``: the engine prefetch and verification use; ``engines``: every engine the
        image budget keeps (default: that one); ``judge``: the kind's."""
        settings = context.settings
        self.assets = assets
        self.client = client
        self.template = settings.image_template
        self.registry = settings.docker_registry
        self.budget = ImageBudget(
            engines or (lambda: [("local", client)]),
            ImageUseStore(context.engine),
            settings.image_template,
            settings.image_budget_gb,
        )
        self.verifier = TaskVerifier(
            assets,
            context.sandboxes,
            settings.image_template,
            lambda image: image_digest(client, image, registry=self.registry),
            memory=settings.container_memory,
            cpus=settings.container_cpus,
            pids_limit=settings.container_pids,
            step_timeout_s=settings.verify_step_timeout_s,
            judge=judge,
        )
        self._busy_lock = threading.Lock()
        self._busy: dict[str, int] = {}

    @classmethod
    def build(
        cls, context: DatasetContext, assets: AssetSource, judge: Judge | None = None
    ) -> ArvoDatasets:
        """On green's Docker engine (a pool: the budget keeps each engine)."""
        client = getattr(context.sandboxes, "client", None)
        if client is None:
            raise DatasetsUnavailable("they need green's Docker engine (GREEN_SANDBOX_PROVIDER)")
        return cls(context, assets, client, getattr(context.sandboxes, "clients", None), judge)

    def image(self, ref: str) -> str:
        return self.template.format(id=ref)

    @contextlib.contextmanager
    def _using(self, image: str) -> Iterator[None]:
        """Protect ``image`` from the budget while green's own work uses it."""
        with self._busy_lock:
            self._busy[image] = self._busy.get(image, 0) + 1
            self.budget.busy = set(self._busy)
        try:
            yield
        finally:
            with self._busy_lock:
                self._busy[image] -= 1
                if not self._busy[image]:
                    del self._busy[image]
                self.budget.busy = set(self._busy)
            self.budget.touch(image)

    def verify(self, ref: str) -> Verification:
        with self._using(self.image(ref)):
            v = self.verifier.verify(ref)
            self.budget.touch(v.image)
            self.budget.enforce()  # while the image is still protected: keep what was verified
        return Verification(
            image=v.image,
            image_digest=v.image_digest,
            verified=v.verified,
            reason=v.reason,
            steps=v.steps_dicts(),
            seconds=v.seconds,
        )

    def prefetch(self, ref: str, dry_run: bool) -> dict[str, Any]:
        if dry_run:
            return prefetch.plan(self.assets, self.client, self.image(ref), ref)
        with self._using(self.image(ref)):
            result = prefetch.fetch(self.assets, self.client, self.image(ref), ref, self.registry)
            self.budget.touch(self.image(ref))
            result["removed_images"] = self.budget.enforce()  # never the image just pulled
            if self.budget.deferred:
                result["budget_deferred"] = self.budget.deferred
        return result

    def ids(self) -> list[str] | None:
        """The ids the asset source holds, when it can list them (a local folder); else None."""
        if isinstance(self.assets, LocalAssetSource):
            return local_ids(self.assets.root)
        return None

    def images(self) -> dict[str, Any]:
        listed = self.budget.task_images()
        return {**self.budget.status().to_dict(), "task_images": [vars(i) for i in listed]}

    def budget_status(self) -> dict[str, Any]:
        return self.budget.status().to_dict()

    def enforce(self) -> list[str]:
        return self.budget.enforce()

    def task_ended(self, image: str) -> None:
        """After a task: note its image's use, then enforce the budget."""
        try:
            self.budget.touch(image)
            removed = self.budget.enforce()
        except Exception:  # never let the budget break a task's end; say why it did not run
            log.exception("images.budget_failed", image=image)
            return
        if removed:
            log.info("images.budget_enforced", after=image, removed=removed)
