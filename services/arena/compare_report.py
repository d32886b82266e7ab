"""``compare.md``, ``compare.json`` and ``compare.png`` of ``arena compare`` (from
:func:`services.arena.compare.compare_runs`).

The metrics are the comparison's (``cmp["metrics"]``: those found in the runs); the first one
(ARVO: ``file@1``, SWE-bench: ``resolved``) is the headline of the cost columns and the
cost-accuracy plot. Runs of several kinds (``cmp["by_kind"]``) get one section, and one row of
the plot, per kind."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from services.arena.figures import bracket, num, p_value, signed, with_interval
from services.shared.files import write_json_atomic

MD_FILE, JSON_FILE, PLOT_FILE = "compare.md", "compare.json", "compare.png"
_f = num


def _pair_lines(pair: dict[str, Any], metrics: list[str], h: str) -> list[str]:
    lines = [
        f"{h} `{pair['a']}` against `{pair['b']}`",
        "",
        f"{pair['n_common']} task(s) scored by both ({pair['n_clusters']} project clusters); "
        "difference = first run minus the other, on those tasks.",
        "",
        "| metric | A | B | A - B | 95% interval | p | SE | win | loss | tie |",
        "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    methods = set()
    for m in metrics:
        e = pair["metrics"][m]
        d = e["difference"]
        methods.add(_test_words(d))
        lines.append(
            f"| {m} | {_f(e['a'])} | {_f(e['b'])} | {signed(d['mean'])} | "
            f"{bracket(d, 3, sign=True)} | {_p(d)} | {_f(d['se'])} | "
            f"{e['win']} | {e['loss']} | {e['tie']} |"
        )
    tests = "; ".join(sorted(m for m in methods if m))
    lines += [
        "",
        "Interval and p from one sign-flip test per metric (" + (tests or "none") + "; whole "
        "projects flipped together): the interval excludes 0 exactly when p < 0.05. For hit/miss "
        "values it assumes a shift: away from 0 its coverage is measured, not exact (93.9-95.7% "
        "at 12 and 30 tasks, differences 0.1-0.3; docs/scoring.md, Comparing runs).",
    ]
    mcnemar = [m for m in metrics if m in (pair.get("mcnemar") or [])]
    if mcnemar:
        lines[-1] += (
            f" For {', '.join(mcnemar)} (one trial per task in both runs, hit/miss values, "
            "every task its own project) p is the exact McNemar (sign) test on the tasks only "
            "one run hit (win / loss)."
        )
    if pair["not_compared"]:
        lines += ["", "Not compared (each side's reason; never counted as a loss):", ""]
        lines += ["| task | A | B |", "|---|---|---|"]
        lines += [f"| {t} | {w['a']} | {w['b']} |" for t, w in pair["not_compared"].items()]
    return [*lines, ""]


def _test_words(d: dict[str, Any]) -> str | None:
    """``sign-flip exact over all 2^14 sign assignments``; a Monte Carlo test with its draws
    (its p's Monte Carlo error is beside each p)."""
    method = d.get("method")
    if not method:
        return None
    if method.endswith("exact"):
        return f"{method} over all 2^{d.get('n_clusters')} sign assignments"
    return f"{method} over {d.get('assignments') or 0:,} seeded sign assignments (seed {d.get('seed')})"


def _p(d: dict[str, Any]) -> str:
    """The p-value, with its Monte Carlo standard error when it has one."""
    mc = d.get("mc_error")
    return p_value(d.get("p_value")) + (f" ± {mc:.4f}" if mc is not None else "")


def _methods(unc: dict[str, Any], metrics: list[str]) -> str:
    """The interval methods of a run's means (``clopper-pearson, beta-t``)."""
    used = dict.fromkeys((unc.get(m) or {}).get("method") for m in metrics)
    return ", ".join(m for m in used if m) or "none"


def _n(r: dict[str, Any]) -> int:
    """The tasks in a run's means (the intervals' n)."""
    return int((r.get("mean_all") or {}).get("n") or 0)


def _kind_lines(cmp: dict[str, Any], level: float, h: str) -> list[str]:
    """The run table, the pairs and the cost per hit of one kind's comparison."""
    metrics = list(cmp["metrics"])
    top = metrics[0] if metrics else None
    lines = [
        "| run | purple | tasks | " + " | ".join(metrics) + f" | interval method | cost | "
        f"cost per {top} hit |"
    ]
    lines.append("|---|---|---:|" + "---:|" * len(metrics) + "---|---:|---:|")
    differ = []
    for r in cmp["runs"]:
        means, unc = r.get("mean_all") or {}, r.get("uncertainty") or {}
        cells = [with_interval(means.get(m), unc.get(m)) for m in metrics]
        cost = r["cost"]
        if _n(r) != r["n_tasks"]:
            out = r["n_tasks"] - _n(r)
            unscorable = int(r.get("n_unscorable") or 0)
            why = f"{unscorable} unscorable (empty ground truth)" if unscorable else ""
            rest = out - unscorable
            why += (", " if why and rest else "") + (f"{rest} not run or refused" if rest else "")
            differ.append(f"`{r['run']}`: {r['n_tasks']} tasks, {_n(r)} in the means ({why})")
        lines.append(
            f"| `{r['run']}` | `{r['purple'] or '(green default)'}` | {_n(r)} | "
            + " | ".join(cells)
            + f" | {_methods(unc, metrics)} | {cost['cost']:.4f} | "
            f"{_f((cost.get(top) or {}).get('cost_per_hit'), 4)} |"
        )
    lines += [
        "",
        f"Each run's means over its own tasks (`tasks`: the n of the means and of their "
        f"intervals), with {round(100 * level)}% intervals (each with its method: "
        "docs/scoring.md, section 5); the pairs below compare the tasks both scored."
        + (" Tasks of a run left out of its means: " + "; ".join(differ) + "." if differ else ""),
        "",
    ]
    for pair in cmp["pairs"]:
        lines += _pair_lines(pair, metrics, h)
    lines += [f"{h} Cost per hit", "", "| run | " + " | ".join(metrics) + " |"]
    lines.append("|---|" + "---:|" * len(metrics))
    for r in cmp["runs"]:
        c = r["cost"]
        lines.append(
            f"| `{r['run']}` | "
            + " | ".join(
                f"{_f(c.get(m, {}).get('cost_per_hit'), 4)} / "
                f"{_f(c.get(m, {}).get('tokens_per_hit'), 0)} tok"
                for m in metrics
            )
            + " |"
        )
    return lines


def kinds_of(cmp: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per kind, its comparison (``metrics``, ``runs``, ``pairs``): a comparison of one kind
    is keyed ``""``."""
    return dict(cmp["by_kind"]) if "by_kind" in cmp else {"": cmp}


def render_markdown(cmp: dict[str, Any], plot: str | None = PLOT_FILE) -> str:
    lines = ["# Comparison of runs", ""]
    if cmp.get("forced_despite"):
        lines += ["**Compared despite (--force):**", ""]
        lines += [f"- {p}" for p in cmp["forced_despite"]] + [""]
    kinds = kinds_of(cmp)
    for kind, one in kinds.items():
        if kind:
            lines += [f"## {kind} tasks", "", "Each metric over the tasks of this kind only.", ""]
        lines += _kind_lines(one, cmp["level"], "###" if kind else "##")
        lines.append("")
    if plot:
        lines += [f"![differences and cost-accuracy]({plot})", ""]
    return "\n".join(lines)


def render_plot(cmp: dict[str, Any], path: Path) -> Path:
    """Left: each pair's differences with their intervals; right: cost against accuracy."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = comparison_figure(cmp)
    path.parent.mkdir(parents=True, exist_ok=True)
    FigureCanvasAgg(fig)
    fig.savefig(path, format="png")
    return path


def comparison_figure(cmp: dict[str, Any]) -> Any:
    """The plot's figure (one row per kind), not yet drawn."""
    import matplotlib  # here, not at the top: 0.6 s of CPU that only a plot needs
    from matplotlib.figure import Figure

    kinds = kinds_of(cmp)
    fig = Figure(figsize=(12, 4.8 * len(kinds)), dpi=100, layout="constrained")
    axes = fig.subplots(len(kinds), 2, width_ratios=(3, 2), squeeze=False)
    for (kind, one), (ax_d, ax_c) in zip(kinds.items(), axes, strict=True):
        _plot_kind(one, kind, ax_d, ax_c, matplotlib.colormaps["tab10"])
    return fig


def _plot_kind(cmp: dict[str, Any], kind: str, ax_d: Any, ax_c: Any, colors: Any) -> None:
    """One kind's differences (``ax_d``) and cost against accuracy (``ax_c``)."""
    metrics = list(cmp["metrics"])
    top = metrics[0] if metrics else ""
    n = max(len(cmp["pairs"]), 1)
    for i, pair in enumerate(cmp["pairs"]):
        xs = [j + (i - (n - 1) / 2) * 0.8 / n for j in range(len(metrics))]
        d = [pair["metrics"][m]["difference"] for m in metrics]
        ys = [x["mean"] if x["mean"] is not None else float("nan") for x in d]
        lo = [
            y - x["ci_low"] if x["ci_low"] is not None else 0.0 for x, y in zip(d, ys, strict=True)
        ]
        hi = [
            x["ci_high"] - y if x["ci_high"] is not None else 0.0
            for x, y in zip(d, ys, strict=True)
        ]
        ax_d.errorbar(
            xs,
            ys,
            yerr=[lo, hi],
            fmt="o",
            capsize=3,
            color=colors(i),
            label=f"{pair['a']} - {pair['b']}",
        )
    ax_d.axhline(0, color="gray", lw=0.8)
    # upright names: a kind with FLBench's metrics has 19, whose level names ran into each other
    ax_d.set_xticks(range(len(metrics)), metrics, rotation=90)
    ax_d.set_ylabel("difference (95% interval)")
    ax_d.legend(fontsize=8)
    ax_d.grid(axis="y", alpha=0.3)
    for i, r in enumerate(cmp["runs"]):
        acc = (r.get("mean_all") or {}).get(top)
        if acc is None:
            continue
        ax_c.scatter([r["cost"]["cost"]], [acc], color=colors(i), s=40)
        ax_c.annotate(
            r["run"],
            (r["cost"]["cost"], acc),
            fontsize=8,
            xytext=(4, 4),
            textcoords="offset points",
        )
    most = max((r["cost"]["cost"] for r in cmp["runs"]), default=0.0)
    ax_c.set_xlim(0, most * 1.15 if most > 0 else 1.0)
    ax_c.set_xlabel("total cost")
    ax_c.set_ylabel(f"{top} (mean over all tasks)")
    ax_c.set_title(f"cost-accuracy ({kind} tasks)" if kind else "cost-accuracy", fontsize=10)
    ax_c.grid(alpha=0.3)


def write_comparison(cmp: dict[str, Any], out: Path) -> Path:
    """Write the three files into ``out``; returns the Markdown's path."""
    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out / JSON_FILE, cmp)
    render_plot(cmp, out / PLOT_FILE)
    md = out / MD_FILE
    md.write_text(render_markdown(cmp), encoding="utf-8")
    return md
