"""The coverage of the published hit-rate interval over the grid where users are: rates 0.02-0.98,
3-200 projects, intra-project correlation 0-0.6, project sizes uniform (1-8 tasks) or skewed
(mostly 1-3, one in ten with 5-35), K = 1 or 3 trials per task. Prints, per cell, the coverage
of ``services.shared.stats.mean_intervals`` (hit rates) with the share missed below and above and
the mean width; cells under 93% are marked. Seeded: the same grid prints the same numbers.

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

from services.shared.stats import mean_intervals

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


def cell(rng, p: float, g: int, icc: float, k: int, skewed: bool, reps: int) -> tuple:
    """Coverage, misses below and above, mean width of one cell."""
    n_g = sizes(rng, g, skewed)
    clusters = np.repeat(np.arange(g), n_g).tolist()
    if icc > 0:
        s = (1 - icc) / icc
        rate = rng.beta(p * s, (1 - p) * s, size=(reps, g))
    else:
        rate = np.full((reps, g), p)
    values = rng.binomial(k, np.repeat(rate, n_g, axis=1)) / k
    ivs = mean_intervals(values, clusters, hit_rate=True)
    low = np.array([iv.low if iv.low is not None else np.nan for iv in ivs])
    high = np.array([iv.high if iv.high is not None else np.nan for iv in ivs])
    ok = ~np.isnan(low)
    low, high = low[ok], high[ok]
    inside = (low <= p) & (p <= high)
    return inside.mean(), (low > p).mean(), (high < p).mean(), (high - low).mean()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--replicates", type=int, default=1000)
    ap.add_argument("--all", action="store_true", help="print every cell, not only those < 94%")
    args = ap.parse_args()
    rng = np.random.default_rng(20261201)
    under = 0
    grid = itertools.product(RATES, PROJECTS, ICCS, TRIALS, (False, True))
    for p, g, icc, k, skewed in grid:
        cover, below, above, width = cell(rng, p, g, icc, k, skewed, args.replicates)
        under += cover < FLOOR
        if args.all or cover < 0.94:
            mark = " <" if cover < FLOOR else ""
            shape = "skewed" if skewed else "uniform"
            print(
                f"p={p:<5} projects={g:<4} icc={icc} K={k} {shape:<7} coverage {cover:.3f} "
                f"(below {below:.3f}, above {above:.3f}) width {width:.3f}{mark}",
                flush=True,
            )
    print(f"{under} cells under {FLOOR:.0%}")


if __name__ == "__main__":
    main()
