"""``report.md`` and ``scores.png`` of a run, from its ``results.json`` alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from services.arena.breakdown import Labels, breakdown_markdown, known_labels
from services.arena.figures import num, with_interval
from services.arena.records import gaps_markdown
from services.arena.results import RunOutcome, RunResults, slot_label
from services.shared.audit import FLAGS, LEAK_FLAG, count_flags
from services.shared.scores import headline, kind_aggregates
from services.shared.stats import pass_k_metrics

REPORT_FILE = "report.md"
PLOT_FILE = "scores.png"
SMALL_SHARE = 0.8
"""pass@k over fewer than this share of a kind's non-infra tasks gets a warning."""
_STATUS_COLORS = {"completed": "black", "failed": "tab:red", "cancelled": "tab:orange"}


def _cell(text: Any, limit: int = 160) -> str:
    s = " ".join(str(text).split())
    if len(s) > limit:
        s = s[: limit - 1] + "…"
    return s.replace("|", "\\|")


def _aggregate_rows(agg: dict[str, Any], metrics: list[str]) -> list[str]:
    """The means with their 95% intervals and standard errors, and how they were computed."""
    unc = agg.get("uncertainty") or {}
    lines = ["| mean over | n | " + " | ".join(metrics) + " |"]
    lines.append("|---|---:|" + "---:|" * len(metrics))
    for label, key in (("all tasks", "mean_all"), ("non-infra tasks", "mean_non_infra")):
        means = agg.get(key) or {}
        ivs = unc.get(key) or {}
        lines.append(
            f"| {label} | {means.get('n', 0)} | "
            + " | ".join(with_interval(means.get(m), ivs.get(m)) for m in metrics)
            + " |"
        )
        lines.append(
            f"| {label}: SE | | "
            + " | ".join(num((ivs.get(m) or {}).get("se")) for m in metrics)
            + " |"
        )
    floors = agg.get("floors") or {}
    for label, key in (
        ("floor: empty submission", "empty"),
        ("floor: crash-frame baseline", "crash_frame"),
    ):
        ivs = floors.get(key) or {}
        if ivs:
            lines.append(
                f"| {label} | {floors.get('n', 0)} | "
                + " | ".join(
                    with_interval((ivs.get(m) or {}).get("mean"), ivs.get(m)) for m in metrics
                )
                + " |"
            )
    if unc:
        lines += ["", _interval_note(agg, metrics)]
    return lines


def _interval_note(agg: dict[str, Any], metrics: list[str]) -> str:
    """Which method made which metric's intervals, and over how many clusters."""
    unc = agg.get("uncertainty") or {}
    head = (
        f"Brackets: {round(100 * float(unc.get('level', 0.95)))}% interval, clustered by project "
        f"({_clusters(agg, metrics)}); a task's trials are averaged first; n/a: no interval can "
        "be computed, and why."
    )
    if "methods" not in unc:  # an aggregate stored before intervals named their method
        return f"{head} Method: {unc.get('method')}."
    used: dict[str, list[str]] = {}
    for m in metrics:
        for key in ("mean_all", "mean_non_infra"):
            method = ((unc.get(key) or {}).get(m) or {}).get("method")
            if method and m not in used.setdefault(method, []):
                used[method].append(m)
    described = "; ".join(f"{', '.join(ms)}: {unc['methods'].get(k, k)}" for k, ms in used.items())
    floors = (
        " Floors: the same tasks scored by the same judge for an empty submission and for the "
        "crash-frame baseline: the top in-project frame of the crash report as the only location "
        "(arvo), or a patch that deletes its line (arvo-fix)."
        if agg.get("floors")
        else ""
    )
    return f"{head} Methods (docs/scoring.md, section 5): {described or 'none'}.{floors}"


def _clusters(agg: dict[str, Any], metrics: list[str]) -> str:
    """The clusters and tasks of every interval of the table, per row (``all tasks: 5
    clusters over 12 tasks; non-infra tasks: ...``; a row whose metrics differ lists each;
    once when every row has the same)."""
    unc = agg.get("uncertainty") or {}
    floors = agg.get("floors") or {}
    rows = [
        ("all tasks", unc.get("mean_all") or {}),
        ("non-infra tasks", unc.get("mean_non_infra") or {}),
        *((f"floor {k}", floors.get(k) or {}) for k in ("empty", "crash_frame")),
    ]
    out = []
    for label, ivs in rows:
        seen: dict[tuple[int, int], list[str]] = {}
        for m in metrics:
            iv = ivs.get(m) or {}
            if "n_clusters" in iv:
                seen.setdefault((iv["n_clusters"], iv.get("n", 0)), []).append(m)
        parts = [
            f"{g} clusters over {n} tasks" + (f" ({', '.join(ms)})" if len(seen) > 1 else "")
            for (g, n), ms in seen.items()
        ]
        if parts:
            out.append((label, ", ".join(parts)))
    if len({said for _, said in out}) == 1:  # every row over the same tasks and clusters
        return out[0][1]
    return "; ".join(f"{label}: {said}" for label, said in out) or "no interval"


