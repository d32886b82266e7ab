"""The seven localization metrics and their aggregate over a run.

Green's ARVO judge scores one task (``services/green/kinds/arvo/scoring/metrics.py``); the means over a run are
computed here, from green's task records, so an assessment on green and a batch report of the
``arena`` client aggregate a run the same way. ``docs/scoring.md`` defines the metrics.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from services.shared import stats
from services.shared.outcome import TaskOutcome

METRICS = ("file@1", "file@5", "func@1", "func@5", "line@1", "line@5", "iou")
METRIC_FIELDS = (
    "file_at_1",
    "file_at_5",
    "func_at_1",
    "func_at_5",
    "line_at_1",
    "line_at_5",
    "iou",
)
"""The attribute names of :data:`METRICS`."""


class Metrics(BaseModel):
    """The seven numbers, named as in reports (``file@1``...); shared by a task's score and the
    means of a run."""

    model_config = ConfigDict(populate_by_name=True)

    file_at_1: float = Field(0.0, alias="file@1")
    file_at_5: float = Field(0.0, alias="file@5")
    func_at_1: float = Field(0.0, alias="func@1")
    func_at_5: float = Field(0.0, alias="func@5")
    line_at_1: float = Field(0.0, alias="line@1")
    line_at_5: float = Field(0.0, alias="line@5")
    iou: float = 0.0


class ScoreSummary(Metrics):
    """What the aggregate reads of a task's score: the metrics and whether they count."""

    scorable: bool = True
    """False when the ground truth is empty (empty patch, no code changes)."""
    submitted: bool = False
    """A valid loc.json was scored."""
    n_locations: int = 0
    """Locations in the submission (only the first 5 count)."""
    project: str | None = None
    """The bug's project: the cluster of the bootstrap (tasks of one project are not
    independent)."""


class MetricMeans(Metrics):
    n: int = 0
    """Tasks in the denominator."""


class Aggregate(BaseModel):
    """Means over a run. Failed and cancelled tasks and tasks without a valid submission count as
    0; tasks whose ground truth is empty are counted but left out of every mean."""

    n_tasks: int = 0
    """Distinct tasks (a task run K times counts once)."""
    n_attempts: int = 0
    """Task records aggregated: tasks x trials (the counts below are of attempts)."""
    by_status: dict[str, int] = {}
    by_failure: dict[str, int] = {}
    """``infra`` / ``agent`` failures (failed tasks only)."""
    n_scored: int = 0
    """Completed tasks with a scorable ground truth and a valid submission."""
    n_no_submission: int = 0
    """Completed tasks without a valid submission (counted as 0)."""
    n_unscorable: int = 0
    """Tasks whose ground truth is empty (not in the means)."""
    mean_all: MetricMeans = MetricMeans()
    """Over every scorable task; failures, cancellations and missing submissions count 0."""
    mean_non_infra: MetricMeans = MetricMeans()
    """Same, without infra failures and cancelled tasks: what the agent is answerable for."""
    uncertainty: dict[str, Any] = {}
    """Per mean (``mean_all``, ``mean_non_infra``) and metric: ``mean``, ``se``, ``ci_low``,
    ``ci_high``, ``n``, ``n_clusters``; with ``method``, ``resamples``, ``seed``, ``level``."""
    trials: dict[str, Any] = {}
    """``k``: the most trials of a task; per metric pass@k, pass^k (k = 1..K) and the
    consistency over the non-infra attempts (see :func:`services.shared.stats.trial_summary`)."""
    floors: dict[str, Any] = {}
    """Per floor (``empty``: an empty submission; ``crash_frame``: the top in-project frame of
    the crash report as the only location) and metric: its mean over the tasks of
    ``mean_all`` that report it, with interval; ``n``: those tasks."""
    explanation: list[str] = []

    def to_dict(self) -> dict:
        return self.model_dump(by_alias=True, mode="json")


def _means(values: Iterable[dict[str, float]]) -> MetricMeans:
    rows = list(values)
    out = MetricMeans(n=len(rows))
    for f in METRIC_FIELDS:
        setattr(out, f, round(sum(r[f] for r in rows) / len(rows), 6) if rows else 0.0)
    return out


class _Task:
    """The attempts (trials) of one task: rows of metric values, all and non-infra."""

    def __init__(self, key: str) -> None:
        self.cluster = key
        self.rows_all: list[dict[str, float]] = []
        self.rows_non_infra: list[dict[str, float]] = []
        self.floors: dict[str, Any] | None = None

    @staticmethod
    def mean(rows: list[dict[str, float]]) -> dict[str, float]:
        return {f: sum(r[f] for r in rows) / len(rows) for f in METRIC_FIELDS}


