"""The paired comparison of two runs on one metric: the mean difference, its 95% interval and its
p-value from one procedure, a sign-flip randomization test, so that the interval excludes 0
exactly when p < 0.05.

Per task the difference d_i = a_i - b_i (a task's trials averaged first); per project g its sum
S_g over n_g tasks. Under "A and B are exchangeable within each project" the sign of each
project's differences is a coin flip (Fisher 1935; with few clusters, Canay, Romano & Shaikh
2017): flipping whole projects gives the test's reference distribution. Testing a shift d0
(d_i - d0 symmetric) and collecting the d0 not rejected gives the interval, which reduces to the
order statistics of the *subset means* m_F = sum_F S_g / sum_F n_g over the sets F of flipped
projects (Hartigan 1969): L is the k-th smallest, U the k-th largest, k = ceil(T alpha/2) - A,
with T assignments of which A always count (the identity). p = min(1, 2 min(p_low, p_high)) at
d0 = 0, counted from the same subset means. Every assignment is enumerated up to
:data:`EXACT_UP_TO` projects (then with hit/miss tasks and one trial, p is the exact McNemar /
sign test on the discordant tasks); beyond, :data:`DRAWS` seeded random assignments.
``docs/scoring.md`` ("Comparing runs") has the rules; ``tests/shared/test_signflip.py`` the proofs.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

from services.shared.stats import LEVEL, Design, design

if TYPE_CHECKING:
    import numpy as np

EXACT_UP_TO = 18
"""Projects (clusters) up to which all 2^G sign assignments are enumerated (262,144 at 18)."""
DRAWS = 19_999
"""Random assignments beyond :data:`EXACT_UP_TO` (with the identity: 20,000)."""
SEED = 0
"""The random assignments' seed: the same data always give the same p and interval."""
_DECIMALS = 12
"""Subset means are rounded to this many decimals before they are counted or ranked, so a mean
that is 0 in exact arithmetic is 0 (a float sum of thirds is not)."""
_CHUNK = 2_000


@dataclass(frozen=True)
class PairedDifference:
    """Mean of a - b over paired tasks, with the interval and p-value of one sign-flip test."""

    mean: float | None
    se: float | None
    """CR2 cluster-robust standard error of the mean difference (for reading, not the test)."""
    low: float | None
    high: float | None
    p_value: float | None
    n: int
    n_clusters: int
    method: str | None
    """``sign-flip exact`` (every assignment) or ``sign-flip Monte Carlo`` (seeded draws)."""
    assignments: int
    """T: the sign assignments the p-value and the interval are counted over."""
    no_interval: str | None = None

    def to_dict(self) -> dict[str, float | int | str | None]:
        def r(x: float | None) -> float | None:
            return None if x is None else round(float(x), 6)

        return {
            "mean": r(self.mean),
            "se": r(self.se),
            # not rounded: "the interval excludes 0 exactly when p < 0.05" holds for these floats
            "ci_low": self.low,
            "ci_high": self.high,
            "p_value": self.p_value,
            "n": self.n,
            "n_clusters": self.n_clusters,
            "method": self.method,
            "assignments": self.assignments,
            "seed": SEED if self.method == "sign-flip Monte Carlo" else None,
            "no_interval": self.no_interval,
        }


def sign_flip(
    a: Sequence[float],
    b: Sequence[float],
    clusters: Sequence[Hashable] | None = None,
    *,
    bounds: tuple[float, float] = (-1.0, 1.0),
    level: float = LEVEL,
) -> PairedDifference:
    """The sign-flip test of ``a`` against ``b`` (paired per task; ``clusters``: a task's
    project, None: every task its own). ``bounds``: the range a difference can take (a metric
    in [0, 1]: [-1, 1]), the interval's ends when too few projects can reject any shift."""
    return sign_flips({"": (a, b)}, clusters, bounds={"": bounds}, level=level)[""]


