"""The needle kind's dataset tools, through green's protocol (services/green/kinds/datasets.py).

``ids`` lists every task (``needle:0`` .. ``needle:999``); ``prefetch`` has nothing to download
(the haystack is made on the spot) and says so; ``verify`` builds the task's workspace in a real
container from green's sandbox provider, exactly as a task would get it, and checks that the
needle is where the ground truth says. ``needle:999`` is the deliberately broken task: its
haystack has no needle, so it is not verified (and ``verified_only`` leaves it out).
"""

from __future__ import annotations

import asyncio
import secrets
import time
from typing import Any

from services.green.kinds.base import TaskKind
from services.green.kinds.datasets import Verification
from services.sandbox.base import SandboxError, SandboxProvider, SandboxSpec


class NeedleDatasets:
    def __init__(self, kind: TaskKind, sandboxes: SandboxProvider, count: int) -> None:
        self.kind = kind
        self.sandboxes = sandboxes
        self.image = kind.prepare("0").image
        self.count = count

    def ids(self) -> list[str]:
        return [str(n) for n in range(self.count)]

    def prefetch(self, ref_id: str, dry_run: bool) -> dict[str, Any]:
        """Nothing to fetch; checks the id like intake does (UnknownTask past the last)."""
        self.kind.check(ref_id)
        return {"ref": ref_id, "image": {"name": self.image}, "download_bytes": 0}

    def verify(self, ref_id: str) -> Verification:
        started = time.monotonic()
        ok, detail = asyncio.run(self._check(ref_id))  # blocking: green calls it in a thread
        seconds = round(time.monotonic() - started, 2)
        step = {"name": "needle", "ok": ok, "seconds": seconds, "detail": detail}
        return Verification(
            image=self.image,
            image_digest="unknown",  # the needle kind does not pin its image
            verified=ok,
            reason=None if ok else f"needle: {detail}",
            steps=[step],
            seconds=seconds,
        )

    async def _check(self, ref_id: str) -> tuple[bool, str]:
        self.kind.check(ref_id)
        plan = self.kind.prepare(ref_id)  # the task's own plan: the workspace it would get
        spec = SandboxSpec(
            image=self.image,
            task_id=f"verify-needle-{ref_id}-{secrets.token_hex(3)}",
            ref_id=ref_id,
            workdir=plan.workdir,
            labels={"arena.purpose": "verify"},
            agent_uid=None,  # green's own container: its commands are green's
        )
        try:
            sandbox = await self.sandboxes.create(spec)
        except SandboxError as exc:
            return False, f"cannot start a container of {self.image}: {exc}"
        try:
            await plan.populate(sandbox)
            ran = await sandbox.exec("grep -n '^NEEDLE$' haystack.txt", 30)
        finally:
            await sandbox.remove()
        found = [line.split(":", 1)[0] for line in ran.output.splitlines() if ":" in line]
        want = str(plan.ground_truth().line)
        if found == [want]:
            return True, f"the needle is on line {want}"
        return False, f"the ground truth says line {want}, the haystack has it on {found or 'none'}"
