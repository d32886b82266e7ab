"""``results/<run>/results.json``: run metadata, one outcome per ARVO id, and the aggregate.

The aggregate is the one green's assessments use (:func:`services.shared.scores.aggregate_records`),
fed from the outcomes recorded here, so a batch report and an AgentBeats assessment score a run
the same way.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from services.shared.files import write_json_atomic
from services.shared.scores import METRICS, aggregate_records

RESULTS_FILE = "results.json"
SCHEMA_VERSION = 1
TERMINAL = ("completed", "failed", "cancelled")
NEVER_STARTED = "purple_unreachable"
"""End reason of a task purple could not be reached for: it never started, a resumed run runs
it again (with or without --retry-failed)."""

OutcomeStatus = Literal["completed", "failed", "cancelled"]
Slot = tuple[str, int]
"""One attempt of the run: (ARVO id, trial index 1..K)."""


def slot_label(arvo_id: str, trial: int) -> str:
    """``10055`` for the first trial, ``10055#2`` for the second..."""
    return arvo_id if trial == 1 else f"{arvo_id}#{trial}"


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def task_dir_name(arvo_id: str, task_id: str) -> str:
    """``<arvo_id>-<first 8 characters of green's task id>``."""
    return f"{arvo_id}-{task_id[:8]}"


def compact_scores(scores: dict[str, Any] | None) -> dict[str, Any] | None:
    """The part of a TaskScore JSON the aggregate and the report need (the whole score, with
    its explanation, stays in the task's ``task.json``)."""
    if not scores:
        return None
    out: dict[str, Any] = {k: scores.get(k, 0.0) for k in METRICS}
    for k in ("scorable", "submitted", "n_locations", "project", "floors", "bug_class"):
        if k in scores:
            out[k] = scores[k]
    return out


class Outcome(BaseModel):
    """How one ARVO id of the run ended (its latest attempt)."""

    arvo_id: str
    """Canonical ARVO id (digits), or the id as given when it is not one."""
    trial: int = 1
    """Which of the id's ``--trials`` attempts this is (1..K)."""
    task_id: str | None = None
    """Green's task id (None when green refused the task)."""
    status: OutcomeStatus
    end_reason: str | None = None
    failure_kind: Literal["infra", "agent"] | None = None
    error: str | None = None
    agent_reason: str | None = None
    """How the agent said it ended, in its own words (green's ``agent_reason``): shown as the
    agent's words, never used to decide ``failure_kind``."""
    steps: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0
    created_at: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    duration_s: float | None = None
    """From the task's start (container ready) to its end, as green recorded them."""
    purple_url: str | None = None
    scores: dict[str, Any] | None = None
    """The metrics (``file@1`` ... ``iou``) with ``scorable``, ``submitted``, ``n_locations``."""
    dir: str | None = None
    """The task's folder, relative to the run folder (``tasks/<arvo_id>-<task_id8>``)."""
    trajectory: bool = False
    """Whether purple's view (``trajectory.json``) was saved."""
    notes: list[str] = []
    """What the CLI could not fetch (commands, trajectory), and other remarks."""
    attempts: int = 1
    verified: bool | None = None
    """What ``arena tasks verify`` found for the task on green (None: never verified)."""
    audit: dict[str, list[str]] = {}
    """Trajectory audit flags raised for the task (:mod:`services.shared.audit`), with their
    evidence; flags for a reader, never a score change."""
    provenance: dict[str, Any] | None = None
    """What decides the score (scoring rule version, image digest, green's version; see
    :mod:`services.arena.manifest`); the whole provenance is in ``task.json``."""

    def metric(self, name: str) -> float:
        return float((self.scores or {}).get(name, 0.0))

    @property
    def slot(self) -> Slot:
        return (self.arvo_id, self.trial)

    @property
    def label(self) -> str:
        return slot_label(self.arvo_id, self.trial)


class Session(BaseModel):
    """One invocation of ``arena run`` on this run folder."""

    started_at: str
    finished_at: str | None = None
    args: dict[str, Any] = {}
    submitted: list[str] = []
    """ARVO ids this invocation sent to green."""
    interrupted: bool = False
    error: str | None = None