def sign_flips(
    pairs: Mapping[str, tuple[Sequence[float], Sequence[float]]],
    clusters: Sequence[Hashable] | None = None,
    *,
    bounds: Mapping[str, tuple[float, float]] | None = None,
    level: float = LEVEL,
) -> dict[str, PairedDifference]:
    """:func:`sign_flip` for several metrics of the same tasks (``pairs``: metric -> (a, b)),
    over one set of sign assignments: the random ones are drawn once for all."""
    import numpy as np

    diffs: dict[str, list[float]] = {}
    for name, (a, b) in pairs.items():
        if len(a) != len(b):
            raise ValueError("paired values differ in length")
        diffs[name] = (np.asarray(a, dtype=float) - np.asarray(b, dtype=float)).tolist()
    n = len(next(iter(diffs.values()), []))
    if n == 0:
        none = PairedDifference(None, None, None, None, None, 0, 0, None, 0, "no task")
        return dict.fromkeys(pairs, none)
    d = design(list(diffs.values()), clusters)
    if d.g == 1:
        why = "one task" if n == 1 else "one project"
        return {
            name: PairedDifference(float(m), None, None, None, None, n, 1, None, 0, why)
            for name, m in zip(diffs, d.mean, strict=True)
        }
    means, total, always, method = _subset_means(d.sums.T, d.sizes)
    k = math.ceil(Fraction(total) * (1 - Fraction(level).limit_denominator(10**6)) / 2) - always
    return {
        name: _invert(d, i, means[:, i], (total, always, k, method), (bounds or {}).get(name))
        for i, name in enumerate(diffs)
    }


def _invert(
    d: Design,
    row: int,
    means: np.ndarray,
    counts: tuple[int, int, int, str],
    bounds: tuple[float, float] | None,
) -> PairedDifference:
    """p at d0 = 0 and the interval [k-th smallest, k-th largest] of one metric's subset means
    (``counts``: T, A, k and the method)."""
    import numpy as np

    total, always, k, method = counts
    le0, ge0 = int((means <= 0).sum()), int((means >= 0).sum())
    p = min(1.0, 2 * min(always + le0, always + ge0) / total)
    mean = float(d.mean[row])
    head = (mean, math.sqrt(float(d.var[row])))
    tail = (d.n, d.g, method, total)
    if np.ptp(np.round(d.sums[row] / d.sizes, _DECIMALS)) == 0:
        why = (
            "the runs agree on every task"
            if mean == 0
            else f"every project's mean difference is {mean:+.3f}: no spread to bound"
        )
        return PairedDifference(*head, None, None, p, *tail, why)
    if k <= 0:
        low, high = bounds or (-math.inf, math.inf)
    else:
        low = float(np.partition(means, k - 1)[k - 1])
        high = float(-np.partition(-means, k - 1)[k - 1])
    if not (math.isfinite(low) and math.isfinite(high)):
        why = f"{d.g} projects: no sign-flip test can reach p < 0.05"
        return PairedDifference(*head, None, None, p, *tail, why)
    return PairedDifference(*head, low, high, p, *tail)


def _subset_means(sums: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, int, int, str]:
    """Per metric (a column of ``sums``, G x M), the means m_F of the non-empty flipped sets;
    how many assignments in all (T) and how many always count (A: the identity, and any empty
    random draw); the method."""
    import numpy as np

    g = len(sizes)
    if g <= EXACT_UP_TO:
        s, m = np.zeros((1, sums.shape[1])), np.zeros(1)
        for sg, ng in zip(sums, sizes, strict=True):  # every subset: 2^g sums by doubling
            s = np.concatenate((s, s + sg))
            m = np.concatenate((m, m + ng))
        return np.round(s[1:] / m[1:, None], _DECIMALS), 2**g, 1, "sign-flip exact"
    rng = np.random.default_rng(SEED)
    both = np.concatenate((sums, sizes[:, None]), axis=1)
    parts = []
    for start in range(0, DRAWS, _CHUNK):
        rows = min(_CHUNK, DRAWS - start)
        bits = np.frombuffer(rng.bytes(rows * ((g + 7) // 8)), dtype=np.uint8)
        flips = np.unpackbits(bits.reshape(rows, -1), axis=1, count=g).astype(np.float64)
        parts.append(flips @ both)
    drawn = np.concatenate(parts)
    s, m = drawn[:, :-1], drawn[:, -1]
    empty = m == 0
    means = np.round(s[~empty] / m[~empty, None], _DECIMALS)
    return means, DRAWS + 1, 1 + int(empty.sum()), "sign-flip Monte Carlo"
