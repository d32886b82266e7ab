"""The coverage of the published hit-rate interval over the grid where users are: rates 0.02-0.98,
3-200 projects, intra-project correlation 0-0.6, project sizes uniform (1-8 tasks) or skewed
(mostly 1-3, one in ten with 5-35), K = 1 or 3 trials per task. Prints, per cell, the coverage
of ``services.shared.stats.mean_intervals`` (hit rates) with the share missed below and above and
the mean width, beside the same of the interval it replaced (Korn-Graubard on the CR2 design
effect alone, Bell-McCaffrey df, trials averaged into one value per task: reimplemented here,
on the same data); cells under 93% are marked; then each method's worst cell and mean width
over the grid. Seeded: the same grid prints the same numbers.

    .venv/bin/python bench/coverage_grid.py [--replicates 1000] [--all]

A cell's Monte Carlo error is about sqrt(c(1-c)/replicates): 0.7 points at 95% and 1,000
replicates. ``tests/shared/test_coverage.py`` holds the cells that must reach 93%.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from services.shared.stats import _beta_bounds, _t, _worst_case_n, design, mean_intervals

RATES = (0.02, 0.05, 0.1, 0.3, 0.5, 0.9, 0.98)
PROJECTS = (3, 10, 30, 100, 200)
ICCS = (0.0, 0.3, 0.6)
TRIALS = (1, 3)
FLOOR = 0.93


def sizes(rng: np.random.Generator, g: int, skewed: bool) -> np.ndarray:
    if not skewed:
        return rng.integers(1, 9, size=g)
    big = (rng.random(g) < 0.1) * rng.integers(5, 30, g)
    return np.minimum(rng.geometric(0.35, g) + big, 40)


def previous(values: np.ndarray, clusters: list) -> tuple[np.ndarray, np.ndarray]:
    """The interval this grid found wanting: n* = N / max(1, V_CR2 / (s^2/N)) times
    (t_{N-1} / t_nu)^2, nu Bell-McCaffrey; with no spread, the worst case."""
    d = design(values, clusters)
    with np.errstate(divide="ignore", invalid="ignore"):
        deff = np.maximum(1.0, d.var / (d.s2 / d.n))
    n_eff = d.n / deff * min(1.0, (_t(0.95, d.n - 1) / _t(0.95, d.df)) ** 2)
    return _beta_bounds(d.mean, np.where(d.flat, _worst_case_n(d, 0.95), n_eff))


def shipped(values: np.ndarray, clusters: list, k: int) -> tuple[np.ndarray, np.ndarray]:
    ivs = mean_intervals(values, clusters, hit_rate=True, trials=[k] * len(clusters))
    low = np.array([np.nan if iv.low is None else iv.low for iv in ivs])
    return low, np.array([np.nan if iv.high is None else iv.high for iv in ivs])


def score(p: float, low: np.ndarray, high: np.ndarray) -> tuple[float, float, float, float]:
    """Coverage, misses below and above, mean width (rows with an interval)."""
    ok = ~np.isnan(low)
    low, high = low[ok], high[ok]
    inside = (low <= p) & (p <= high)
    return inside.mean(), (low > p).mean(), (high < p).mean(), (high - low).mean()


def cell(rng, p: float, g: int, icc: float, k: int, skewed: bool, reps: int) -> tuple:
    """(shipped, previous): each coverage, misses below and above, mean width of one cell."""
    n_g = sizes(rng, g, skewed)
    clusters = np.repeat(np.arange(g), n_g).tolist()
    if icc > 0:
        s = (1 - icc) / icc
        rate = rng.beta(p * s, (1 - p) * s, size=(reps, g))
    else:
        rate = np.full((reps, g), p)
    values = rng.binomial(k, np.repeat(rate, n_g, axis=1)) / k
    return score(p, *shipped(values, clusters, k)), score(p, *previous(values, clusters))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--replicates", type=int, default=1000)
    ap.add_argument("--all", action="store_true", help="print every cell, not only those < 94%")
    args = ap.parse_args()
    rng = np.random.default_rng(20261201)
    results: dict[str, list[tuple]] = {"shipped": [], "previous": []}
    grid = itertools.product(RATES, PROJECTS, ICCS, TRIALS, (False, True))
    for p, g, icc, k, skewed in grid:
        both = cell(rng, p, g, icc, k, skewed, args.replicates)
        for name, r in zip(results, both, strict=True):
            results[name].append(r)
        if args.all or min(r[0] for r in both) < 0.94:
            shape = "skewed" if skewed else "uniform"
            print(f"p={p:<5} projects={g:<4} icc={icc} K={k} {shape:<7}", flush=True)
            for name, (cover, below, above, width) in zip(results, both, strict=True):
                mark = " <" if cover < FLOOR else ""
                print(
                    f"  {name:<8} coverage {cover:.3f} (below {below:.3f}, above {above:.3f}) "
                    f"width {width:.3f}{mark}"
                )
    for name, rows in results.items():
        covers, widths = np.array([r[0] for r in rows]), np.array([r[3] for r in rows])
        print(
            f"{name}: worst coverage {covers.min():.3f}, {int((covers < FLOOR).sum())} of "
            f"{len(rows)} cells under {FLOOR:.0%}, mean width {widths.mean():.4f}"
        )


if __name__ == "__main__":
    main()