class RunResults(BaseModel):
    schema_version: int = SCHEMA_VERSION
    run: str
    green: str
    purple: str | None = None
    """``--purple`` as given (None: green's default purple)."""
    started_at: str = Field(default_factory=now_iso)
    finished_at: str | None = None
    args: dict[str, Any] = {}
    """CLI arguments of the latest invocation (every invocation is in ``sessions``)."""
    sessions: list[Session] = []
    task_ids: list[str] = []
    """Every ARVO id of the run, in order."""
    trials: int = 1
    """Attempts per id (``--trials``): each its own green task, with its trial index."""
    tasks: list[Outcome] = []
    """One outcome per (id, trial) that has ended, in the order of ``task_ids`` then trial."""
    aggregate: dict[str, Any] = {}

    # ---- outcomes ------------------------------------------------------------------------

    def slots(self) -> list[Slot]:
        """Every (id, trial) of the run, in order."""
        return [(a, t) for a in self.task_ids for t in range(1, self.trials + 1)]

    def outcome(self, arvo_id: str, trial: int = 1) -> Outcome | None:
        return next((o for o in self.tasks if o.slot == (arvo_id, trial)), None)

    def record(self, outcome: Outcome) -> None:
        """Add or replace the outcome of an (id, trial) (keeping ``task_ids`` order) and
        re-aggregate."""
        previous = self.outcome(outcome.arvo_id, outcome.trial)
        if previous is not None:
            outcome.attempts = previous.attempts + 1
        if outcome.arvo_id not in self.task_ids:
            self.task_ids.append(outcome.arvo_id)
        order = {a: i for i, a in enumerate(self.task_ids)}
        rest = [o for o in self.tasks if o.slot != outcome.slot]
        self.tasks = sorted(
            [*rest, outcome], key=lambda o: (order.get(o.arvo_id, len(order)), o.trial)
        )
        self.refresh_aggregate()

    def pending(self, retry_failed: bool) -> list[Slot]:
        """Attempts still to run: never ended, cancelled (an interrupted run), never started
        because purple was unreachable, and, with ``retry_failed``, failed. A scored attempt
        never runs again."""
        ended = {o.slot: o for o in self.tasks}
        return [
            slot
            for slot in self.slots()
            if (o := ended.get(slot)) is None
            or o.status == "cancelled"
            or o.end_reason == NEVER_STARTED
            or (o.status == "failed" and retry_failed)
        ]

    def not_run(self) -> list[Slot]:
        ended = {o.slot for o in self.tasks}
        return [s for s in self.slots() if s not in ended]

    def refresh_aggregate(self) -> None:
        self.aggregate = aggregate_outcomes(self.tasks)

    # ---- files ---------------------------------------------------------------------------

    @classmethod
    def load(cls, path: Path) -> RunResults:
        return cls.model_validate_json(path.read_text(encoding="utf-8"))

    def save(self, path: Path) -> None:
        write_json_atomic(path, self.model_dump(mode="json"))


# ---- conversions ---------------------------------------------------------------------------


def _parse_time(value: Any) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None


def outcome_from_task(task: dict[str, Any], *, task_dir: str | None = None) -> Outcome:
    """The outcome of a task from green's ``GET /tasks/{id}`` JSON (``TaskPublic``).

    A task that is not terminal (the CLI gave up on it) is recorded as ``cancelled``.
    """
    status = str(task.get("status") or "")
    notes: list[str] = []
    if status not in TERMINAL:
        notes.append(f"green still reported the task {status or 'without a status'}")
        status = "cancelled"
    started, finished = _parse_time(task.get("started_at")), _parse_time(task.get("finished_at"))
    duration = (finished - started).total_seconds() if started and finished else None
    kind = task.get("failure_kind")
    return Outcome(
        arvo_id=str(task.get("arvo_id")),
        trial=int(task.get("trial") or 1),
        task_id=task.get("id"),
        status=status,  # type: ignore[arg-type]
        end_reason=task.get("end_reason"),
        failure_kind=kind if kind in ("infra", "agent") else None,
        error=task.get("error"),
        agent_reason=task.get("agent_reason"),
        steps=int(task.get("steps") or 0),
        tokens_in=int(task.get("tokens_in") or 0),
        tokens_out=int(task.get("tokens_out") or 0),
        cost=float(task.get("cost") or 0.0),
        created_at=task.get("created_at"),
        started_at=task.get("started_at"),
        finished_at=task.get("finished_at"),
        duration_s=round(duration, 3) if duration is not None else None,
        purple_url=task.get("purple_url"),
        scores=compact_scores(task.get("scores")),
        verified=task.get("verified"),
        provenance=decisive(task.get("provenance")),
        dir=task_dir,
        notes=notes,
    )


def decisive(provenance: dict[str, Any] | None) -> dict[str, Any] | None:
    """The part of green's task provenance an Outcome keeps (what decides the score)."""
    if not provenance:
        return None
    image = provenance.get("image") or {}
    scoring = provenance.get("scoring") or {}
    green = provenance.get("green") or {}
    return {
        "scoring_version": scoring.get("version"),
        "image_id": image.get("id"),
        "image": image.get("name"),
        "green_version": green.get("version"),
        "green_commit": green.get("commit"),
        "ground_truth_sha256": provenance.get("ground_truth_sha256"),
    }


def aggregate_outcomes(outcomes: list[Outcome]) -> dict[str, Any]:
    """The run aggregate (``Aggregate.to_dict()``) of the outcomes: failed and cancelled tasks
    count 0, infra failures are reported apart, unscorable tasks stay out of the means. A failed
    outcome without a failure kind counts as an infra failure (as in green)."""
    return aggregate_records(
        {
            "task_id": o.task_id,
            "arvo_id": o.arvo_id,
            "trial": o.trial,
            "status": o.status,
            "failure_kind": o.failure_kind,
            "scores": o.scores,
            "error": o.error,
        }
        for o in outcomes
    ).to_dict()