def _audit_rows(results: RunResults) -> list[str]:
    """Per-run counts of the trajectory audit's flags (attempts raising each)."""
    counts = count_flags(o.audit for o in results.tasks)
    lines = ["", "## Trajectory audit", "", "| flag | attempts | which |", "|---|---:|---|"]
    for flag, n in counts.items():
        which = ", ".join(o.label for o in results.tasks if flag in o.audit)
        lines.append(f"| {FLAGS[flag]} | {n} | {_cell(which, 120)} |")
    lines += [
        "",
        "Flags for a reader, computed from the recorded commands (rules: docs/scoring.md, "
        '"Trajectory audit"); they never change a score.',
    ]
    leaks = [o for o in results.tasks if LEAK_FLAG in o.audit]
    if leaks:
        lines += ["", f"Leak suspected in {len(leaks)} attempt(s) (green's leak audit):", ""]
        lines += [f"- {o.label}: {'; '.join(o.audit[LEAK_FLAG][:3])}" for o in leaks]
    return lines


def _trial_rows(agg: dict[str, Any], metrics: list[str]) -> list[str]:
    """pass@k, pass^k and consistency per metric over one task set (repeated trials only)."""
    tr = agg.get("trials") or {}
    k = int(tr.get("k") or 0)
    if k < 2:
        return []
    head = [*(f"pass@{i}" for i in range(1, k + 1)), *(f"pass^{i}" for i in range(1, k + 1))]
    lines = ["", "## Repeated trials", ""]
    lines.append("| metric | n | " + " | ".join(head) + " | consistency |")
    lines.append("|---|---:|" + "---:|" * (len(head) + 1))
    for m in pass_k_metrics(agg, metrics):  # a continuous metric has no hit to count
        row = tr[m]
        n = row.get("n", row.get(f"n@{k}", ""))
        cells = [num(row.get(h)) for h in head]
        lines.append(f"| {m} | {n} | " + " | ".join(cells) + f" | {num(row.get('consistency'))} |")
    fewer = tr.get("n_fewer")
    n_k, n_all = int(tr.get("n") or 0), int((agg.get("mean_non_infra") or {}).get("n") or 0)
    if n_all and n_k < SMALL_SHARE * n_all:
        lines += [
            "",
            f"**pass@k and pass^k rest on {n_k} of the {n_all} non-infra tasks "
            f"({100 * n_k / n_all:.0f}%)**: the others have fewer than {k} non-infra attempts; "
            "they are the numbers of those tasks, not of the run.",
        ]
    lines += [
        "",
        f"Over the tasks with {k} non-infra attempts (n"
        + (f"; {fewer} task(s) with fewer left out" if fewer else "")
        + "), the same tasks for every k; hit/miss metrics only, a hit a metric of 1. pass@k = 1 - C(n-c, k)/C(n, k), "
        "pass^k = C(c, k)/C(n, k) per task (n attempts, c hits), averaged over the tasks; n/a: "
        "no task. Consistency: share of those tasks whose trials all agree.",
    ]
    return lines


def _metric_cell(o: RunOutcome, name: str, binary: bool) -> str:
    if not o.scores:
        return "-"
    if o.scores.get("scorable") is False:
        return "n/a"
    value = o.metric(name)
    return f"{value:g}" if binary else f"{value:.2f}"


def _why(o: RunOutcome) -> str:
    parts = [p for p in (o.end_reason, o.error) if p]
    if len(parts) == 2 and parts[0] == parts[1]:
        parts.pop()
    if o.status == "completed" and o.scores is not None and not o.scores.get("submitted", True):
        parts.append("no valid submission")
    if o.scores is not None and o.scores.get("scorable") is False:
        parts.append("empty ground truth (not in the means)")
    if o.agent_reason and o.status != "completed":
        parts.append(f'the agent said: "{o.agent_reason[:200]}"')
    prefix = f"{o.failure_kind}: " if o.status == "failed" and o.failure_kind else ""
    return _cell(prefix + " — ".join(parts), limit=320)


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{seconds:.1f}s"


