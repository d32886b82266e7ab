"""Whether runs were scored alike, so that their numbers may be put side by side: per task, the
scoring rule, the image, the assets and the ground truth must agree, and every compared task must
carry the provenance that says so.

What decides a task's score is in green's task provenance (``services/green/tasks/provenance.py``):
the scoring rule's version, the image (its ``identity`` when green records one: the registry
digest, or for a locally built fixture the hash of its recipe and inputs, so two machines'
builds of one fixture agree; else its image id), the sha256 of each asset and of the ground
truth (an asset its kind signs, such as a crash report, by its signature: two builds of one
recipe report other addresses and pids). ``arena compare``, ``arena report`` (the trials of
one run) and the dashboard's compare page refuse, naming the task, unless forced. Rules:
``docs/scoring.md`` ("Comparing runs").
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from services.shared.paired import Attempt

DECISIVE = (
    "scoring_version",
    "image_identity",
    "image_id",
    "assets_sha256",
    "assets_signature_sha256",
    "ground_truth_sha256",
)
"""The keys of :func:`decisive_of` (the flat form a record keeps)."""
_WHAT = {
    "scoring_version": "scoring rule version",
    "image": "image",
    "ground_truth_sha256": "ground truth (sha256)",
}


def decisive_of(provenance: dict[str, Any] | None) -> dict[str, Any]:
    """The part of green's task provenance that decides the score, flat: ``scoring_version``,
    ``image_identity``, ``image_id``, ``assets_sha256`` (name -> hash),
    ``assets_signature_sha256`` (name -> the hash of what its kind compares of it: a crash
    report without its addresses, pids and seeds), ``ground_truth_sha256`` (None where green
    withheld or did not record it)."""
    p = provenance or {}
    image = p.get("image") or {}
    return {
        "scoring_version": (p.get("scoring") or {}).get("version"),
        "image_identity": image.get("identity"),
        "image_id": image.get("id"),
        "assets_sha256": p.get("assets_sha256") or None,
        "assets_signature_sha256": p.get("assets_signature_sha256") or None,
        "ground_truth_sha256": p.get("ground_truth_sha256"),
    }


def _image_key(provs: list[dict[str, Any]]) -> str:
    """Compare images by identity when every record of the task has one, else by image id."""
    return "image_identity" if all(p.get("image_identity") for p in provs) else "image_id"


def _facts(provs: list[tuple[str, dict[str, Any]]]) -> dict[str, dict[str, set[str]]]:
    """Per fact (``scoring_version``, ``image``, ``ground_truth_sha256``, ``asset <name>``):
    per run, the values recorded (records that do not say are left out)."""
    facts: dict[str, dict[str, set[str]]] = {}
    image = _image_key([p for _, p in provs])
    signed = set.intersection(*(set(p.get("assets_signature_sha256") or {}) for _, p in provs))
    for run, p in provs:
        values = {k: p.get(k) for k in ("scoring_version", "ground_truth_sha256")}
        values["image"] = p.get(image)
        for name, digest in (p.get("assets_sha256") or {}).items():
            if name in signed:  # compared on what its kind says decides (its signature)
                values[f"asset {name} (its signature)"] = p["assets_signature_sha256"][name]
            else:
                values[f"asset {name}"] = digest
        for key, value in values.items():
            if value:
                facts.setdefault(key, {}).setdefault(run, set()).add(str(value))
    return facts


def conflicts(runs: Iterable[tuple[str, Iterable[Attempt]]]) -> list[str]:
    """One sentence per task and fact that differs between the runs (or between the trials of
    one run): its scoring rule version, image, an asset's or the ground truth's hash."""
    by_task: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for run, attempts in runs:
        for a in attempts:
            if a.provenance:
                by_task.setdefault(a.task, []).append((run, a.provenance))
    problems = []
    for task, provs in sorted(by_task.items()):
        for key, per_run in _facts(provs).items():
            if len(set().union(*per_run.values())) > 1:
                what = _WHAT.get(key, key)
                detail = "; ".join(
                    f"{run}: {', '.join(sorted(v))}" for run, v in sorted(per_run.items())
                )
                problems.append(f"task {task} was scored with a different {what} ({detail})")
    return problems


def missing(runs: Sequence[tuple[str, Sequence[Attempt]]]) -> list[str]:
    """One sentence per run that records no provenance for the tasks every run scored (or per
    such task, when the run records it for others): nothing then shows they were scored alike."""
    scored = [{a.task for a in attempts if a.answerable} for _, attempts in runs]
    common = set.intersection(*scored) if scored else set()
    problems = []
    for run, attempts in runs:
        known = {a.task for a in attempts if a.provenance}
        lacking = sorted(common - known)
        if not lacking:
            continue
        if not known:
            problems.append(
                f"run {run} records no provenance (scoring rule, image, assets, ground truth): "
                "nothing shows its tasks were scored as the other run's"
            )
        else:
            problems += [f"task {t} has no provenance in run {run}" for t in lacking]
    return problems


def problems(runs: Sequence[tuple[str, Sequence[Attempt]]]) -> list[str]:
    """Why the runs may not be compared (empty: they may): :func:`conflicts`, and with two runs
    or more, :func:`missing`."""
    return conflicts(runs) + (missing(runs) if len(runs) > 1 else [])
