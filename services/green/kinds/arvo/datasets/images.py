"""Task images on the Docker engines: their digests and sizes, pulls, and the disk budget
(``GREEN_IMAGE_BUDGET_GB``, per engine) that removes the least recently used task images of an
engine once it is over it.

Task images are the ones whose tag matches ``GREEN_IMAGE_TEMPLATE`` (``n132/arvo:{id}-vul``).
Sizes are each image's full size as the engine reports it (layers shared between images are
counted once per image), so the real disk use is at most the figure shown. The last use of a
tag is one row for all engines and replicas (the database's ``imageuse``): an image used on one
engine is recent on every engine that holds it.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime

import docker
import docker.errors
import structlog

from services.green.store.crud import ImageUseStore
from services.sandbox.base import ImageNotFound, SandboxError
from services.sandbox.docker.errors import ENGINE_ERRORS
from services.sandbox.docker.images import ensure_image

log = structlog.get_logger(__name__)
GB = 1_000_000_000
KIND = "arvo"
"""The kind whose task images these are (its unfinished tasks' images are kept)."""
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def template_pattern(template: str) -> re.Pattern[str]:
    """``n132/arvo:{id}-vul`` -> a regex matching its tags, with group ``id``."""
    head, sep, tail = template.partition("{id}")
    if not sep:
        raise ValueError(f"the image template has no {{id}}: {template!r}")
    return re.compile(re.escape(head) + r"(?P<id>[A-Za-z0-9_.-]+)" + re.escape(tail) + "$")


def image_digest(
    client: docker.DockerClient, image: str, *, pull: bool = True, registry: str | None = None
) -> str:
    """The image's id (``sha256:...``), pulling it first when absent and ``pull``: through
    ``registry`` (``GREEN_DOCKER_REGISTRY``) when set, as a task's start pulls it."""
    try:
        return client.images.get(image).id
    except docker.errors.ImageNotFound:
        if not pull:
            raise ImageNotFound(f"image {image!r} is not on the engine") from None
    except docker.errors.APIError as e:
        raise SandboxError(f"cannot inspect {image}: {e.explanation}") from e
    ensure_image(client, image, registry=registry)  # ImageNotFound, with why, when it cannot
    try:
        return client.images.get(image).id
    except docker.errors.APIError as e:
        raise ImageNotFound(f"image {image!r} was pulled but cannot be read: {e}") from e


def image_size(client: docker.DockerClient, image: str) -> int | None:
    """Bytes of the image when it is on the engine, else None."""
    try:
        return int(client.images.get(image).attrs.get("Size") or 0)
    except docker.errors.ImageNotFound:
        return None


def _aware(when: datetime | None) -> datetime:
    """SQLite gives naive datetimes (stored as UTC); never-used sorts first."""
    if when is None:
        return _EPOCH
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _text(when: datetime | None) -> str | None:
    return when and str(when)


class Deferred(Exception):
    """An engine did not answer a call of the budget in time (a loaded engine: an image delete
    can outlast the client's timeout); the sentence says which and what."""

    def __init__(self, engine: str, what: str, exc: BaseException, removed: list[str]) -> None:
        super().__init__(
            f"engine {engine} did not {what} in time ({type(exc).__name__}): the image budget "
            "is applied again after the next task or prefetch"
        )
        self.removed = removed
        log.warning("images.budget_deferred", engine=engine, what=what, error=repr(exc)[:300])


@dataclass
class TaskImage:
    tag: str
    id: str
    size: int
    last_used: str | None
    engine: str = "local"


@dataclass
class BudgetStatus:
    """The budget and what the engines hold: totals over all of them, then each one's figures
    (``over``: some engine is over the budget)."""

    budget_gb: float | None
    used_gb: float
    images: int
    over: bool
    engines: dict[str, dict] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


Engines = Callable[[], list[tuple[str, docker.DockerClient]]]
"""The engines that answer now, by name: the budget skips the others until they are back."""


class ImageBudget:
    """Tracks task-image use and removes unused task images, LRU first, from each engine over
    the budget."""

    def __init__(
        self,
        engines: Engines,
        uses: ImageUseStore,
        template: str,
        budget_gb: float | None,
    ) -> None:
        self.engines = engines
        self.uses = uses
        self.template = template
        self.pattern = template_pattern(template)
        self.budget_gb = budget_gb
        self._lock = threading.Lock()
        self.busy: set[str] = set()
        """Images green's own work (verification, prefetch) is using right now."""
        self.deferred: list[str] = []
        """Why the last :meth:`enforce` left an engine over the budget (it did not answer in
        time): one sentence per engine; the next enforcement tries again."""

    def touch(self, image: str) -> None:
        self.uses.touch(image)

    def task_images(self) -> list[TaskImage]:
        """Every engine's task images, least recently used first (never used: first of all)."""
        used = self.uses.last_used()
        found = [img for name, c in self.engines() for img in self._listed(name, c, used)]
        return sorted(found, key=lambda t: (_aware(used.get(t.tag)), t.tag, t.engine))

    def _listed(
        self, engine: str, client: docker.DockerClient, used: dict[str, datetime]
    ) -> list[TaskImage]:
        """The task images of one engine, with their last use from ``used``: one listing call
        (``images.list`` would inspect every image after it, racing with a removal)."""
        return [
            TaskImage(tag, img["Id"], int(img.get("Size") or 0), _text(used.get(tag)), engine)
            for img in client.api.images()
            for tag in img.get("RepoTags") or ()
            if self.pattern.match(tag)
        ]

    def status(self) -> BudgetStatus:
        per_engine = {}
        used_at = self.uses.last_used()
        for name, client in self.engines():
            images = self._listed(name, client, used_at)
            used = sum({i.id: i.size for i in images}.values())
            over = self.budget_gb is not None and used > self.budget_gb * GB
            per_engine[name] = {"used_gb": round(used / GB, 3), "images": len(images), "over": over}
        return BudgetStatus(
            self.budget_gb,
            round(sum(e["used_gb"] for e in per_engine.values()), 3),
            sum(e["images"] for e in per_engine.values()),
            any(e["over"] for e in per_engine.values()),
            per_engine,
        )

    def enforce(self) -> list[str]:
        """On each engine over the budget, remove task images not needed by a queued or running
        task (nor by green's own work), least recently used first, until that engine is within
        the budget; return the removed tags (``engine/tag`` when green has several engines)."""
        if self.budget_gb is None:
            return []
        with self._lock:
            engines = self.engines()
            keep = self.uses.unfinished_images(KIND, self.template) | self.busy
            used, limit = self.uses.last_used(), self.budget_gb * GB
            removed: list[tuple[str, str]] = []
            self.deferred = []
            for name, client in engines:
                try:
                    gone = self._enforce_on(name, client, keep, limit, used)
                except Deferred as exc:  # a slow engine: what it removed counts, the rest waits
                    self.deferred.append(str(exc))
                    gone = exc.removed
                removed += [(name, tag) for tag in gone]
            if removed:  # forget the last use of a tag no engine holds any more
                held = {i.tag for name, c in engines for i in self._listed(name, c, used)}
                for tag in {tag for _, tag in removed} - held:
                    self.uses.forget(tag)
            several = len(engines) > 1
            return [f"{name}/{tag}" if several else tag for name, tag in removed]

    def _enforce_on(
        self,
        engine: str,
        client: docker.DockerClient,
        keep: set[str],
        limit: float,
        used: dict[str, datetime],
    ) -> list[str]:
        """Bring one engine's task images within ``limit`` bytes, least recently used first by
        ``used``; the removed tags."""
        try:
            listed = self._listed(engine, client, used)
        except ENGINE_ERRORS as exc:
            raise Deferred(engine, "list its images", exc, []) from exc
        images = sorted(listed, key=lambda t: (_aware(used.get(t.tag)), t.tag))
        sizes = {i.id: i.size for i in images}
        total = sum(sizes.values())
        removed: list[str] = []
        for img in images:
            if total <= limit:
                break
            if img.tag in keep:
                continue
            try:
                ok = self._remove(engine, client, img.tag)
            except ENGINE_ERRORS as exc:  # timed out or cut: the engine may still finish it
                raise Deferred(engine, f"remove {img.tag}", exc, removed) from exc
            if ok:
                removed.append(img.tag)
                if not any(i.id == img.id and i.tag not in removed for i in images):
                    total -= sizes.get(img.id, 0)  # its last tag: the layers are freed
        return removed

    def _remove(self, engine: str, client: docker.DockerClient, tag: str) -> bool:
        try:
            client.images.remove(tag, noprune=False)
        except docker.errors.ImageNotFound:
            pass
        except docker.errors.APIError as e:  # e.g. 409: a container still uses it
            log.warning(
                "images.remove_refused", image=tag, engine=engine, error=str(e.explanation or e)
            )
            return False
        log.info("images.removed", image=tag, engine=engine, reason="over GREEN_IMAGE_BUDGET_GB")
        return True