def _verification_rows(results: RunResults) -> list[str]:
    """Counts of verified and unverified tasks (arena tasks verify), when green reported any."""
    if all(o.verified is None for o in results.tasks):
        return []
    bad = [o.label for o in results.tasks if o.verified is False]
    never = sum(1 for o in results.tasks if o.verified is None)
    rows = [
        f"| verified tasks (arena tasks verify) | {sum(o.verified is True for o in results.tasks)} |"
    ]
    rows.append(f"| not verified | {len(bad)}{': ' + ', '.join(bad) if bad else ''} |")
    return rows + ([f"| never verified | {never} |"] if never else [])


def render_markdown(
    results: RunResults, plot: str | None = PLOT_FILE, labels: Labels | None = None
) -> str:
    """``labels``: per task reference, ``bug_class`` and ``fix_position`` for the breakdown
    tables (default: the bundled fixtures' labels). The metrics are the run's
    (:meth:`RunResults.metrics`)."""
    metrics = results.metrics()
    not_run = results.not_run()
    lines: list[str] = [f"# Run `{results.run}`", ""]
    lines += [
        f"- green: `{results.green}`",
        f"- purple: `{results.purple or '(green default)'}`",
        f"- started: {results.started_at}; finished: {results.finished_at or '(not finished)'}",
        f"- tasks: {len(results.task_ids)}"
        + (f" x {results.trials} trials" if results.trials > 1 else "")
        + f" ({len(results.tasks)} ended"
        + (f", {len(not_run)} not run" if not_run else "")
        + f"); sessions: {len(results.sessions)}",
    ]
    args = {k: v for k, v in results.args.items() if k != "ids" and v not in (None, [], "")}
    if args:
        lines.append("- arguments: " + ", ".join(f"`{k}={v}`" for k, v in args.items()))
    parts = results.by_kind()
    for kind, part in parts:
        if len(parts) == 1:
            lines += ["", "## Aggregate", ""]
        else:
            lines += ["", f"## Aggregate of the {kind} tasks ({len(part.task_ids)})", ""]
        lines += _kind_rows(part, labels)
    lines += gaps_markdown(results)
    lines += _audit_rows(results)
    if plot:
        lines += ["", "## Scores", "", f"![per-task scores, cost and steps]({plot})"]
    lines += ["", "## Tasks", ""]
    head = [_ref_column(results), "task", "status", "steps", *metrics, "cost", "time", "why"]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|---|---|---|---:|" + "---:|" * (len(metrics) + 2) + "---|")
    hits = results.binary()
    binary = {m: m in hits for m in metrics}
    own = {k: set(results.metrics(k)) for k in results.run_kinds()}
    for o in results.tasks:
        task = f"[{o.task_id[:8]}]({o.dir}/task.json)" if o.task_id and o.dir else "-"
        row = [
            o.label,
            task,
            o.status,
            str(o.steps),
            *(_metric_cell(o, m, binary[m]) if m in own[o.kind] else "" for m in metrics),
            f"{o.cost:.4f}",
            _duration(o.duration_s),
            _why(o),
        ]
        lines.append("| " + " | ".join(row) + " |")
    for ref, trial in not_run:
        lines.append(
            f"| {slot_label(ref, trial)} | - | not run | - | "
            + " | ".join("-" for _ in metrics)
            + " | - | - | interrupted before it ended |"
        )
    lines.append("")
    return "\n".join(lines)


def _kind_rows(results: RunResults, labels: Labels | None) -> list[str]:
    """The aggregate of one kind's tasks (``results``: the run restricted to them): its means
    with intervals and floors, its counts, pass@k and its breakdown tables."""
    agg = results.aggregate
    metrics = results.metrics()
    lines = _aggregate_rows(agg, metrics)
    by_status = agg.get("by_status") or {}
    by_failure = agg.get("by_failure") or {}
    lines += ["", "| count | tasks |", "|---|---:|"]
    for name in ("completed", "failed", "cancelled"):
        lines.append(f"| {name} | {by_status.get(name, 0)} |")
    for name in ("infra", "agent"):
        lines.append(f"| failed: {name} | {by_failure.get(name, 0)} |")
    lines.append(f"| scored submissions | {agg.get('n_scored', 0)} |")
    lines.append(f"| completed without a valid submission | {agg.get('n_no_submission', 0)} |")
    lines.append(f"| empty ground truth (left out) | {agg.get('n_unscorable', 0)} |")
    not_run = results.not_run()
    if not_run:
        lines.append(f"| not run | {len(not_run)} |")
    lines += _verification_rows(results)
    cost = sum(o.cost for o in results.tasks)
    steps = sum(o.steps for o in results.tasks)
    lines.append(f"| total cost / steps | {cost:.4f} / {steps} |")
    if agg.get("explanation"):
        lines.append("")
        lines += [f"- {e}" for e in agg["explanation"]]
    lines += _trial_rows(agg, metrics)
    lines += breakdown_markdown(
        results.tasks, known_labels() if labels is None else labels, metrics
    )
    return lines


