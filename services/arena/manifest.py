"""``results/<run>/manifest.json``: what decides a run's scores, and the check that two runs may
be put side by side.

Per task and trial (green's ``provenance`` of each): green's build, the scoring rule's version,
the task image (``docker image inspect``'s ``Id`` and its ``identity``, never a tag), the sha256
of each asset and of the ground truth, the engine's version, purple as it took the task (card,
policy, agent config, build, model and its request settings) and the limits. Per run: the
client's own build (:mod:`services.shared.build_info`: version, commit, dirty flag, lock-file
sha256, Python, numpy and scipy, which compute the intervals), the distinct green builds and
purple agents of its tasks, the split file and its seed (``split_seed``), the model's sampling
seed (``model_seed``), the arguments. ``arena compare`` and ``arena report`` refuse runs whose
scoring rule, image, assets or ground truth differ for a task
(:mod:`services.shared.comparable`), and ``arena compare`` runs without provenance.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from services.arena.results import RunResults, now_iso
from services.arena.splits import SPLIT_FILE
from services.shared import comparable
from services.shared.audit import audit
from services.shared.build_info import build_info
from services.shared.files import write_json_atomic

MANIFEST_FILE = "manifest.json"
DECISIVE = comparable.DECISIVE
AGENT_KEYS = ("url", "name", "version")
"""What of purple's card a run's summary of its agents keeps (beside its policy, build, model)."""
MODEL_KEYS = ("model", "seed", "temperature", "top_p", "max_tokens")
"""What of purple's model settings a run's summary of its agents keeps."""


def _number(value: Any) -> Any:
    """A whole number as an int (a card's numbers travel as floats: ``7.0``)."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def purple_agent(provenance: dict[str, Any] | None) -> dict[str, Any] | None:
    """The purple that ran a task, as its provenance records it: card (URL, name, version),
    policy, agent config, build, model and its seed and sampling settings (None: not recorded,
    e.g. purple never took the task)."""
    card = (provenance or {}).get("purple")
    if not isinstance(card, dict) or not card.get("name"):
        return None
    agent = card.get("agent") or {}
    model = card.get("model")
    return {
        **{k: card.get(k) for k in AGENT_KEYS},
        "policy": agent.get("policy"),
        "agent_config": agent.get("agent_config"),
        "build": agent.get("build"),
        "model": {k: _number(model.get(k)) for k in MODEL_KEYS} if model else None,
    }


def _distinct(values: Iterable[dict[str, Any] | None]) -> list[dict[str, Any]]:
    """The distinct values (None left out), each with the number of attempts it had."""
    seen: dict[str, dict[str, Any]] = {}
    for v in values:
        if v is not None:
            key = json.dumps(v, sort_keys=True, default=str)
            seen.setdefault(key, {**v, "attempts": 0})["attempts"] += 1
    return list(seen.values())


def _model_seed(agents: list[dict[str, Any]]) -> Any:
    """The model's seed of the run's purple agents when they agree (None: no model, no seed,
    or different seeds: each agent says its own in ``purple_agents``)."""
    seeds = {json.dumps((a.get("model") or {}).get("seed")) for a in agents}
    return json.loads(seeds.pop()) if len(seeds) == 1 else None


def build_manifest(results: RunResults, run_dir: Path) -> dict[str, Any]:
    tasks: dict[str, Any] = {}
    for o in results.tasks:
        full: dict[str, Any] | None = None
        if o.dir and (run_dir / o.dir / "task.json").exists():
            task = json.loads((run_dir / o.dir / "task.json").read_text(encoding="utf-8"))
            full = task.get("provenance")
        tasks.setdefault(o.ref or "", {})[str(o.trial)] = full or o.provenance
    attempts = [p for trials in tasks.values() for p in trials.values()]
    agents = _distinct(purple_agent(p) for p in attempts)
    split = run_dir / SPLIT_FILE
    split_seed = results.args.get("seed") if results.args.get("sample") else None
    return {
        "run": results.run,
        "written_at": now_iso(),
        "arena": build_info(),
        "arena_version": build_info()["version"],
        "green": results.green,
        "green_builds": _distinct((p or {}).get("green") for p in attempts),
        "purple": results.purple,
        "purple_agents": agents,
        "trials": results.trials,
        "split_file": SPLIT_FILE if split.exists() else None,
        "split_seed": split_seed,
        "seed": split_seed,
        "model_seed": _model_seed(agents),
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
            leak=(task.get("scores") or {}).get("leak"),
        )
