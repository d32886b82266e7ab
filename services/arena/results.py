"""``results/<run>/results.json``: run metadata, one outcome per task reference and trial, and
the aggregate.

An outcome is green's record of a finished task (:class:`services.shared.outcome.TaskOutcome`,
the one outcome type) with what the client saved beside it (:class:`RunOutcome`). Runs are keyed
by the task reference (``arvo:10055``, ``swebench:django__django-11099``); the aggregate is the
one green's assessments use (:func:`services.shared.scores.aggregate_kinds`: each kind over its
own tasks), over the metrics green declared or found in the records, so a batch report and an
AgentBeats assessment score a run the same way.

Files written before task kinds (schema 1: outcomes keyed by ``arvo_id``, bare ids in
``task_ids``) still load: ``arvo_id`` is read as a deprecated alias of an ARVO reference.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, field_validator, model_validator

from services.shared.comparable import decisive_of
from services.shared.files import write_json_atomic
from services.shared.outcome import TaskOutcome
from services.shared.paired import Attempt
from services.shared.scores import aggregate_records_kinds, hit_or_miss, metric_names
from services.shared.task_ref import TaskRef

RESULTS_FILE = "results.json"
SCHEMA_VERSION = 2
"""2: outcomes keyed by ``kind`` + ``ref_id`` (1: by ``arvo_id``, still read)."""
NEVER_STARTED = "purple_unreachable"
"""End reason of a task purple could not be reached for: it never started, a resumed run runs
it again (with or without --retry-failed), unless it ran a command (an older green recorded a
purple that used the task and then failed its hand-over this way too)."""

TASK_FILE_MODE = 0o600
"""``tasks/*/task.json`` holds the ground truth once green discloses it (and the other files of
a task what the agent did and answered): readable by the run's owner only."""

REFUSED = "rejected"
"""End reason of an attempt green refused to create (its answer to ``POST /tasks`` was 4xx): it
never ran, so it is listed but enters no mean."""

Slot = tuple[TaskRef, int]
"""One attempt of the run: (task reference, trial index 1..K)."""
SCORE_FLAGS = ("scorable", "submitted", "n_locations", "project", "floors", "bug_class")
"""What a compact score keeps besides the metrics (the aggregate and the report read them)."""


def slot_label(ref: TaskRef, trial: int) -> str:
    """``arvo:10055`` for the first trial, ``arvo:10055#2`` for the second..."""
    return str(ref) if trial == 1 else f"{ref}#{trial}"


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def task_dir_name(ref: TaskRef, task_id: str) -> str:
    """``<kind>_<id>-<first 8 characters of green's task id>`` (``arvo_10055-1a2b3c4d``)."""
    return f"{ref.kind}_{ref.id}-{task_id[:8]}"


def write_task_file(path: Path, data: Any) -> None:
    """One of a task's files (``task.json``, ``commands.json``, ``trajectory.json``), written
    atomically with :data:`TASK_FILE_MODE`."""
    write_json_atomic(path, data, mode=TASK_FILE_MODE)


def compact_scores(scores: dict[str, Any] | None) -> dict[str, Any] | None:
    """The part of a kind's score JSON the aggregate and the report need: its metrics (the
    names found in it, :func:`services.shared.scores.metric_names`) and :data:`SCORE_FLAGS`
    (the whole score, with its explanation, stays in the task's ``task.json``)."""
    if not scores:
        return None
    out: dict[str, Any] = {k: scores[k] for k in metric_names([scores])}
    out.update({k: scores[k] for k in SCORE_FLAGS if k in scores})
    return out


class RunOutcome(TaskOutcome):
    """How one attempt of the run ended: green's outcome record, with what the client saved
    beside it. Ended attempts only (a task the client gave up on is ``cancelled``)."""

    agent_reason: str | None = None
    """How the agent said it ended, in its own words (green's ``agent_reason``): shown as the
    agent's words, never used to decide ``failure_kind``."""
    created_at: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    purple_url: str | None = None
    dir: str | None = None
    """The task's folder, relative to the run folder (``tasks/<kind>_<id>-<task_id8>``)."""
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
    """What decides the score (scoring rule version, image digest and identity, green's
    version; see :mod:`services.arena.manifest`); the whole provenance is in ``task.json``."""
    disclosed: str | None = None
    """How much of its record green showed (``all``; ``pending``: the rest once no task of the
    same bug is unfinished; ``public``: without the operator token); None: a green or a run from
    before green said so. :mod:`services.arena.records` fetches what was withheld."""
    withheld: list[str] = []
    """The fields green left out of the record when it was fetched (``scores.floors``...)."""

    @model_validator(mode="after")
    def _ended(self) -> RunOutcome:
        if not self.status.terminal:
            raise ValueError(f"a run records ended tasks only, not {self.status.value!r}")
        if not self.ref_id:
            raise ValueError("an outcome of a run needs its task reference")
        return self

    def metric(self, name: str) -> float:
        return float((self.scores or {}).get(name, 0.0))

    def as_attempt(self) -> Attempt:
        """The attempt as the paired comparison and the provenance check read it."""
        return Attempt(
            self.ref or "",
            self.status,
            self.failure_kind,
            self.end_reason,
            self.scores,
            self.error,
            self.provenance,
        )

    @property
    def slot(self) -> Slot:
        return (self.task_ref, self.trial)

    @property
    def label(self) -> str:
        return slot_label(*self.slot)


class Session(BaseModel):
    """One invocation of ``arena run`` on this run folder."""

    started_at: str
    finished_at: str | None = None
    args: dict[str, Any] = {}
    submitted: list[str] = []
    """Attempts this invocation sent to green (:func:`slot_label`)."""
    interrupted: bool = False
    error: str | None = None


def _stored_ref(value: str) -> TaskRef:
    """A reference as results.json stores it: canonical ``kind:id`` (schema 1: a bare ARVO id,
    read as ``arvo:<id>``, the deprecated form)."""
    try:
        return TaskRef.parse(value)
    except ValueError:
        kind, sep, ident = str(value).partition(":")
        return TaskRef(kind, ident) if sep else TaskRef("arvo", str(value))


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
    """Every task reference of the run (``arvo:10055``), in order."""
    trials: int = 1
    """Attempts per reference (``--trials``): each its own green task, with its trial index."""
    tasks: list[RunOutcome] = []
    """One outcome per (reference, trial) that has ended, in the order of ``task_ids`` then
    trial."""
    kinds: dict[str, dict[str, Any]] = {}
    """What green declared of each kind (``GET /kinds``): ``metrics`` (names in report order),
    ``continuous`` (not hit/miss), ``fields`` (the score fields each record carries); None or
    absent: found in the records."""
    aggregate: dict[str, Any] = {}
    green_run: str | None = None
    """Green's id of this run (``POST /runs``): its page is ``<green>/ui/runs/<id>``, and a
    resumed run opens it again."""

    @field_validator("task_ids", mode="before")
    @classmethod
    def _canonical_refs(cls, value: Any) -> Any:
        if isinstance(value, list):
            return list(dict.fromkeys(str(_stored_ref(str(v))) for v in value))
        return value

    @model_validator(mode="after")
    def _current_schema(self) -> RunResults:
        self.schema_version = SCHEMA_VERSION  # an older file is saved in the current form
        return self

    # ---- outcomes ------------------------------------------------------------------------

    def refs(self) -> list[TaskRef]:
        return [_stored_ref(r) for r in self.task_ids]

    def add(self, ref: TaskRef) -> None:
        """Add a reference to the run (kept once, in order)."""
        if str(ref) not in self.task_ids:
            self.task_ids.append(str(ref))

    def rename(self, old: TaskRef, new: TaskRef) -> None:
        """Name a reference as green does (its canonical form), keeping its place."""
        self.task_ids = list(dict.fromkeys(str(new) if r == str(old) else r for r in self.task_ids))

    def slots(self) -> list[Slot]:
        """Every (reference, trial) of the run, in order."""
        return [(r, t) for r in self.refs() for t in range(1, self.trials + 1)]

    def outcome(self, ref: TaskRef, trial: int = 1) -> RunOutcome | None:
        return next((o for o in self.tasks if o.slot == (ref, trial)), None)

    def record(self, outcome: RunOutcome) -> None:
        """Add or replace the outcome of a (reference, trial) (keeping ``task_ids`` order) and
        re-aggregate."""
        previous = self.outcome(*outcome.slot)
        if previous is not None:
            outcome.attempts = previous.attempts + 1
        self.add(outcome.task_ref)
        order = {r: i for i, r in enumerate(self.refs())}
        rest = [o for o in self.tasks if o.slot != outcome.slot]
        self.tasks = sorted(
            [*rest, outcome], key=lambda o: (order.get(o.task_ref, len(order)), o.trial)
        )
        self.refresh_aggregate()

    def pending(self, retry_failed: bool) -> list[Slot]:
        """Attempts still to run: never ended, cancelled (an interrupted run), never started
        because purple was unreachable (and ran no command), and, with ``retry_failed``, failed.
        A scored attempt never runs again."""
        ended = {o.slot: o for o in self.tasks}
        return [
            slot
            for slot in self.slots()
            if (o := ended.get(slot)) is None
            or o.status == "cancelled"
            or (o.end_reason == NEVER_STARTED and not o.steps)
            or (o.status == "failed" and retry_failed)
        ]

    def not_run(self) -> list[Slot]:
        ended = {o.slot for o in self.tasks}
        return [s for s in self.slots() if s not in ended]

    def run_kinds(self) -> list[str]:
        """The kinds of the run's tasks, in the order they first appear."""
        return list(dict.fromkeys([*(r.kind for r in self.refs()), *(o.kind for o in self.tasks)]))

    def of_kind(self, kind: str) -> RunResults:
        """The run restricted to the tasks of one kind (its references, outcomes and
        aggregate): what a report's or a comparison's table of that kind reads."""
        part = self.model_copy(
            update={
                "task_ids": [str(r) for r in self.refs() if r.kind == kind],
                "tasks": [o for o in self.tasks if o.kind == kind],
                "kinds": {kind: self.kinds[kind]} if kind in self.kinds else {},
            }
        )
        part.refresh_aggregate()
        return part

    def by_kind(self) -> list[tuple[str, RunResults]]:
        """Per kind of the run, the run restricted to it (:meth:`of_kind`); a run of one kind:
        itself."""
        kinds = self.run_kinds()
        if len(kinds) <= 1:
            return [(kinds[0] if kinds else "", self)]
        return [(k, self.of_kind(k)) for k in kinds]

    def _declared(self, key: str, kind: str | None = None) -> list[list[str] | None]:
        """Per kind of the run (in order; ``kind``: that one), what green declared under
        ``key``."""
        kinds = [kind] if kind else self.run_kinds()
        return [(self.kinds.get(k) or {}).get(key) for k in kinds]

    def metrics(self, kind: str | None = None) -> list[str]:
        """The metrics of the run (``kind``: of its tasks of that kind): those green declared
        for its kinds, then any other found in the recorded scores."""
        declared = [m for names in self._declared("metrics", kind) for m in names or ()]
        found = metric_names(o.scores for o in self.tasks if kind in (None, o.kind))
        return list(dict.fromkeys([*declared, *found]))

    def continuous(self) -> set[str] | None:
        """The metrics green declared continuous for the run's kinds; None when a kind did not
        say (then a metric whose every recorded value is 0 or 1 is hit/miss)."""
        said = self._declared("continuous")
        if not said or any(c is None for c in said):
            return None
        return set().union(*said)  # type: ignore[arg-type]

    def binary(self) -> set[str]:
        """The hit/miss metrics of the run (McNemar applies; cells print ``1``/``0``)."""
        continuous = self.continuous()
        if continuous is not None:
            return set(self.metrics()) - continuous
        scores = [o.scores for o in self.tasks]
        return {m for m in self.metrics() if hit_or_miss(scores, m)}

    def refresh_aggregate(self) -> None:
        """Each kind's aggregate over its own tasks, of its metrics (one kind: at the top;
        several: ``by_kind``, :func:`services.shared.scores.aggregate_kinds`)."""
        self.aggregate = aggregate_outcomes(self.tasks, self.metrics)

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


def outcome_from_task(task: dict[str, Any], *, task_dir: str | None = None) -> RunOutcome:
    """The outcome of a task from green's ``GET /tasks/{id}`` JSON (``TaskPublic``): its
    reference is green's ``ref`` (the canonical one; ``kind`` + ``ref_id``, or the deprecated
    ``arvo_id``, from an older green).

    A task that is not terminal (the CLI gave up on it) is recorded as ``cancelled``.
    """
    status = str(task.get("status") or "")
    notes: list[str] = []
    if status not in ("completed", "failed", "cancelled"):
        notes.append(f"green still reported the task {status or 'without a status'}")
        status = "cancelled"
    started, finished = _parse_time(task.get("started_at")), _parse_time(task.get("finished_at"))
    duration = (finished - started).total_seconds() if started and finished else None
    kind = task.get("failure_kind")
    ref = {k: task[k] for k in ("ref", "kind", "ref_id", "arvo_id") if task.get(k) is not None}
    return RunOutcome(
        **ref,
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
        disclosed=task.get("disclosed"),
        withheld=list(task.get("withheld") or []),
        dir=task_dir,
        notes=notes,
    )


def decisive(provenance: dict[str, Any] | None) -> dict[str, Any] | None:
    """The part of green's task provenance a RunOutcome keeps: what decides the score
    (:func:`services.shared.comparable.decisive_of`), the image's name and green's version."""
    if not provenance:
        return None
    green = provenance.get("green") or {}
    return {
        **decisive_of(provenance),
        "image": (provenance.get("image") or {}).get("name"),
        "green_version": green.get("version"),
        "green_commit": green.get("commit"),
    }


def aggregate_outcomes(
    outcomes: list[RunOutcome], metrics: Callable[[str], Sequence[str] | None] | None = None
) -> dict[str, Any]:
    """The run aggregate of the outcomes (:func:`services.shared.scores.aggregate_kinds`: each
    kind over its own tasks), over ``metrics`` of each kind (default: those found in its
    scores): failed and cancelled tasks count 0, infra failures are reported apart, unscorable
    tasks stay out of the means, and attempts green refused (:data:`REFUSED`: they never ran)
    stay out of everything. A failed outcome without a failure kind counts as an infra failure
    (as in green)."""
    records = [
        {
            "task_id": o.task_id,
            "kind": o.kind,
            "ref_id": o.ref_id,
            "trial": o.trial,
            "status": o.status,
            "failure_kind": o.failure_kind,
            "scores": o.scores,
            "error": o.error,
        }
        for o in outcomes
        if o.end_reason != REFUSED
    ]
    return aggregate_records_kinds(records, metrics)
