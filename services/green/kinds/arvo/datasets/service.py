"""Green's dataset work behind the REST routes: verify, prefetch, list ids, the image budget.

Blocking (Docker, downloads): the routes call it in threads. Verifications are bounded by
GREEN_VERIFY_CONCURRENCY; the images green's own work is using are never removed by the budget.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import docker
import structlog
from sqlalchemy.engine import Engine

from services.green.config import GreenSettings
from services.green.kinds.arvo.assets import AssetSource, LocalAssetSource
from services.green.kinds.arvo.datasets import prefetch
from services.green.kinds.arvo.datasets.images import Engines, ImageBudget, image_digest
from services.green.kinds.arvo.datasets.splits import local_ids
from services.green.kinds.arvo.datasets.verify import TaskVerifier
from services.green.store.crud import ImageUseStore, VerificationStore
from services.green.store.models import TaskVerification
from services.sandbox.base import SandboxProvider

log = structlog.get_logger(__name__)


class Datasets:
    def __init__(
        self,
        settings: GreenSettings,
        assets: AssetSource,
        sandboxes: SandboxProvider,
        client: docker.DockerClient,
        engine: Engine,
        engines: Engines | None = None,
    ) -> None:
        """``client``: the engine prefetch and verification use; ``engines``: every engine the
        image budget keeps (default: that one)."""
        self.assets = assets
        self.client = client
        self.template = settings.image_template
        self.verifications = VerificationStore(engine)
        self.budget = ImageBudget(
            engines or (lambda: [("local", client)]),
            ImageUseStore(engine),
            settings.image_template,
            settings.image_budget_gb,
        )
        self.verifier = TaskVerifier(
            assets,
            sandboxes,
            settings.image_template,
            lambda image: image_digest(client, image),
            memory=settings.container_memory,
            cpus=settings.container_cpus,
            pids_limit=settings.container_pids,
            step_timeout_s=settings.verify_step_timeout_s,
        )
        self._slots = threading.BoundedSemaphore(settings.verify_concurrency)
        self._busy_lock = threading.Lock()
        self._busy: dict[str, int] = {}

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

    def verify(self, ref: str) -> TaskVerification:
        with self._slots, self._using(self.image(ref)):
            v = self.verifier.verify(ref)
            self.budget.touch(v.image)
            self.budget.enforce()  # while the image is still protected: keep what was verified
        return self.verifications.put(
            TaskVerification(
                ref=ref,
                image=v.image,
                image_digest=v.image_digest,
                verified=v.verified,
                reason=v.reason,
                steps=v.steps_dicts(),
                seconds=v.seconds,
            )
        )

    def prefetch(self, ref: str, dry_run: bool) -> dict:
        if dry_run:
            return prefetch.plan(self.assets, self.client, self.image(ref), ref)
        with self._using(self.image(ref)):
            result = prefetch.fetch(self.assets, self.client, self.image(ref), ref)
            self.budget.touch(self.image(ref))
            result["removed_images"] = self.budget.enforce()  # never the image just pulled
        return result

    def known_ids(self) -> list[str] | None:
        """The ids the asset source holds, when it can list them (a local folder); else None."""
        if isinstance(self.assets, LocalAssetSource):
            return local_ids(self.assets.root)
        return None

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


def make_datasets(settings: GreenSettings, orch, engine: Engine) -> Datasets | None:
    """The dataset tools of this green, hooked to the orchestrator's task ends (None without
    a Docker engine or the arvo kind)."""
    arvo = orch.kinds.get("arvo")
    client = getattr(orch.sandboxes, "client", None)
    if arvo is None or client is None or not hasattr(arvo, "assets"):
        return None
    engines = getattr(orch.sandboxes, "clients", None)  # a pool: the budget keeps each engine
    datasets = Datasets(settings, arvo.assets, orch.sandboxes, client, engine, engines)
    orch.task_end_hooks.append(datasets.task_ended)
    return datasets
