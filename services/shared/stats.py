"""The estimators behind every published number: cluster bootstrap intervals, pass@k and pass^k,
per-task consistency, McNemar's exact paired test, paired bootstrap differences, win/loss/tie.

Pure functions over plain numbers (numpy for the resampling, scipy for the binomial test). Both
are imported by the functions that use them: every green and purple process imports this module
(its scores), and most never compute an interval. ``docs/scoring.md`` ("Estimators") gives each
formula and its reference; ``tests/shared/test_stats.py`` checks each against values worked by
hand.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

RESAMPLES = 2000
"""Bootstrap resamples (Efron & Tibshirani: 1000+ for percentile intervals)."""
SEED = 0
"""The bootstrap's seed: the same data always give the same interval."""
LEVEL = 0.95
METHOD = "cluster bootstrap (clusters: project; percentile interval)"
HIT = 1.0
"""A trial is a *hit* on a metric when the metric is 1 (for iou: a perfect overlap)."""


@dataclass(frozen=True)
class Interval:
    """A mean with its bootstrap standard error and percentile interval."""

    mean: float | None
    se: float | None
    low: float | None
    high: float | None
    n: int
    """Units (tasks) in the mean."""
    n_clusters: int

    def to_dict(self) -> dict[str, float | int | None]:
        r = _round
        return {
            "mean": r(self.mean),
            "se": r(self.se),
            "ci_low": r(self.low),
            "ci_high": r(self.high),
            "n": self.n,
            "n_clusters": self.n_clusters,
        }


def _round(x: float | None) -> float | None:
    return None if x is None else round(float(x), 6)


def method_info(resamples: int = RESAMPLES, seed: int = SEED) -> dict[str, object]:
    """What is written beside every interval."""
    return {"method": METHOD, "resamples": resamples, "seed": seed, "level": LEVEL}


def _cluster_sums(
    values: Sequence[float], clusters: Sequence[Hashable]
) -> tuple[np.ndarray, np.ndarray]:
    import numpy as np

    if len(values) != len(clusters):
        raise ValueError("values and clusters differ in length")
    index = {c: i for i, c in enumerate(dict.fromkeys(clusters))}
    ids = np.fromiter((index[c] for c in clusters), dtype=np.int64, count=len(clusters))
    sums = np.bincount(ids, weights=np.asarray(values, dtype=float), minlength=len(index))
    sizes = np.bincount(ids, minlength=len(index)).astype(float)
    return sums, sizes


def cluster_bootstrap(
    values: Sequence[float],
    clusters: Sequence[Hashable] | None = None,
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    level: float = LEVEL,
) -> Interval:
    """The mean of ``values`` (one per task) with a bootstrap over clusters: each resample
    draws as many clusters as there are, with replacement, and takes the mean of all their
    tasks (sum of cluster sums over sum of cluster sizes). ``clusters=None`` (or one task per
    cluster) is the plain bootstrap. SE: the resamples' standard deviation; interval: their
    (1-level)/2 and (1+level)/2 percentiles."""
    import numpy as np

    n = len(values)
    if n == 0:
        return Interval(None, None, None, None, 0, 0)
    sums, sizes = _cluster_sums(values, list(range(n)) if clusters is None else clusters)
    g = len(sums)
    mean = float(sums.sum() / sizes.sum())
    if g < 2:
        return Interval(mean, 0.0, mean, mean, n, g)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, g, size=(resamples, g))
    stats = sums[draws].sum(axis=1) / sizes[draws].sum(axis=1)
    lo, hi = np.percentile(stats, [100 * (1 - level) / 2, 100 * (1 + level) / 2])
    return Interval(mean, float(stats.std(ddof=1)), float(lo), float(hi), n, g)


def paired_difference(
    a: Sequence[float],
    b: Sequence[float],
    clusters: Sequence[Hashable] | None = None,
    **kw,
) -> Interval:
    """Mean of ``a - b`` over paired tasks, with the cluster bootstrap of the differences
    (resampling tasks, i.e. both runs' values of a task together)."""
    if len(a) != len(b):
        raise ValueError("paired values differ in length")
    import numpy as np

    diffs = (np.asarray(a, dtype=float) - np.asarray(b, dtype=float)).tolist()
    return cluster_bootstrap(diffs, clusters, **kw)


