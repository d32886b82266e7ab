"""The fix kind's plan and judge on patches, without green's serving path: what a patch the
submit check (``services/green/kinds/arvo/fix/constructs.py``) missed would get."""

from __future__ import annotations

import asyncio

from services.green.config import GreenSettings
from services.green.kinds.arvo.fix.judge import FixPatch, FixScore
from services.green.kinds.arvo.fix.kind import ArvoFixKind
from services.sandbox.docker import DockerSandboxProvider


def judge_patches(
    settings: GreenSettings, ref: str, patches: dict[str, str], *, in_turn: bool = False
) -> dict[str, FixScore]:
    """Each patch of ``patches`` (name: unified diff) judged on task ``ref`` on one provider;
    together, or one after another in their order when ``in_turn`` (the engine a patch left
    is the next one's)."""
    provider = DockerSandboxProvider(label_prefix="arena", owner=settings.instance_name)
    kind = ArvoFixKind.from_settings(settings, provider)

    async def one(name: str, patch: str) -> FixScore:
        plan = await asyncio.to_thread(kind.prepare, ref)
        plan.task_id = f"judged-directly-{name}"
        return await plan.score(FixPatch(patch=patch, files=[]))

    async def every() -> list[FixScore]:
        try:
            if in_turn:
                return [await one(n, p) for n, p in patches.items()]
            return await asyncio.gather(*(one(n, p) for n, p in patches.items()))
        finally:
            await provider.aclose()

    return dict(zip(patches, asyncio.run(every()), strict=True))
