"""A run's means over its task records, for any task kind.

A kind's judge scores one task (ARVO: ``services/green/kinds/arvo/scoring/metrics.py``); the
means over a run are computed here, from the task records, so an assessment on green and a batch
report of the ``arena`` client aggregate a run the same way. ``docs/scoring.md`` defines ARVO's
metrics.

Which numbers are metrics is the kind's business: green's kinds pass their metric names;
elsewhere (the ``arena`` client, which cannot ask the kind) they are the names found in the
records (:func:`metric_names`). A score record is a JSON object whose metrics are its top-level
real numbers (``"file@1": 1.0``, ``"resolved": 0.0``); its other keys are flags (``scorable``,
``submitted``), counts (integers), text and nested objects. The aggregate reads these of it:

- ``scorable`` (default true): false when the ground truth is empty; the task stays out of
  every mean;
- ``submitted`` (default true): a valid submission was scored (false: every metric counts 0);
- ``project``: the cluster of every interval (tasks of one project are not independent);
- ``floors``: per floor (``empty``, ``crash_frame``) the metrics a trivial answer would score.

Each metric is a mean over the tasks of the kind that declares it: a run of several kinds
(:func:`aggregate_kinds`) is aggregated one kind at a time (``{"by_kind": {kind: aggregate}}``;
a run of one kind: its aggregate itself), and :func:`aggregate` refuses outcomes of two kinds,
where a task would score 0 on every metric its kind does not have.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from services.shared import stats
from services.shared.outcome import TaskOutcome

FLOORS = ("empty", "crash_frame")


def metric_names(records: Iterable[Mapping[str, Any] | None]) -> list[str]:
    """The metrics found in score records, in the order they first appear: each record's
    top-level keys whose value is a real number (``float``; flags are bools, counts ints)."""
    found: dict[str, None] = {}
    for r in records:
        for k, v in (r or {}).items():
            if isinstance(v, float):
                found.setdefault(k, None)
    return list(found)


def hit_or_miss(records: Iterable[Mapping[str, Any] | None], metric: str) -> bool:
    """Whether every recorded value of ``metric`` is 0 or 1 (a hit/miss metric: its means are
    hit rates with a proportion's interval, reports print it as ``1``/``0``); a continuous one
    (ARVO's ``iou``) is not."""
    values = [r[metric] for r in records if r and isinstance(r.get(metric), int | float)]
    return all(v in (0, 1) for v in values)


BESIDE = frozenset(
    {
        *(
            m + suffix
            for m in ("file_recall", "hunk_recall", "line_recall", "line_precision", "line_f1")
            for suffix in ("", "_path")
        ),
        "flb_iou",
        "flb_iou_path",
    }
)
"""Metrics a kind reports beside its own so that its runs can be set beside another
benchmark's (ARVO: FLBench's, ``docs/scoring.md`` section 3b): in every full table, never in a
narrow view (:func:`headline`)."""


def headline(metrics: Iterable[str]) -> list[str]:
    """The metrics a narrow view shows: without the ``@k`` ones for k > 1 and those reported
    :data:`BESIDE` (ARVO: ``file@1 func@1 line@1 iou`` of its nineteen)."""
    out = []
    for m in metrics:
        base, at, k = m.rpartition("@")
        if not (at and base and k.isdigit() and int(k) > 1) and m not in BESIDE:
            out.append(m)
    return out


def field_name(metric: str) -> str:
    """A metric's name as an identifier (``file@1`` -> ``file_at_1``): leaderboard columns."""
    return re.sub(r"\W", "_", metric.replace("@", "_at_"))


def score_value(scores: Mapping[str, Any] | None, metric: str) -> float:
    """One metric of a score record (0 when absent)."""
    v = (scores or {}).get(metric, 0.0)
    return float(v) if isinstance(v, int | float) else 0.0


class MetricMeans(BaseModel):
    """Means of a run, one key per metric (``file@1``...), with ``n``: the tasks in the
    denominator. ``means["file@1"]`` reads one (None over 0 tasks: no mean, never 0)."""

    model_config = ConfigDict(extra="allow")

    n: int = 0

    def __getitem__(self, metric: str) -> float | None:
        value = (self.model_extra or {}).get(metric)
        return None if value is None else float(value)


class Aggregate(BaseModel):
    """Means over a run. Failed and cancelled tasks and tasks without a valid submission count as
    0; tasks whose ground truth is empty are counted but left out of every mean."""

    kind: str | None = None
    """The task kind aggregated (None over no task)."""
    metrics: list[str] = []
    """The metrics averaged (the kind's, or the names found in the records), in report order."""
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
    ``ci_high``, ``n``, ``n_clusters``, ``method`` (a key of ``methods``), ``no_interval`` (why
    there is none: ``one project``), ``df``; with ``level`` and ``methods`` (the methods used,
    described)."""
    trials: dict[str, Any] = {}
    """``k``: the most non-infra attempts of a task (K); ``n``: the tasks with K of them, the one
    task set of every pass@k and pass^k (k = 1..K) and of the consistency, per hit/miss metric
    (a continuous one, iou with partial overlaps, has no hit to count)
    (:func:`services.shared.stats.trial_summary`); ``n_fewer``: the tasks left out."""
    floors: dict[str, Any] = {}
    """Per floor (``empty``: an empty submission; ``crash_frame``: the top in-project frame of
    the crash report as the only location) and metric: its mean over the tasks of
    ``mean_all`` that report it, with interval; ``n``: those tasks."""
    explanation: list[str] = []

    def to_dict(self) -> dict:
        return self.model_dump(mode="json")


def _means(values: Iterable[dict[str, float]], metrics: Sequence[str]) -> MetricMeans:
    rows = list(values)
    means = {m: round(sum(r[m] for r in rows) / len(rows), 6) if rows else None for m in metrics}
    return MetricMeans(n=len(rows), **means)


class _Task:
    """The attempts (trials) of one task: rows of metric values, all and non-infra."""

    def __init__(self, key: str) -> None:
        self.cluster = key
        self.rows_all: list[dict[str, float]] = []
        self.rows_non_infra: list[dict[str, float]] = []
        self.floors: dict[str, Any] | None = None

    @staticmethod
    def mean(rows: list[dict[str, float]]) -> dict[str, float]:
        return {m: sum(r[m] for r in rows) / len(rows) for m in rows[0]}


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


def _intervals(
    columns: Mapping[str, list[float]],
    clusters: list[str],
    hit_rates: set[str],
    trials: list[int] | None = None,
) -> dict[str, Any]:
    """Per metric (``columns``: its value per task, the mean of the task's ``trials``), the
    interval of its mean: the hit rates' together, then the others' (one pass over the design
    each)."""
    out: dict[str, Any] = {}
    for hit_rate in (True, False):
        names = [m for m in columns if (m in hit_rates) == hit_rate]
        if names:
            rows = [columns[m] for m in names]
            ivs = stats.mean_intervals(rows, clusters, hit_rate=hit_rate, trials=trials)
            out.update({m: iv.to_dict() for m, iv in zip(names, ivs, strict=True)})
    return {m: out[m] for m in columns}


def _uncertainty(
    units: list[_Task], which: str, metrics: Sequence[str], hit_rates: set[str]
) -> dict[str, Any]:
    rows = [(t, getattr(t, which)) for t in units if getattr(t, which)]
    means = [_Task.mean(r) for _, r in rows]
    clusters = [t.cluster for t, _ in rows]
    trials = [len(r) for _, r in rows]
    columns = {m: [row[m] for row in means] for m in metrics}
    return _intervals(columns, clusters, hit_rates, trials)


def _trials(units: list[_Task], metrics: Sequence[str]) -> dict[str, Any]:
    k = max((len(t.rows_non_infra) for t in units), default=0)
    out: dict[str, Any] = {"k": k}
    if k == 0:
        return out
    out["n"] = sum(len(t.rows_non_infra) >= k for t in units)
    out["n_fewer"] = sum(0 < len(t.rows_non_infra) < k for t in units)
    for m in metrics:
        per_task = {id(t): [r[m] for r in t.rows_non_infra] for t in units if t.rows_non_infra}
        out[m] = stats.trial_summary(per_task, k)
    return out


def _floors(units: list[_Task], metrics: Sequence[str], hit_rates: set[str]) -> dict[str, Any]:
    with_floors = [t for t in units if t.rows_all and t.floors]
    if not with_floors:
        return {}
    clusters = [t.cluster for t in with_floors]
    out: dict[str, Any] = {"n": len(with_floors)}
    for floor in FLOORS:
        vals = [t.floors.get(floor) or {} for t in with_floors]  # type: ignore[union-attr]
        columns = {m: [score_value(v, m) for v in vals] for m in metrics}
        out[floor] = _intervals(columns, clusters, hit_rates)
    return out


def _methods_used(*groups: Mapping[str, Any]) -> dict[str, str]:
    """The methods named by the intervals of ``groups`` (metric -> interval), described."""
    used = {iv.get("method") for g in groups for iv in g.values() if isinstance(iv, dict)}
    return {k: v for k, v in stats.METHODS.items() if k in used}


def _classify(o: TaskOutcome, agg: Aggregate, task: _Task, status: dict, failure: dict) -> None:
    """Count one attempt and add its row (0 for failures) to its task."""
    if o.status not in status:
        raise ValueError(f"task {o.task_id} has not ended ({o.status}): nothing to aggregate")
    status[o.status] += 1
    if o.status == "failed" and o.failure_kind:
        failure[o.failure_kind] += 1
    score = o.scores
    if score and score.get("project"):
        task.cluster = f"project:{score['project']}"
    if score and isinstance(score.get("floors"), dict):
        task.floors = score["floors"]
    if score and score.get("scorable") is False:
        agg.n_unscorable += 1
        return
    if o.status == "completed" and score and score.get("submitted", True) is not False:
        row = {m: score_value(score, m) for m in agg.metrics}
        agg.n_scored += 1
    else:
        row = dict.fromkeys(agg.metrics, 0.0)
        if o.status == "completed":
            agg.n_no_submission += 1
    task.rows_all.append(row)
    if not (o.status == "failed" and o.failure_kind == "infra") and o.status != "cancelled":
        task.rows_non_infra.append(row)


def aggregate(outcomes: Iterable[TaskOutcome], metrics: Sequence[str] | None = None) -> Aggregate:
    """Aggregate task outcomes of a run (see :class:`Aggregate`). Attempts of one task (its
    trials) are averaged first: the task is the unit of every mean and interval. ``metrics``:
    the kind's metric names (default: the names found in the records' scores)."""
    outcomes = list(outcomes)
    kinds = list(dict.fromkeys(o.kind for o in outcomes))
    if len(kinds) > 1:
        raise ValueError(
            f"outcomes of {len(kinds)} kinds ({', '.join(kinds)}): each kind is aggregated over "
            "its own tasks (aggregate_kinds)"
        )
    names = list(metrics) if metrics is not None else metric_names(o.scores for o in outcomes)
    agg = Aggregate(kind=kinds[0] if kinds else None, n_attempts=len(outcomes), metrics=names)
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
    agg.mean_all = _means((_Task.mean(t.rows_all) for t in units if t.rows_all), names)
    agg.mean_non_infra = _means(
        (_Task.mean(t.rows_non_infra) for t in units if t.rows_non_infra), names
    )
    hit_rates = {m for m in names if hit_or_miss((o.scores for o in outcomes), m)}
    unc_all = _uncertainty(units, "rows_all", names, hit_rates)
    unc_non_infra = _uncertainty(units, "rows_non_infra", names, hit_rates)
    agg.uncertainty = {
        "level": stats.LEVEL,
        "methods": _methods_used(unc_all, unc_non_infra),
        "mean_all": unc_all,
        "mean_non_infra": unc_non_infra,
    }
    agg.trials = _trials(units, [m for m in names if m in hit_rates])
    agg.floors = _floors(units, names, hit_rates)
    agg.explanation = _explain(agg, status_counts, failure_counts)
    return agg


def aggregate_kinds(
    outcomes: Iterable[TaskOutcome],
    metrics: Callable[[str], Sequence[str] | None] | None = None,
    one: Callable[[str, list[TaskOutcome]], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The aggregate of a run (``Aggregate.to_dict()``): of its one kind, or, for a run of
    several, ``{"by_kind": {kind: aggregate}}`` in the order the kinds first appear, each over
    its own tasks. ``metrics``: a kind's metric names (None: those found in its records);
    ``one``: how a kind aggregates its outcomes (default :func:`aggregate`)."""
    groups: dict[str, list[TaskOutcome]] = {}
    for o in outcomes:
        groups.setdefault(o.kind, []).append(o)

    def of(kind: str, rows: list[TaskOutcome]) -> dict[str, Any]:
        if one is not None:
            return one(kind, rows)
        return aggregate(rows, metrics(kind) if metrics else None).to_dict()

    aggs = {k: of(k, rows) for k, rows in groups.items()}
    if len(aggs) == 1:
        return next(iter(aggs.values()))
    return {"by_kind": aggs} if aggs else aggregate([]).to_dict()


def kind_aggregates(agg: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """Per kind, its aggregate, from a run's (:func:`aggregate_kinds`: one kind's or
    ``by_kind``); a one-kind aggregate stored before aggregates named their kind is keyed
    ``""``; none for an empty one."""
    if not agg:
        return {}
    if "by_kind" in agg:
        return dict(agg["by_kind"])
    return {str(agg.get("kind") or ""): dict(agg)}


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
        "intervals: 95%, clustered by project, each with its method ("
        + (", ".join(agg.uncertainty.get("methods") or {}) or "none")
        + "; docs/scoring.md, section 5)",
    ]


def aggregate_records(
    records: Iterable[Mapping[str, Any]], metrics: Sequence[str] | None = None
) -> Aggregate:
    """:func:`aggregate` over plain task records (green's task JSON, the CLI's results.json):
    keys ``task_id``, ``kind`` + ``ref_id`` (or ``ref``), ``status``, ``failure_kind``,
    ``scores`` (the kind's score JSON), ``error``. A failed record without a failure kind
    counts as an infra failure."""
    return aggregate((TaskOutcome.from_record(dict(r)) for r in records), metrics)


def aggregate_records_kinds(
    records: Iterable[Mapping[str, Any]],
    metrics: Callable[[str], Sequence[str] | None] | None = None,
) -> dict[str, Any]:
    """:func:`aggregate_kinds` over plain task records (as :func:`aggregate_records`)."""
    return aggregate_kinds((TaskOutcome.from_record(dict(r)) for r in records), metrics)


def aggregate_metrics(agg: Mapping[str, Any]) -> list[str]:
    """The metrics of an aggregate (``Aggregate.to_dict()``); for one stored before aggregates
    named them, the keys of its means."""
    if agg.get("metrics"):
        return list(agg["metrics"])
    return [k for k in (agg.get("mean_all") or {}) if k != "n"]


_SUMMED = (
    "n_tasks",
    "n_attempts",
    "n_scored",
    "n_no_submission",
    "n_unscorable",
    "n_completed",
    "n_failed",
    "n_cancelled",
    "n_failed_infra",
    "n_failed_agent",
)
"""The counts of a run of several kinds' flat row: each the sum of its kinds'."""
_PER_KIND = ("n_mean_all", "n_mean_non_infra", "n_pass_k", "n_floors", "n_clusters")
"""The counts of one kind's means: null in a flat row of several kinds (each metric's own
``_n``, ``_n_clusters`` and ``_n_pass_k`` say them)."""


def flat_scores(agg: Mapping[str, Any]) -> dict[str, int | float | str | None]:
    """One flat row of a run's aggregate (:func:`aggregate_kinds`) with stable keys, for
    leaderboards (DuckDB reads it without unnesting): ``kinds`` (the run's kinds, comma
    separated); per metric ``file_at_1`` (the mean over all its kind's tasks, null over
    none), ``_n`` and ``_n_clusters`` (its tasks and projects), ``_se``, ``_ci_low``,
    ``_ci_high``, ``_ci_method`` (null bounds: ``_no_interval`` says why), ``_non_infra``
    (with its own), ``_pass_at_k`` / ``_pass_hat_k`` (k = 1..K, over the ``_n_pass_k`` tasks
    with K attempts), ``_consistency``, ``_floor_empty``, ``_floor_crash_frame``; the n of
    each mean (``n_mean_all``...); counts are integers. A run of several kinds: every kind's
    metric columns (a metric two kinds declare is prefixed by its kind's field name, as
    ``arvo_fix_resolved``), the counts summed over the kinds, the per-kind counts
    (:data:`_PER_KIND`) null."""
    kinds = kind_aggregates(agg)
    if len(kinds) <= 1:
        return {"kinds": next(iter(kinds), None) or None, **_flat_kind(agg)}
    rows = {k: _flat_kind(a) for k, a in kinds.items()}
    names = [m for a in kinds.values() for m in aggregate_metrics(a)]
    shared = {m for m in names if names.count(m) > 1}
    out: dict[str, int | float | str | None] = {"kinds": ",".join(kinds)}
    for key in _SUMMED:
        out[key] = sum(int(r.get(key) or 0) for r in rows.values())
    out["trials"] = max(int(r.get("trials") or 0) for r in rows.values())
    out.update(dict.fromkeys(_PER_KIND))
    out["ci_level"] = next((r["ci_level"] for r in rows.values() if r.get("ci_level")), None)
    for kind, a in kinds.items():
        for name in aggregate_metrics(a):
            cols = _flat_metric(name, a, int(rows[kind]["trials"] or 0))
            prefix = field_name(kind) + "_" if name in shared else ""
            out.update({prefix + c: v for c, v in cols.items()})
    return out


def _flat_kind(agg: Mapping[str, Any]) -> dict[str, int | float | str | None]:
    """The flat row of one kind's aggregate (:func:`flat_scores`)."""
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
    out["n_mean_all"] = int((agg.get("mean_all") or {}).get("n") or 0)
    out["n_mean_non_infra"] = int((agg.get("mean_non_infra") or {}).get("n") or 0)
    out["trials"] = int(trials.get("k") or 0)
    out["n_pass_k"] = int(trials.get("n") or 0)
    out["n_floors"] = int(floors.get("n") or 0)
    out["ci_level"] = unc.get("level")
    out["n_clusters"] = next(iter((unc.get("mean_all") or {}).values()), {}).get("n_clusters")
    for name in aggregate_metrics(agg):
        out.update(_flat_metric(name, agg, out["trials"]))  # type: ignore[arg-type]
    return out


def _flat_metric(name: str, agg: Mapping[str, Any], k_max: int) -> dict[str, Any]:
    """The flat columns of one metric (:func:`flat_scores`)."""
    f = field_name(name)
    unc = agg.get("uncertainty") or {}
    out: dict[str, Any] = {}
    for which, suffix in (("mean_all", ""), ("mean_non_infra", "_non_infra")):
        iv = (unc.get(which) or {}).get(name) or {}
        out[f + suffix] = (agg.get(which) or {}).get(name)
        for key in ("se", "ci_low", "ci_high"):
            out[f"{f}{suffix}_{key}"] = iv.get(key)
        out[f"{f}{suffix}_ci_method"] = iv.get("method")
        out[f"{f}{suffix}_no_interval"] = iv.get("no_interval")
    own = ((unc.get("mean_all") or {}).get(name)) or {}
    out[f"{f}_n"] = own.get("n", (agg.get("mean_all") or {}).get("n"))
    out[f"{f}_n_clusters"] = own.get("n_clusters")
    row = (agg.get("trials") or {}).get(name) or {}
    out[f"{f}_n_pass_k"] = row.get("n")
    for k in range(1, k_max + 1):
        out[f"{f}_pass_at_{k}"] = row.get(f"pass@{k}")
        out[f"{f}_pass_hat_{k}"] = row.get(f"pass^{k}")
    out[f"{f}_consistency"] = row.get("consistency")
    floors = agg.get("floors") or {}
    for floor in FLOORS:
        out[f"{f}_floor_{floor}"] = ((floors.get(floor) or {}).get(name) or {}).get("mean")
    return out