def pass_at_k(n: int, c: int, k: int) -> float | None:
    """Unbiased pass@k of one task (Chen et al. 2021): 1 - C(n-c, k) / C(n, k); None when
    fewer than k attempts."""
    _check(n, c, k)
    if n < k:
        return None
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float | None:
    """pass^k of one task (Yao et al. 2024, tau-bench): C(c, k) / C(n, k), the chance that k
    attempts drawn without replacement all succeed; None when fewer than k attempts."""
    _check(n, c, k)
    if n < k:
        return None
    return math.comb(c, k) / math.comb(n, k)


def _check(n: int, c: int, k: int) -> None:
    if k < 1 or n < 0 or not 0 <= c <= n:
        raise ValueError(f"need k >= 1 and 0 <= c <= n (n={n}, c={c}, k={k})")


def mean_over_tasks(per_task: Sequence[float | None]) -> tuple[float | None, int]:
    """The mean of the defined values and how many there were (None when none is)."""
    import numpy as np

    vals = [v for v in per_task if v is not None]
    return (float(np.mean(vals)), len(vals)) if vals else (None, 0)


def consistency(per_task_hits: Sequence[Sequence[bool]]) -> tuple[float | None, int]:
    """Share of tasks with at least two trials whose trials all agree (all hits or all
    misses), and the number of such tasks."""
    import numpy as np

    multi = [h for h in per_task_hits if len(h) >= 2]
    if not multi:
        return None, 0
    return float(np.mean([all(h) or not any(h) for h in multi])), len(multi)


@dataclass(frozen=True)
class McNemar:
    """McNemar's exact test on paired hit/miss outcomes."""

    both: int
    only_a: int
    """A hit, B missed (discordant)."""
    only_b: int
    neither: int
    p_value: float

    def to_dict(self) -> dict[str, float | int]:
        return {
            "both": self.both,
            "only_a": self.only_a,
            "only_b": self.only_b,
            "neither": self.neither,
            "p_value": round(self.p_value, 6),
        }


def mcnemar_exact(a: Sequence[bool], b: Sequence[bool]) -> McNemar:
    """Two-sided exact McNemar: the discordant pairs' split tested against Binomial(b+c, 1/2)
    (scipy's ``binomtest``); p = 1 when there is no discordant pair."""
    if len(a) != len(b):
        raise ValueError("paired outcomes differ in length")
    pairs = list(zip(map(bool, a), map(bool, b), strict=True))
    only_a = sum(x and not y for x, y in pairs)
    only_b = sum(y and not x for x, y in pairs)
    both = sum(x and y for x, y in pairs)
    neither = len(pairs) - only_a - only_b - both
    discordant = only_a + only_b
    from scipy.stats import binomtest

    p = binomtest(only_a, discordant, 0.5).pvalue if discordant else 1.0
    return McNemar(both, only_a, only_b, neither, float(p))


def win_loss_tie(a: Sequence[float], b: Sequence[float]) -> dict[str, int]:
    """Per task: A's value above B's (win), below (loss), equal (tie)."""
    import numpy as np

    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    return {
        "win": int((d > 1e-12).sum()),
        "loss": int((d < -1e-12).sum()),
        "tie": int((np.abs(d) <= 1e-12).sum()),
    }


def trial_summary(
    per_task_values: Mapping[Hashable, Sequence[float]], k_max: int
) -> dict[str, object]:
    """pass@k and pass^k for k = 1..k_max (means over the tasks with at least k attempts, a
    hit being a value of 1) and the consistency of the tasks' trials, for one metric."""
    counts = [(len(v), sum(x >= HIT for x in v)) for v in per_task_values.values()]
    out: dict[str, object] = {}
    for k in range(1, k_max + 1):
        pk, n_pk = mean_over_tasks([pass_at_k(n, c, k) for n, c in counts])
        ph, _ = mean_over_tasks([pass_hat_k(n, c, k) for n, c in counts])
        out[f"pass@{k}"] = _round(pk)
        out[f"pass^{k}"] = _round(ph)
        out[f"n@{k}"] = n_pk
    share, n_multi = consistency([[x >= HIT for x in v] for v in per_task_values.values()])
    out["consistency"] = _round(share)
    out["n_consistency"] = n_multi
    return out
