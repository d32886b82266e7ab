"""The builds of one ARVO task that inputs and patches are judged on: vulnerable and fixed.

The vulnerable build is the task image (``n132/arvo:<id>-vul``). The fixed build is the task's
``-fix`` image where the dataset has one (``GREEN_FIX_IMAGE_TEMPLATE``, ARVO's
``n132/arvo:<id>-fix``); else the vulnerable image with ``patch.diff`` applied and ``arvo
compile`` run once, its ``/out`` kept in green's cache per vulnerable image digest and
``patch.diff`` (later judgements put it into a fresh vulnerable container). A fixed build that
does not build is the task's fault, never the agent's: :class:`BrokenFixedBuild` (infra).

The fixed build's behaviour on a task's corpus (what the fix judge compares a patched build
with) is cached the same way, per fixed build and corpus.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
from collections import defaultdict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from services.green.kinds.arvo.builds.box import Bounds, JudgeBox
from services.green.kinds.arvo.builds.runs import InputRun
from services.green.kinds.errors import AssetError
from services.sandbox.base import ImageNotFound, SandboxProvider
from services.shared.files import write_atomic
from services.shared.text import clip_middle

OUT_MAX_BYTES = 1 << 30
"""The largest ``/out`` archive of a fallback fixed build green keeps (1 GiB)."""


class BrokenFixedBuild(AssetError):
    """The task's fix does not build: the task cannot be judged (infra, the dataset's fault)."""


@dataclass(frozen=True)
class FixedBuild:
    """Which fixed build a container runs."""

    identity: str
    """The ``-fix`` image's digest, or the fallback's cache key (what cached results key on)."""
    how: str
    """Where it came from, in words: the image, or patch.diff built on the task image."""


@dataclass(frozen=True)
class TaskBuilds:
    """Where one task's builds come from, and how to open a fresh container of each."""

    provider: SandboxProvider
    ref_id: str
    vulnerable_image: str
    fix_image: str | None
    """The task's ``-fix`` image by the template (it may not exist: then the fallback)."""
    fix_patch: bytes
    """``patch.diff``."""
    project: str | None
    bounds: Bounds
    cache_dir: Path
    """Green's cache for fallback fixed builds and reference behaviour."""
    locks: defaultdict[str, asyncio.Lock]
    """The kind's locks, one per fallback build (two tasks of a bug build it once)."""

    def _box(
        self, image: str, build: str, task_id: str, *, builds: bool = False
    ) -> dict[str, object]:
        return {
            "image": image,
            "build": build,
            "task_id": task_id,
            "ref_id": self.ref_id,
            "project": self.project,
            "bounds": self.bounds,
            "builds": builds,
        }

    @asynccontextmanager
    async def vulnerable(self, task_id: str, build: str = "vulnerable") -> AsyncIterator[JudgeBox]:
        """A fresh container of the vulnerable build (``build`` names it in the records: a
        patched build starts as one, and is built in it)."""
        builds = build == "patched"
        async with JudgeBox.open(
            self.provider, **self._box(self.vulnerable_image, build, task_id, builds=builds)
        ) as box:
            yield box

    @asynccontextmanager
    async def fixed(self, task_id: str) -> AsyncIterator[tuple[JudgeBox, FixedBuild]]:
        """A fresh container of the fixed build, and which fixed build it is."""
        box, which = await self._open_fixed(task_id)
        async with box.closing():
            yield box, which

    async def _open_fixed(self, task_id: str) -> tuple[JudgeBox, FixedBuild]:
        if self.fix_image:
            try:
                box = await JudgeBox.create(
                    self.provider, **self._box(self.fix_image, "fixed", task_id)
                )
            except ImageNotFound:
                pass  # no -fix image for this task: the fallback
            else:
                facts = await asyncio.to_thread(box.image_facts)
                digest = str(facts.get("id") or self.fix_image)
                return box, FixedBuild(digest, f"the image {self.fix_image}, {digest[:19]}")
        box = await JudgeBox.create(
            self.provider, **self._box(self.vulnerable_image, "fixed", task_id, builds=True)
        )
        try:
            key = await self._patch_and_build(box)
        except BaseException:
            with contextlib.suppress(Exception):  # its error is the one that counts
                await box.close()
            raise
        how = f"patch.diff applied to {self.vulnerable_image} and built, cached as {key[:12]}"
        return box, FixedBuild(key, how)

    async def _patch_and_build(self, box: JudgeBox) -> str:
        """Make the vulnerable container ``box`` the fixed build: from the cache, or by
        applying patch.diff and building (then cached). Returns the cache key."""
        facts = await asyncio.to_thread(box.image_facts)
        image = str(facts.get("id") or self.vulnerable_image)
        patch = hashlib.sha256(self.fix_patch).hexdigest()
        key = hashlib.sha256(f"{image}\0{patch}".encode()).hexdigest()[:32]
        path = self.cache_dir / "fixed-builds" / f"{key}.tar.gz"
        async with self.locks[key]:
            if path.is_file():
                await box.replace_out(await asyncio.to_thread(path.read_bytes))
                return key
            step = await box.build(self.fix_patch.decode("utf-8", "replace"), image_tools=True)
            if not step.built:
                why = "does not apply" if not step.applied else "does not build"
                raise BrokenFixedBuild(
                    f"the task's fixed build: patch.diff {why} on {self.vulnerable_image}: "
                    f"{clip_middle(step.detail, 3000)}"
                )
            data = await box.read_out(OUT_MAX_BYTES)
            await asyncio.to_thread(write_atomic, path, data)
        return key

    async def reference(
        self, task_id: str, corpus: dict[str, bytes]
    ) -> tuple[list[InputRun], FixedBuild]:
        """What the fixed build does on each corpus input (cached per fixed build and corpus),
        and which fixed build it is."""
        digest = hashlib.sha256()
        for name, data in sorted(corpus.items()):
            digest.update(f"{name}\0{len(data)}\0".encode() + data)
        async with self.fixed(task_id) as (box, which):
            key = hashlib.sha256(f"{which.identity}\0{digest.hexdigest()}".encode()).hexdigest()
            path = self.cache_dir / "fixed-behaviour" / f"{key[:32]}.json"
            if path.is_file():
                rows = json.loads(await asyncio.to_thread(path.read_text))
                return [InputRun.model_validate(r) for r in rows], which
            runs = [await box.run(data, name) for name, data in corpus.items()]
        text = json.dumps([r.model_dump(mode="json") for r in runs])
        await asyncio.to_thread(write_atomic, path, text)
        return runs, which
