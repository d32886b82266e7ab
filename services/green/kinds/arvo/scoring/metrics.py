"""Scores of one submission against the ground truth, and their aggregate over a run.

Per task (only the top :data:`TOP_K` = 5 locations count; each metric is 0 or 1 except IoU):

- ``file@k``: one of the top-k locations names a ground-truth file (whole normalized path).
- ``func@k``: one of the top-k locations, in a ground-truth file, names a function that
  encloses ground-truth lines of that file; a location without a function name is credited when
  its whole span lies inside such a function.
- ``line@k``: one of the top-k locations, in a ground-truth file, spans at most
  :data:`MAX_SPAN_LINES` = 50 lines and contains a ground-truth line of that file.
- ``iou``: the best intersection-over-union of line sets between a top-5 span and a
  ground-truth region of the same file.

A missing submission scores 0 everywhere; a task whose ground truth is empty is not scorable
(``scorable=False``) and stays out of the means. ``docs/scoring.md`` has worked examples.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from services.green.kinds.arvo.scoring.functions import name_from_declaration, split_name
from services.green.kinds.arvo.scoring.groundtruth import GroundTruth, GTFile, GTFunction, GTRegion
from services.shared.loc import ROOT_PREFIXES, Location, LocJson, normalize_path

TOP_K = 5
MAX_SPAN_LINES = 50
METRICS = ("file@1", "file@5", "func@1", "func@5", "line@1", "line@5", "iou")
_FIELDS = ("file_at_1", "file_at_5", "func_at_1", "func_at_5", "line_at_1", "line_at_5", "iou")
"""The attribute names of :data:`METRICS`."""


# --- matching helpers -----------------------------------------------------------------------


def path_candidates(path: str, project: str | None) -> list[str]:
    """Normalized forms a submitted path may stand for, most literal first: the normalized path,
    then (when it starts with the project's folder, as paths relative to ``/src`` or
    ``src-vul`` do) the same without that folder."""
    norm = normalize_path(path, project)
    out = [norm]
    raw = path.strip().strip("`'\"").strip().replace("\\", "/")
    while raw.startswith("./"):
        raw = raw[2:]
    rooted = raw.startswith(ROOT_PREFIXES)  # the project folder was already dropped
    if project and not rooted and norm.startswith(project + "/"):
        out.append(norm[len(project) + 1 :])
    return out


def match_file(path: str, gt: GroundTruth, project: str | None) -> GTFile | None:
    """The ground-truth file a submitted path names, matching whole normalized paths only."""
    for cand in path_candidates(path, project):
        hit = gt.file(cand)
        if hit is not None:
            return hit
    return None


_MACRO_FORM = re.compile(r"^\s*[A-Z_][A-Z0-9_]*\s*\(\s*([A-Za-z_]\w*)\s*\)\s*$")
_WRAPPERS = re.compile(r"^[`'\"]+|[`'\"]+$")


def function_names(text: str) -> list[tuple[str, str]]:
    """(unqualified, qualified) names a submitted ``function`` field may mean.

    Accepts ``foo``, ``foo()``, ``static int foo(int a)``, ``Foo::bar``, ``ns::Foo<T>::bar``,
    ``PHP_FUNCTION(strlen)`` and several names separated by ``,`` / ``/`` / `` or ``.
    """
    out: list[tuple[str, str]] = []
    for part in re.split(r"\s*(?:,|/|\bor\b|\band\b)\s*", text.strip()):
        part = _WRAPPERS.sub("", part.strip())
        if not part:
            continue
        macro = _MACRO_FORM.match(part)
        if macro:
            out.append((macro.group(1), part.replace(" ", "")))
            continue
        named = name_from_declaration(part) if "(" in part else None
        if named is None:
            token = re.split(r"[\s*&]+", part.split("(")[0].strip())[-1] if part else ""
            if not token:
                continue
            named = split_name(token)
        out.append(named)
    return out


def _scopes(qualified: str) -> list[str]:
    return [p for p in qualified.split("::") if p]


def names_match(pred: tuple[str, str], gt: GTFunction) -> bool:
    """Unqualified names must be equal (case-sensitive, as in C); qualifiers are compared as far
    as both sides give them: ``bar`` matches ``ns::Foo::bar``, ``Foo::bar`` matches
    ``ns::Foo::bar`` and a C function ``bar``, ``Baz::bar`` does not match ``Foo::bar``."""
    p_name, p_qual = pred
    if p_name != gt.name:
        return False
    if "(" in gt.qualified:  # macro-made function: the inner name is what counts
        return True
    a, b = _scopes(p_qual), _scopes(gt.qualified)
    n = min(len(a), len(b))
    return a[len(a) - n :] == b[len(b) - n :]


def _iou(start: int, end: int, region: GTRegion) -> float:
    inter = max(0, min(end, region.end) - max(start, region.start) + 1)
    if not inter:
        return 0.0
    union = (end - start + 1) + region.size - inter
    return inter / union


def _span(start: int, end: int) -> str:
    return f"{start}" if start == end else f"{start}-{end}"


# --- results --------------------------------------------------------------------------------


class LocationResult(BaseModel):
    """How one of the top-5 submitted locations fared."""

    rank: int
    file: str
    """As submitted."""
    normalized: str
    line_start: int
    line_end: int
    function: str | None = None
    matched_file: str | None = None
    file_match: bool = False
    function_match: bool = False
    line_match: bool = False
    iou: float = 0.0
    best_region: int | None = None
    """1-based index into :attr:`TaskScore.regions` of the region with the best IoU."""
    notes: list[str] = []


class RegionResult(BaseModel):
    """A ground-truth region and the ranks that found it."""

    index: int
    label: str
    file: str
    start: int
    end: int
    function: str | None = None
    line_matched_by: list[int] = []
    overlapped_by: list[int] = []
    best_iou: float = 0.0


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


class TaskScore(Metrics):
    """The score of one task. ``model_dump(by_alias=True)`` / :meth:`to_dict` give JSON with
    the metric names as keys (``"file@1"``, ...)."""

    scorable: bool = True
    """False when the ground truth is empty (empty patch, no code changes)."""
    submitted: bool = False
    """A valid loc.json was scored."""
    n_locations: int = 0
    """Locations in the submission (only the first 5 count)."""
    locations: list[LocationResult] = []
    regions: list[RegionResult] = []
    gt_files: list[str] = []
    gt_flags: list[str] = []
    explanation: list[str] = []

    def metrics(self) -> dict[str, float]:
        return {k: v for k, v in self.model_dump(by_alias=True).items() if k in METRICS}

    def to_dict(self) -> dict:
        return self.model_dump(by_alias=True, mode="json")


# --- scoring --------------------------------------------------------------------------------


def _function_match(loc: Location, gtf: GTFile) -> tuple[bool, str]:
    if loc.function and loc.function.strip():
        preds = function_names(loc.function)
        for fn in gtf.functions:
            for pred in preds:
                if names_match(pred, fn):
                    return True, f"function {loc.function!r} is {fn.qualified}"
        known = ", ".join(sorted({f.qualified for f in gtf.functions})) or "none known"
        return False, f"function {loc.function!r} is not a changed function (changed: {known})"
    for fn in gtf.functions:
        if fn.contains(loc.line_start, loc.line_end):
            return True, (
                f"no function named, but lines {_span(loc.line_start, loc.line_end)} lie inside "
                f"{fn.qualified} ({fn.start_line}-{fn.end_line})"
            )
    return False, "no function named and the span is not inside a changed function"


def score(submission: LocJson | None, gt: GroundTruth, project: str | None = None) -> TaskScore:
    """Score a submission (None: no valid loc.json) against a task's ground truth.

    ``project`` is the project folder name (``ArchiveInfo.project``); it lets paths such as
    ``/src/<project>/x.c`` and ``<project>/x.c`` match ``x.c``.
    """
    regions = gt.regions
    result = TaskScore(
        scorable=not gt.empty,
        gt_files=[f.path for f in gt.files],
        gt_flags=list(gt.flags),
        regions=[
            RegionResult(
                index=i,
                label=r.label(),
                file=r.file,
                start=r.start,
                end=r.end,
                function=r.function.qualified if r.function else None,
            )
            for i, r in enumerate(regions, 1)
        ],
    )
    why = result.explanation
    if gt.empty:
        why.append(
            "not scorable: the ground truth is empty ("
            + (", ".join(gt.flags) or "no changed code lines")
            + "); all metrics are 0 and the task stays out of the means"
        )
    if submission is None:
        why.append("no valid submission: every metric is 0")
        return result
    result.submitted = True
    result.n_locations = len(submission.locations)
    top = submission.locations[:TOP_K]
    if len(submission.locations) > TOP_K:
        why.append(
            f"{len(submission.locations)} locations submitted; only the top {TOP_K} are scored "
            + (
                f"(rank {TOP_K + 1} is ignored)"
                if len(submission.locations) == TOP_K + 1
                else f"(ranks {TOP_K + 1}-{len(submission.locations)} are ignored)"
            )
        )
    region_result = {id(r): rr for r, rr in zip(regions, result.regions, strict=True)}
    gt_basenames = {f.path.rsplit("/", 1)[-1]: f.path for f in gt.files}

    for rank, loc in enumerate(top, 1):
        norm = normalize_path(loc.file, project)
        lr = LocationResult(
            rank=rank,
            file=loc.file,
            normalized=norm,
            line_start=loc.line_start,
            line_end=loc.line_end,
            function=loc.function,
        )
        where = f"rank {rank} {loc.file}:{_span(loc.line_start, loc.line_end)}"
        if norm != loc.file:
            where += f" (normalized: {norm or '(empty)'})"
        gtf = match_file(loc.file, gt, project)
        if gtf is None:
            base = norm.rsplit("/", 1)[-1]
            if base in gt_basenames:
                lr.notes.append(
                    f"same file name as the changed file {gt_basenames[base]!r} but a different "
                    "path: files match by whole path, never by basename"
                )
            else:
                lr.notes.append(
                    "not a changed file (changed: " + (", ".join(result.gt_files) or "none") + ")"
                )
            why.append(f"{where}: file ✗ — {lr.notes[-1]}")
            result.locations.append(lr)
            continue
        lr.matched_file = gtf.path
        lr.file_match = True
        parts = [f"file ✓ ({gtf.path})"]

        lr.function_match, fn_note = _function_match(loc, gtf)
        lr.notes.append(fn_note)
        parts.append(("function ✓ — " if lr.function_match else "function ✗ — ") + fn_note)

        n_lines = loc.line_end - loc.line_start + 1
        hit_lines = [x for x in gtf.lines if loc.line_start <= x <= loc.line_end]
        if n_lines > MAX_SPAN_LINES:
            note = f"span of {n_lines} lines is longer than {MAX_SPAN_LINES}: no line credit"
            lr.notes.append(note)
            parts.append("line ✗ — " + note)
        elif hit_lines:
            lr.line_match = True
            shown = ", ".join(map(str, hit_lines[:5])) + (" …" if len(hit_lines) > 5 else "")
            parts.append(f"line ✓ — contains changed line(s) {shown}")
        elif gtf.lines:
            nearest = min(
                gtf.lines, key=lambda x: min(abs(x - loc.line_start), abs(x - loc.line_end))
            )
            dist = min(abs(nearest - loc.line_start), abs(nearest - loc.line_end))
            note = f"contains no changed line (nearest: {nearest}, {dist} lines away)"
            lr.notes.append(note)
            parts.append("line ✗ — " + note)

        best_iou, best = 0.0, None
        for region in gtf.regions:
            value = _iou(loc.line_start, loc.line_end, region)
            if value == 0:
                continue
            rr = region_result[id(region)]
            rr.overlapped_by.append(rank)
            rr.best_iou = max(rr.best_iou, round(value, 6))
            if n_lines <= MAX_SPAN_LINES:
                rr.line_matched_by.append(rank)
            if value > best_iou:
                best_iou, best = value, rr
        if best is not None:
            lr.iou = round(best_iou, 6)
            lr.best_region = best.index
            parts.append(f"IoU {best_iou:.2f} with region R{best.index} {best.label}")
        else:
            parts.append("IoU 0 (overlaps no region)")
        why.append(f"{where}: " + "; ".join(parts))
        result.locations.append(lr)

    first = result.locations[0] if result.locations else None
    result.file_at_1 = float(bool(first and first.file_match))
    result.func_at_1 = float(bool(first and first.function_match))
    result.line_at_1 = float(bool(first and first.line_match))
    result.file_at_5 = float(any(x.file_match for x in result.locations))
    result.func_at_5 = float(any(x.function_match for x in result.locations))
    result.line_at_5 = float(any(x.line_match for x in result.locations))
    result.iou = max((x.iou for x in result.locations), default=0.0)

    for rr in result.regions:
        if rr.line_matched_by:
            why.append(
                f"region R{rr.index} {rr.label}: found by rank(s) "
                + ", ".join(map(str, rr.line_matched_by))
                + f" (best IoU {rr.best_iou:.2f})"
            )
        elif rr.overlapped_by:
            why.append(
                f"region R{rr.index} {rr.label}: only overlapped by spans longer than "
                f"{MAX_SPAN_LINES} lines (rank(s) {', '.join(map(str, rr.overlapped_by))})"
            )
        else:
            why.append(f"region R{rr.index} {rr.label}: not found by any of the top {TOP_K}")
    if not result.scorable:
        for k in _FIELDS:
            setattr(result, k, 0.0)
    return result


# --- aggregation ----------------------------------------------------------------------------

TaskStatusName = Literal["completed", "failed", "cancelled"]
FailureKindName = Literal["infra", "agent"]


class TaskOutcome(BaseModel):
    """One task of a run, as the aggregate sees it."""

    task_id: str | None = None
    arvo_id: str | None = None
    status: TaskStatusName
    failure_kind: FailureKindName | None = None
    """Required for failed tasks: ``infra`` (harness: assets, Docker, green) or ``agent``."""
    score: TaskScore | None = None
    """The task's score; for a failed task it may carry ``scorable=False`` (from
    ``score(None, gt)``) so an unscorable task is left out of the means whatever happened."""
    error: str | None = None

    @model_validator(mode="after")
    def _kind_for_failures(self) -> TaskOutcome:
        if self.status == "failed" and self.failure_kind is None:
            raise ValueError("a failed task needs failure_kind 'infra' or 'agent'")
        return self


class MetricMeans(Metrics):
    n: int = 0
    """Tasks in the denominator."""


class Aggregate(BaseModel):
    """Means over a run. Failed and cancelled tasks and tasks without a valid submission count as
    0; tasks whose ground truth is empty are counted but left out of every mean."""

    n_tasks: int = 0
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
    explanation: list[str] = []

    def to_dict(self) -> dict:
        return self.model_dump(by_alias=True, mode="json")


def _means(values: Iterable[dict[str, float]]) -> MetricMeans:
    rows = list(values)
    out = MetricMeans(n=len(rows))
    for f in _FIELDS:
        setattr(out, f, round(sum(r[f] for r in rows) / len(rows), 6) if rows else 0.0)
    return out


def aggregate(outcomes: Iterable[TaskOutcome]) -> Aggregate:
    """Aggregate task outcomes of a run (see :class:`Aggregate`)."""
    outcomes = list(outcomes)
    agg = Aggregate(n_tasks=len(outcomes))
    zero = dict.fromkeys(_FIELDS, 0.0)
    rows_all: list[dict[str, float]] = []
    rows_non_infra: list[dict[str, float]] = []
    status_counts = {"completed": 0, "failed": 0, "cancelled": 0}
    failure_counts = {"infra": 0, "agent": 0}
    for o in outcomes:
        status_counts[o.status] += 1
        if o.status == "failed" and o.failure_kind:
            failure_counts[o.failure_kind] += 1
        if o.score is not None and not o.score.scorable:
            agg.n_unscorable += 1
            continue
        if o.status == "completed" and o.score is not None and o.score.submitted:
            row = {f: float(getattr(o.score, f)) for f in _FIELDS}
            agg.n_scored += 1
        else:
            row = dict(zero)
            if o.status == "completed":
                agg.n_no_submission += 1
        rows_all.append(row)
        if not (o.status == "failed" and o.failure_kind == "infra") and o.status != "cancelled":
            rows_non_infra.append(row)
    agg.by_status = status_counts
    agg.by_failure = failure_counts
    agg.mean_all = _means(rows_all)
    agg.mean_non_infra = _means(rows_non_infra)
    agg.explanation = [
        f"{agg.n_tasks} tasks: {status_counts['completed']} completed, "
        f"{status_counts['failed']} failed ({failure_counts['infra']} infra, "
        f"{failure_counts['agent']} agent), {status_counts['cancelled']} cancelled",
        f"{agg.n_scored} scored submissions, {agg.n_no_submission} completed without a valid "
        f"submission (0), {agg.n_unscorable} without ground truth (left out)",
        f"mean_all over {agg.mean_all.n} tasks counts every failure and cancellation as 0; "
        f"mean_non_infra over {agg.mean_non_infra.n} tasks leaves out infra failures and "
        "cancellations",
    ]
    return agg


def aggregate_records(records: Iterable[Mapping[str, Any]]) -> Aggregate:
    """:func:`aggregate` over plain task records (green's task JSON, the CLI's results.json):
    keys ``task_id``, ``arvo_id``, ``status``, ``failure_kind``, ``scores`` (a TaskScore dict),
    ``error``. A failed record without a failure kind counts as an infra failure."""
    outcomes = []
    for r in records:
        status = str(r["status"])
        kind = r.get("failure_kind") or ("infra" if status == "failed" else None)
        scores = r.get("scores")
        outcomes.append(
            TaskOutcome(
                task_id=r.get("task_id"),
                arvo_id=r.get("arvo_id"),
                status=status,
                failure_kind=kind,
                score=TaskScore.model_validate(scores) if scores else None,
                error=r.get("error"),
            )
        )
    return aggregate(outcomes)
