"""Task images on the Docker engine: their digests and sizes, pulls, and the disk budget
(``GREEN_IMAGE_BUDGET_GB``) that removes the least recently used task images once over it.

Task images are the ones whose tag matches ``GREEN_IMAGE_TEMPLATE`` (``n132/arvo:{id}-vul``).
Sizes are each image's full size as the engine reports it (layers shared between images are
counted once per image), so the real disk use is at most the figure shown.
"""

from __future__ import annotations

import re
import threading
from dataclasses import asdict, dataclass
from datetime import UTC, datetime

import docker
import docker.errors
import structlog

from services.green.store.crud import ImageUseStore
from services.sandbox.base import ImageNotFound, SandboxError

log = structlog.get_logger(__name__)
GB = 1_000_000_000
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def template_pattern(template: str) -> re.Pattern[str]:
    """``n132/arvo:{id}-vul`` -> a regex matching its tags, with group ``id``."""
    head, sep, tail = template.partition("{id}")
    if not sep:
        raise ValueError(f"the image template has no {{id}}: {template!r}")
    return re.compile(re.escape(head) + r"(?P<id>[A-Za-z0-9_.-]+)" + re.escape(tail) + "$")


def image_digest(client: docker.DockerClient, image: str, *, pull: bool = True) -> str:
    """The image's id (``sha256:...``), pulling it first when absent and ``pull``."""
    try:
        return client.images.get(image).id
    except docker.errors.ImageNotFound:
        if not pull:
            raise ImageNotFound(f"image {image!r} is not on the engine") from None
    except docker.errors.APIError as e:
        raise SandboxError(f"cannot inspect {image}: {e.explanation}") from e
    try:
        return client.images.pull(image).id
    except docker.errors.APIError as e:
        raise ImageNotFound(f"image {image!r} is absent and cannot be pulled: {e}") from e


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


@dataclass
class TaskImage:
    tag: str
    id: str
    size: int
    last_used: str | None


@dataclass
class BudgetStatus:
    budget_gb: float | None
    used_gb: float
    images: int
    over: bool

    def to_dict(self) -> dict:
        return asdict(self)


class ImageBudget:
    """Tracks task-image use and removes unused task images, LRU first, when over budget."""

    def __init__(
        self,
        client: docker.DockerClient,
        uses: ImageUseStore,
        template: str,
        budget_gb: float | None,
    ) -> None:
        self.client = client
        self.uses = uses
        self.template = template
        self.pattern = template_pattern(template)
        self.budget_gb = budget_gb
        self._lock = threading.Lock()
        self.busy: set[str] = set()
        """Images green's own work (verification, prefetch) is using right now."""

    def touch(self, image: str) -> None:
        self.uses.touch(image)

    def task_images(self) -> list[TaskImage]:
        """The engine's task images, least recently used first (never used: first of all)."""
        used = self.uses.last_used()
        found = []
        for img in self.client.images.list():
            for tag in img.tags:
                if self.pattern.match(tag):
                    when = used.get(tag)
                    found.append(
                        TaskImage(tag, img.id, int(img.attrs.get("Size") or 0), when and str(when))
                    )
        return sorted(found, key=lambda t: (_aware(used.get(t.tag)), t.tag))

    def status(self) -> BudgetStatus:
        images = self.task_images()
        used = sum({i.id: i.size for i in images}.values())
        over = self.budget_gb is not None and used > self.budget_gb * GB
        return BudgetStatus(self.budget_gb, round(used / GB, 3), len(images), over)

    def enforce(self) -> list[str]:
        """Remove task images not needed by a queued or running task (nor by green's own work),
        least recently used first, until the total is within the budget; return the tags."""
        if self.budget_gb is None:
            return []
        with self._lock:
            images = self.task_images()
            sizes = {i.id: i.size for i in images}
            total = sum(sizes.values())
            keep = self.uses.unfinished_images(self.template) | self.busy
            removed = []
            for img in images:
                if total <= self.budget_gb * GB:
                    break
                if img.tag in keep:
                    continue
                if self._remove(img.tag):
                    removed.append(img.tag)
                    if not any(i.id == img.id and i.tag not in removed for i in images):
                        total -= sizes.get(img.id, 0)  # its last tag: the layers are freed
            return removed

    def _remove(self, tag: str) -> bool:
        try:
            self.client.images.remove(tag, noprune=False)
        except docker.errors.ImageNotFound:
            pass
        except docker.errors.APIError as e:  # e.g. 409: a container still uses it
            log.warning("images.remove_refused", image=tag, error=str(e.explanation or e))
            return False
        self.uses.forget(tag)
        log.info("images.removed", image=tag, reason="over GREEN_IMAGE_BUDGET_GB")
        return True