def _ref_column(results: RunResults) -> str:
    """The task column's title: the kind when the run has one (``arvo``), else ``ref``."""
    kinds = {r.kind for r in results.refs()}
    return kinds.pop() if len(kinds) == 1 else "ref"


def render_plot(results: RunResults, path: Path) -> Path | None:
    """Per-task bars of the metrics (top) and of cost with steps (bottom)."""
    import matplotlib  # here, not at the top: 0.6 s of CPU that only a plot needs
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    tasks = results.tasks
    metrics = headline(results.metrics())
    if not tasks or not metrics:
        return None
    n = len(tasks)
    width_in = min(max(8.0, 0.55 * n * 1.6 + 2.5), 60.0)
    fig = Figure(figsize=(width_in, 7.5), dpi=100, layout="constrained")
    ax_m, ax_c = fig.subplots(2, 1, sharex=True, height_ratios=(3, 2))
    xs = range(n)
    bar_w = 0.8 / len(metrics)
    colors = matplotlib.colormaps["tab10"]
    for i, metric in enumerate(metrics):
        offset = (i - (len(metrics) - 1) / 2) * bar_w
        ax_m.bar(
            [x + offset for x in xs],
            [o.metric(metric) for o in tasks],
            width=bar_w,
            label=metric,
            color=colors(i),
        )
    means = {  # each metric's mean over its own kind's tasks
        m: v
        for agg in kind_aggregates(results.aggregate).values()
        for m, v in (agg.get("mean_all") or {}).items()
    }
    ax_m.set_ylim(0, 1.08)
    ax_m.set_ylabel("score")
    ax_m.set_title(
        f"run {results.run}: {n} task(s); mean over all — "
        + ", ".join(f"{m} {num(means.get(m), 2)}" for m in headline(metrics)),
        fontsize=10,
    )
    ax_m.legend(
        ncols=min(len(metrics), 7), fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.02)
    )
    ax_m.grid(axis="y", alpha=0.3)

    ax_c.bar(list(xs), [o.cost for o in tasks], width=0.5, color="tab:gray", label="cost")
    ax_c.set_ylabel("cost")
    ax_s = ax_c.twinx()
    ax_s.plot(list(xs), [o.steps for o in tasks], "o", color="tab:blue", label="steps")
    ax_s.set_ylabel("steps", color="tab:blue")
    ax_s.set_ylim(bottom=0)
    ax_s.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax_c.set_ylim(bottom=0)
    ax_c.set_xticks(list(xs))
    one_kind = _ref_column(results) != "ref"
    ticks = [o.ref_id if one_kind else o.ref for o in tasks]
    ax_c.set_xticklabels(ticks, rotation=90 if n > 12 else 0, fontsize=8)
    for label, o in zip(ax_c.get_xticklabels(), tasks, strict=True):
        label.set_color(_STATUS_COLORS.get(o.status, "black"))
    what = f"{_ref_column(results)} id" if one_kind else "task"
    ax_c.set_xlabel(f"{what} (red: failed, orange: cancelled)")
    path.parent.mkdir(parents=True, exist_ok=True)
    # The Agg canvas, attached to this figure only: no display, no GUI toolkit, no pyplot state,
    # and the process-wide backend is left alone.
    FigureCanvasAgg(fig)
    fig.savefig(path, format="png")
    return path


def render_report(results: RunResults, run_dir: Path) -> Path:
    """Write ``report.md`` (and ``scores.png``, embedded) into the run folder; returns the
    report's path."""
    plot = render_plot(results, run_dir / PLOT_FILE)
    report = run_dir / REPORT_FILE
    report.write_text(render_markdown(results, PLOT_FILE if plot else None), encoding="utf-8")
    return report
