"""``results/<run>/manifest.json``: what decides a run's scores, and the check that two runs may
be put side by side.

Per task (from green's ``provenance`` of each trial): green's version and commit, the scoring
rule's version, the task image's digest (``docker image inspect``'s ``Id``, never a tag), the
sha256 of each asset and of the ground truth, the engine's version, purple's card and the
limits. Per run: the split file and seed, the arguments, the CLI's version. ``arena compare``
and ``arena report`` refuse runs whose scoring rule, image, assets or ground truth differ for a
task (:mod:`services.shared.comparable`), and ``arena compare`` runs without provenance.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import Any

from services.arena.results import RunResults, now_iso
from services.arena.splits import SPLIT_FILE
from services.shared import comparable
from services.shared.audit import audit
from services.shared.files import write_json_atomic

MANIFEST_FILE = "manifest.json"
DECISIVE = comparable.DECISIVE


def _version() -> str | None:
    try:
        return metadata.version("arvo-rca-arena")
    except metadata.PackageNotFoundError:
        return None


def build_manifest(results: RunResults, run_dir: Path) -> dict[str, Any]:
    tasks: dict[str, Any] = {}
    for o in results.tasks:
        full: dict[str, Any] | None = None
        if o.dir and (run_dir / o.dir / "task.json").exists():
            task = json.loads((run_dir / o.dir / "task.json").read_text(encoding="utf-8"))
            full = task.get("provenance")
        tasks.setdefault(o.ref or "", {})[str(o.trial)] = full or o.provenance
    split = run_dir / SPLIT_FILE
    return {
        "run": results.run,
        "written_at": now_iso(),
        "arena_version": _version(),
        "green": results.green,
        "purple": results.purple,
        "trials": results.trials,
        "split_file": SPLIT_FILE if split.exists() else None,
        "seed": results.args.get("seed"),
        "sample": results.args.get("sample"),
        "limits": {
            k: results.args.get(k) for k in ("max_steps", "task_timeout", "command_timeout")
        },
        "tasks": tasks,
    }


def write_manifest(results: RunResults, run_dir: Path) -> Path:
    path = run_dir / MANIFEST_FILE
    write_json_atomic(path, build_manifest(results, run_dir))
    return path


def provenance_conflicts(runs: Iterable[tuple[Path, RunResults]]) -> list[str]:
    """One sentence per task whose scoring rule, image, assets or ground truth differ between
    the runs (or between the trials of one run), and, with two runs or more, per run or task
    whose scored records carry no provenance."""
    return comparable.problems([(r.run, [o.as_attempt() for o in r.tasks]) for _, r in runs])


def refresh_audit(results: RunResults, run_dir: Path) -> None:
    """Recompute each attempt's trajectory audit from its saved ``commands.json`` and
    ``task.json`` (runs recorded before the audit existed get it too)."""
    for o in results.tasks:
        tdir = run_dir / o.dir if o.dir else None
        if tdir is None or not (tdir / "commands.json").exists():
            continue
        try:
            commands = json.loads((tdir / "commands.json").read_text(encoding="utf-8"))
            task = json.loads((tdir / "task.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        o.audit = audit(
            [str(c.get("command", "")) for c in commands if isinstance(c, dict)],
            task.get("submission"),
            (task.get("scores") or {}).get("project"),
        )
