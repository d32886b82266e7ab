"""``results/<run>/manifest.json``: what decides a run's scores, and the check that two runs may
be put side by side.

Per task (from green's ``provenance`` of each trial): green's version and commit, the scoring
rule's version, the task image's digest (``docker image inspect``'s ``Id``, never a tag), the
sha256 of each asset and of the ground truth, the engine's version, purple's card and the
limits. Per run: the split file and seed, the arguments, the CLI's version. ``arena compare``
and ``arena report`` refuse runs whose scoring rule or image digest differs for a task.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import Any

from services.arena.results import RunResults, now_iso
from services.arena.splits import SPLIT_FILE
from services.shared.audit import audit
from services.shared.files import write_json_atomic

MANIFEST_FILE = "manifest.json"
DECISIVE = ("scoring_version", "image_id")
"""Provenance keys that must agree for a task before two runs are compared."""


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
        tasks.setdefault(o.arvo_id, {})[str(o.trial)] = full or o.provenance
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


def _decisive_by_task(results: RunResults) -> dict[str, dict[str, set[str]]]:
    out: dict[str, dict[str, set[str]]] = {}
    for o in results.tasks:
        p = o.provenance or {}
        for key in DECISIVE:
            if p.get(key):
                out.setdefault(o.arvo_id, {}).setdefault(key, set()).add(str(p[key]))
    return out


def provenance_conflicts(runs: Iterable[tuple[Path, RunResults]]) -> list[str]:
    """One sentence per task whose scoring rule or image digest differs between the runs (or
    between the trials of one run)."""
    runs = list(runs)
    seen: dict[str, dict[str, dict[str, set[str]]]] = {}
    for _, r in runs:
        for task, keys in _decisive_by_task(r).items():
            for key, values in keys.items():
                seen.setdefault(task, {}).setdefault(key, {})[r.run] = values
    problems = []
    for task, keys in sorted(seen.items()):
        for key, per_run in keys.items():
            if len(set().union(*per_run.values())) > 1:
                what = "image digest" if key == "image_id" else "scoring rule version"
                detail = "; ".join(
                    f"{run}: {', '.join(sorted(v))}" for run, v in sorted(per_run.items())
                )
                problems.append(f"task arvo:{task} was scored with a different {what} ({detail})")
    return problems


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
