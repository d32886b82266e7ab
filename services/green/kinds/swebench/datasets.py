"""SWE-bench's dataset tools behind green's dataset protocol (``services/green/kinds/datasets.py``):
list the instances, prefetch an instance's image, verify that its gold patch resolves it.

Verification is SWE-bench's own validation, run by the same judge that scores an agent: the
instance's gold ``patch`` in a fresh container of its image, then FAIL_TO_PASS and PASS_TO_PASS;
an instance whose gold patch does not resolve it cannot be judged against. Blocking: green calls
these in threads (the sandbox's async API on an event loop of its own).
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Mapping
from typing import Any, Protocol

from services.green.kinds.datasets import Verification
from services.green.kinds.errors import UnknownTask
from services.sandbox.base import SandboxError, SandboxProvider, SandboxSpec
from services.swebench.instances import WORKDIR, SweInstance, image_name
from services.swebench.judge import EvalReport, evaluate


class SweSource(Protocol):
    """What the dataset tools read of the SWE-bench kind (:class:`SweBenchKind` is one): its
    instances, where their images come from, and how the judge runs."""

    provider: SandboxProvider
    image_template: str | None
    activate: str
    eval_timeout_s: float

    @property
    def instances(self) -> Mapping[str, SweInstance]: ...

    def check(self, ref: str) -> None:
        """Raises :class:`UnknownTask` when ``ref`` names no instance."""


class SweDatasets:
    def __init__(self, kind: SweSource) -> None:
        self.kind = kind

    def _image(self, ref_id: str) -> str:
        self.kind.check(ref_id)
        return image_name(self.kind.instances[ref_id], self.kind.image_template)

    def ids(self) -> list[str]:
        return sorted(self.kind.instances)

    def prefetch(self, ref_id: str, dry_run: bool) -> dict[str, Any]:
        """The instance's image onto the engine (the provider pulls it when absent)."""
        image = self._image(ref_id)
        if dry_run:
            return {"ref": ref_id, "image": {"name": image}, "download_bytes": None, "error": None}
        t0 = time.monotonic()
        asyncio.run(self._start_and_remove(ref_id, image))
        seconds = round(time.monotonic() - t0, 2)
        return {"ref": ref_id, "image": {"name": image, "present": True}, "seconds": seconds}

    async def _start_and_remove(self, ref_id: str, image: str) -> None:
        spec = SandboxSpec(
            image=image,
            task_id=f"prefetch-{secrets.token_hex(3)}",
            ref_id=ref_id,
            workdir=WORKDIR,
            labels={"arena.purpose": "prefetch"},
            agent_uid=None,  # green's own container: its commands are green's
        )
        sandbox = await self.kind.provider.create(spec)
        await sandbox.remove()

    def verify(self, ref_id: str) -> Verification:
        t0 = time.monotonic()
        try:
            image = self._image(ref_id)
        except UnknownTask as exc:
            return Verification("", "unknown", False, f"instance: {exc}", [], 0.0)
        instance = self.kind.instances[ref_id]
        try:
            report = asyncio.run(
                evaluate(
                    self.kind.provider,
                    instance,
                    image,
                    instance.patch,
                    activate=self.kind.activate,
                    timeout=self.kind.eval_timeout_s,
                    task_id=f"verify-{ref_id}-{secrets.token_hex(3)}",
                )
            )
        except SandboxError as exc:
            ok, detail = False, f"the judge's container failed: {exc}"
        else:
            ok, detail = report.resolved, _verdict(report)
        seconds = round(time.monotonic() - t0, 2)
        step = {"name": "gold_patch", "ok": ok, "seconds": seconds, "detail": detail}
        return Verification(
            image=image,
            image_digest="unknown",  # the sandbox seam does not say which image content ran
            verified=ok,
            reason=None if ok else f"gold_patch: {detail}",
            steps=[step],
            seconds=seconds,
        )


def _verdict(report: EvalReport) -> str:
    """Why the gold patch does (not) resolve the instance, in a sentence."""
    if report.resolved:
        return "the gold patch resolves the instance"
    if report.error:
        return report.error
    if not report.patch_applied:
        return "the gold patch does not apply"
    results = {**report.fail_to_pass, **report.pass_to_pass}
    failing = [t for t, s in results.items() if s != "PASSED"]
    return f"with the gold patch, {len(failing)} test(s) do not pass: {', '.join(failing[:5])}"