def _task_key(o: TaskOutcome, seen: dict[tuple[str, int], int]) -> str:
    """The unit an attempt belongs to: its task reference, with the attempts of one reference
    grouped only while their trial indices differ (the same reference run twice as trial 1,
    e.g. single tasks of two batch runs, stays two units)."""
    if not o.ref_id:
        return f"task:{o.task_id}"
    ref = f"{o.kind}:{o.ref_id}"
    n = seen.get((ref, o.trial), 0)
    seen[(ref, o.trial)] = n + 1
    return ref if n == 0 else f"{ref}#{n}"


def _uncertainty(units: list[_Task], which: str) -> dict[str, Any]:
    rows = [(t, getattr(t, which)) for t in units if getattr(t, which)]
    means = [_Task.mean(r) for _, r in rows]
    clusters = [t.cluster for t, _ in rows]
    return {
        name: stats.cluster_bootstrap([m[f] for m in means], clusters).to_dict()
        for name, f in zip(METRICS, METRIC_FIELDS, strict=True)
    }


def _trials(units: list[_Task]) -> dict[str, Any]:
    k = max((len(t.rows_non_infra) for t in units), default=0)
    out: dict[str, Any] = {"k": k}
    if k == 0:
        return out
    for name, f in zip(METRICS, METRIC_FIELDS, strict=True):
        per_task = {id(t): [r[f] for r in t.rows_non_infra] for t in units if t.rows_non_infra}
        out[name] = stats.trial_summary(per_task, k)
    return out


def _floors(units: list[_Task]) -> dict[str, Any]:
    with_floors = [t for t in units if t.rows_all and t.floors]
    if not with_floors:
        return {}
    clusters = [t.cluster for t in with_floors]
    out: dict[str, Any] = {"n": len(with_floors)}
    for floor in ("empty", "crash_frame"):
        vals = [t.floors.get(floor) or {} for t in with_floors]  # type: ignore[union-attr]
        out[floor] = {
            m: stats.cluster_bootstrap([float(v.get(m, 0.0)) for v in vals], clusters).to_dict()
            for m in METRICS
        }
    return out


def _classify(o: TaskOutcome, agg: Aggregate, task: _Task, status: dict, failure: dict) -> None:
    """Count one attempt and add its row (0 for failures) to its task."""
    if o.status not in status:
        raise ValueError(f"task {o.task_id} has not ended ({o.status}): nothing to aggregate")
    status[o.status] += 1
    if o.status == "failed" and o.failure_kind:
        failure[o.failure_kind] += 1
    score = ScoreSummary.model_validate(o.scores) if o.scores else None
    if score is not None and score.project:
        task.cluster = f"project:{score.project}"
    if o.scores and isinstance(o.scores.get("floors"), dict):
        task.floors = o.scores["floors"]
    if score is not None and not score.scorable:
        agg.n_unscorable += 1
        return
    if o.status == "completed" and score is not None and score.submitted:
        row = {f: float(getattr(score, f)) for f in METRIC_FIELDS}
        agg.n_scored += 1
    else:
        row = dict.fromkeys(METRIC_FIELDS, 0.0)
        if o.status == "completed":
            agg.n_no_submission += 1
    task.rows_all.append(row)
    if not (o.status == "failed" and o.failure_kind == "infra") and o.status != "cancelled":
        task.rows_non_infra.append(row)


def aggregate(outcomes: Iterable[TaskOutcome]) -> Aggregate:
    """Aggregate task outcomes of a run (see :class:`Aggregate`). Attempts of one task (its
    trials) are averaged first: the task is the unit of every mean and interval."""
    outcomes = list(outcomes)
    agg = Aggregate(n_attempts=len(outcomes))
    tasks: dict[str, _Task] = {}
    status_counts = {"completed": 0, "failed": 0, "cancelled": 0}
    failure_counts = {"infra": 0, "agent": 0}
    seen: dict[tuple[str, int], int] = {}
    for o in outcomes:
        key = _task_key(o, seen)
        task = tasks.setdefault(key, _Task(key))
        _classify(o, agg, task, status_counts, failure_counts)
    units = list(tasks.values())
    agg.n_tasks = len(units)
    agg.by_status = status_counts
    agg.by_failure = failure_counts
    agg.mean_all = _means(_Task.mean(t.rows_all) for t in units if t.rows_all)
    agg.mean_non_infra = _means(_Task.mean(t.rows_non_infra) for t in units if t.rows_non_infra)
    agg.uncertainty = {
        **stats.method_info(),
        "mean_all": _uncertainty(units, "rows_all"),
        "mean_non_infra": _uncertainty(units, "rows_non_infra"),
    }
    agg.trials = _trials(units)
    agg.floors = _floors(units)
    agg.explanation = _explain(agg, status_counts, failure_counts)
    return agg


