"""``compare.md``, ``compare.json`` and ``compare.png`` of ``arena compare`` (from
:func:`services.arena.compare.compare_runs`).

The metrics are the comparison's (``cmp["metrics"]``: those found in the runs); the first one
(ARVO: ``file@1``, SWE-bench: ``resolved``) is the headline of the cost columns and the
cost-accuracy plot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from services.arena.figures import bracket, num, p_value, signed, with_interval
from services.shared.files import write_json_atomic

MD_FILE, JSON_FILE, PLOT_FILE = "compare.md", "compare.json", "compare.png"
_f = num


def _pair_lines(pair: dict[str, Any], metrics: list[str]) -> list[str]:
    lines = [
        f"## `{pair['a']}` against `{pair['b']}`",
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
        methods.add((d.get("method"), d.get("assignments")))
        lines.append(
            f"| {m} | {_f(e['a'])} | {_f(e['b'])} | {signed(d['mean'])} | "
            f"{bracket(d, 3, sign=True)} | {p_value(d.get('p_value'))} | {_f(d['se'])} | "
            f"{e['win']} | {e['loss']} | {e['tie']} |"
        )
    tests = "; ".join(f"{m}, {t:,} sign assignments" for m, t in sorted(methods) if m)
    lines += [
        "",
        "Interval and p from one sign-flip test per metric (" + (tests or "none") + "; whole "
        "projects flipped together): the interval excludes 0 exactly when p < 0.05. With one "
        "trial per task and hit/miss values, p is the exact McNemar (sign) test on the tasks "
        "only one run hit (win / loss).",
    ]
    if pair["not_compared"]:
        lines += ["", "Not compared (each side's reason; never counted as a loss):", ""]
        lines += ["| task | A | B |", "|---|---|---|"]
        lines += [f"| {t} | {w['a']} | {w['b']} |" for t, w in pair["not_compared"].items()]
    return [*lines, ""]


def render_markdown(cmp: dict[str, Any], plot: str | None = PLOT_FILE) -> str:
    metrics = list(cmp["metrics"])
    top = metrics[0] if metrics else None
    lines = ["# Comparison of runs", ""]
    lines += ["| run | purple | tasks | " + " | ".join(metrics) + f" | cost | cost per {top} hit |"]
    lines.append("|---|---|---:|" + "---:|" * (len(metrics) + 2))
    for r in cmp["runs"]:
        means, unc = r.get("mean_all") or {}, r.get("uncertainty") or {}
        cells = [with_interval(means.get(m), unc.get(m)) for m in metrics]
        cost = r["cost"]
        lines.append(
            f"| `{r['run']}` | `{r['purple'] or '(green default)'}` | {r['n_tasks']} | "
            + " | ".join(cells)
            + f" | {cost['cost']:.4f} | {_f((cost.get(top) or {}).get('cost_per_hit'), 4)} |"
        )
    lines += [
        "",
        f"Each run's means over its own tasks, with {round(100 * cmp['level'])}% intervals (each "
        "with its method: docs/scoring.md, section 5); the pairs below compare the tasks both "
        "scored.",
        "",
    ]
    if cmp.get("forced_despite"):
        lines += ["**Compared despite (--force):**", ""]
        lines += [f"- {p}" for p in cmp["forced_despite"]] + [""]
    for pair in cmp["pairs"]:
        lines += _pair_lines(pair, metrics)
    lines += ["## Cost per hit", "", "| run | " + " | ".join(metrics) + " |"]
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
    if plot:
        lines += ["", f"![differences and cost-accuracy]({plot})", ""]
    return "\n".join(lines)


def render_plot(cmp: dict[str, Any], path: Path) -> Path:
    """Left: each pair's differences with their intervals; right: cost against accuracy."""
    import matplotlib  # here, not at the top: 0.6 s of CPU that only a plot needs
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    metrics = list(cmp["metrics"])
    top = metrics[0] if metrics else ""
    fig = Figure(figsize=(12, 4.8), dpi=100, layout="constrained")
    ax_d, ax_c = fig.subplots(1, 2, width_ratios=(3, 2))
    colors = matplotlib.colormaps["tab10"]
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
    ax_d.set_xticks(range(len(metrics)), metrics)
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
    ax_c.set_title("cost-accuracy", fontsize=10)
    ax_c.grid(alpha=0.3)
    path.parent.mkdir(parents=True, exist_ok=True)
    FigureCanvasAgg(fig)
    fig.savefig(path, format="png")
    return path


def write_comparison(cmp: dict[str, Any], out: Path) -> Path:
    """Write the three files into ``out``; returns the Markdown's path."""
    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out / JSON_FILE, cmp)
    render_plot(cmp, out / PLOT_FILE)
    md = out / MD_FILE
    md.write_text(render_markdown(cmp), encoding="utf-8")
    return md
