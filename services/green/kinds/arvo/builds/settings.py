"""A task's builds and the bounds of its judging steps, from green's settings."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from pathlib import Path

from services.green.config import GreenSettings
from services.green.kinds.arvo.builds.box import Bounds
from services.green.kinds.arvo.builds.task_builds import TaskBuilds
from services.green.kinds.arvo.judge import PreparedTask
from services.sandbox.base import SandboxProvider


def bounds_of(s: GreenSettings) -> Bounds:
    """The judging bounds: GREEN_JUDGE_*, and the limits of a task container."""
    return Bounds(
        run_s=s.judge_run_timeout_s,
        build_s=s.judge_build_timeout_s,
        fuzz_runs=s.judge_fuzz_runs,
        fuzz_s=s.judge_fuzz_timeout_s,
        memory=s.container_memory,
        cpus=s.container_cpus,
        pids=s.container_pids,
        disk_bytes=s.container_disk_bytes or None,
    )


def builds_of(
    s: GreenSettings,
    sandboxes: SandboxProvider,
    arvo_id: str,
    patch: Path,
    prepared: PreparedTask,
    locks: defaultdict[str, asyncio.Lock],
) -> TaskBuilds:
    """The vulnerable and fixed builds of ARVO task ``arvo_id`` on green's engine."""
    return TaskBuilds(
        provider=sandboxes,
        ref_id=arvo_id,
        vulnerable_image=s.image_template.format(id=arvo_id),
        fix_image=s.fix_image_template.format(id=arvo_id) if s.fix_image_template else None,
        fix_patch=patch.read_bytes(),
        project=prepared.project,
        bounds=bounds_of(s),
        cache_dir=Path(s.asset_cache_dir) / "builds",
        locks=locks,
    )