def _explain(agg: Aggregate, status_counts: dict, failure_counts: dict) -> list[str]:
    trials = (
        f" ({agg.n_attempts} attempts: trials are averaged per task first)"
        if agg.n_attempts != agg.n_tasks
        else ""
    )
    return [
        f"{agg.n_tasks} tasks{trials}: {status_counts['completed']} completed, "
        f"{status_counts['failed']} failed ({failure_counts['infra']} infra, "
        f"{failure_counts['agent']} agent), {status_counts['cancelled']} cancelled",
        f"{agg.n_scored} scored submissions, {agg.n_no_submission} completed without a valid "
        f"submission (0), {agg.n_unscorable} without ground truth (left out)",
        f"mean_all over {agg.mean_all.n} tasks counts every failure and cancellation as 0; "
        f"mean_non_infra over {agg.mean_non_infra.n} tasks leaves out infra failures and "
        "cancellations",
        f"intervals: 95% {stats.METHOD}, {stats.RESAMPLES} resamples, seed {stats.SEED}",
    ]


def aggregate_records(records: Iterable[Mapping[str, Any]]) -> Aggregate:
    """:func:`aggregate` over plain task records (green's task JSON, the CLI's results.json):
    keys ``task_id``, ``ref_id`` (or ``arvo_id``), ``status``, ``failure_kind``, ``scores`` (a
    TaskScore dict), ``error``. A failed record without a failure kind counts as an infra
    failure."""
    return aggregate(TaskOutcome.from_record(dict(r)) for r in records)


def flat_scores(agg: Mapping[str, Any]) -> dict[str, int | float | str | None]:
    """One flat row of an aggregate (``Aggregate.to_dict()``) with stable keys, for
    leaderboards (DuckDB reads it without unnesting): per metric ``file_at_1`` (the mean over
    all tasks), ``_se``, ``_ci_low``, ``_ci_high``, ``_non_infra`` (with its interval),
    ``_pass_at_k`` / ``_pass_hat_k`` (k = 1..K), ``_consistency``, ``_floor_empty``,
    ``_floor_crash_frame``; counts are integers."""
    out: dict[str, int | float | str | None] = {}
    for key in ("n_tasks", "n_attempts", "n_scored", "n_no_submission", "n_unscorable"):
        out[key] = int(agg.get(key) or 0)
    for k, v in (agg.get("by_status") or {}).items():
        out[f"n_{k}"] = int(v)
    for k, v in (agg.get("by_failure") or {}).items():
        out[f"n_failed_{k}"] = int(v)
    unc = agg.get("uncertainty") or {}
    trials = agg.get("trials") or {}
    floors = agg.get("floors") or {}
    out["trials"] = int(trials.get("k") or 0)
    out["ci_method"] = unc.get("method")
    out["ci_resamples"] = unc.get("resamples")
    out["ci_seed"] = unc.get("seed")
    out["ci_level"] = unc.get("level")
    out["n_clusters"] = next(iter((unc.get("mean_all") or {}).values()), {}).get("n_clusters")
    for name, f in zip(METRICS, METRIC_FIELDS, strict=True):
        out[f] = (agg.get("mean_all") or {}).get(name)
        for which, suffix in (("mean_all", ""), ("mean_non_infra", "_non_infra")):
            iv = (unc.get(which) or {}).get(name) or {}
            if suffix:
                out[f + suffix] = (agg.get(which) or {}).get(name)
            out[f"{f}{suffix}_se"] = iv.get("se")
            out[f"{f}{suffix}_ci_low"] = iv.get("ci_low")
            out[f"{f}{suffix}_ci_high"] = iv.get("ci_high")
        row = trials.get(name) or {}
        for k in range(1, out["trials"] + 1):  # type: ignore[operator]
            out[f"{f}_pass_at_{k}"] = row.get(f"pass@{k}")
            out[f"{f}_pass_hat_{k}"] = row.get(f"pass^{k}")
        out[f"{f}_consistency"] = row.get("consistency")
        for floor in ("empty", "crash_frame"):
            out[f"{f}_floor_{floor}"] = ((floors.get(floor) or {}).get(name) or {}).get("mean")
    return out
