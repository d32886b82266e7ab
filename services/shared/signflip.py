"""The paired comparison of two runs on one metric: the mean difference, its 95% interval and its
p-value from one procedure, a sign-flip randomization test, so that the interval excludes 0
exactly when p < 0.05.

Per task the difference d_i = a_i - b_i (a task's trials averaged first); per project g its sum
S_g over n_g tasks. Under "A and B are exchangeable within each project" the sign of each
project's differences is a coin flip (Fisher 1935; with few clusters, Canay, Romano & Shaikh
2017): flipping whole projects gives the test's reference distribution. Testing a shift d0
(d_i - d0 symmetric) and collecting the d0 not rejected gives the interval, which reduces to the
order statistics of the *subset means* m_F = sum_F S_g / sum_F n_g over the sets F of flipped
projects (Hartigan 1969): L is the smallest m with P(m_F <= m) >= alpha/2 counting the identity
(F empty), U the largest with P(m_F >= m) >= alpha/2; p = min(1, 2 min(P(m_F <= 0),
P(m_F >= 0))), from the same distribution.

The distribution is exact and does not depend on the order of the tasks:

- ``sign-flip exact``: when every S_g is a multiple of 1/Q for a small Q (hit/miss values, and
  their means over K trials: Q = K), the counts of every (sum_F Q S_g, sum_F n_g) over all 2^G
  assignments, by convolution over the projects (one shift-and-add per project); with one trial
  and hit/miss values of independent tasks, p is the exact McNemar (sign) test at every n;
- ``sign-flip exact`` otherwise (a continuous metric) up to :data:`EXACT_UP_TO` projects: every
  assignment enumerated;
- ``sign-flip Monte Carlo`` beyond (a continuous metric of many projects, or a convolution
  larger than :data:`CELLS`): :data:`DRAWS` seeded assignments over the projects in a canonical
  order (sorted by their sums and sizes), with the p-value's Monte Carlo standard error.

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
"""Projects (clusters) up to which a continuous metric's 2^G sign assignments are enumerated."""
CELLS = 300_000_000
"""The most work (table cells x projects) a convolution may take; beyond, Monte Carlo."""
MAX_SCALE = 60
"""The largest Q tried so that every project sum times Q is a whole number (K trials: Q = K)."""
DRAWS = 19_999
"""Random assignments of the Monte Carlo test (with the identity: 20,000)."""
SEED = 0
"""The random assignments' seed: the same data always give the same p and interval."""
TEST = {
    "exact": "every assignment: by convolution over integer-scaled project sums, or enumerated "
    f"up to {EXACT_UP_TO} projects (a continuous metric)",
    "exact_up_to_projects": EXACT_UP_TO,
    "draws": DRAWS,
    "seed": SEED,
}
"""The test as a comparison records it."""
_DECIMALS = 12
"""Enumerated subset means of a continuous metric are rounded to this many decimals before they
are counted or ranked, so a mean that is 0 in exact arithmetic is 0 (a float sum of thirds is
not)."""
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
    """T: the sign assignments the p-value and the interval are counted over (2^G when
    exact)."""
    no_interval: str | None = None
    mc_error: float | None = None
    """The Monte Carlo standard error of p (None when exact)."""

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
            "assignments": self.assignments if self.assignments < 2**53 else None,
            "seed": SEED if self.method == MONTE_CARLO else None,
            "mc_error": r(self.mc_error),
            "no_interval": self.no_interval,
        }


EXACT, MONTE_CARLO = "sign-flip exact", "sign-flip Monte Carlo"


@dataclass(frozen=True)
class _Distribution:
    """The subset means m_F of the non-empty flipped sets, sorted and distinct, with how many
    assignments give each (``weight``); ``always``: the assignments that always count (the
    identity, and any empty random draw); ``total``: T."""

    means: np.ndarray
    weight: np.ndarray
    always: float
    total: float
    method: str


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
    """:func:`sign_flip` for several metrics of the same tasks (``pairs``: metric -> (a, b))."""
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
    alpha = 1 - Fraction(level).limit_denominator(10**6)
    return {
        name: _invert(d, i, _distribution(d.sums[i], d.sizes), alpha, (bounds or {}).get(name))
        for i, name in enumerate(diffs)
    }


def _invert(
    d: Design, row: int, dist: _Distribution, alpha: Fraction, bounds: tuple[float, float] | None
) -> PairedDifference:
    """p at d0 = 0 and the interval of one metric from its subset means' distribution."""
    import numpy as np

    cum_le = dist.always + np.cumsum(dist.weight)
    cum_ge = dist.always + np.cumsum(dist.weight[::-1])[::-1]
    below, above = dist.means <= 0, dist.means >= 0
    le0 = float(cum_le[below][-1]) if below.any() else dist.always
    ge0 = float(cum_ge[above][0]) if above.any() else dist.always
    p = min(1.0, 2 * min(le0, ge0) / dist.total)
    # k-th smallest and largest, k = ceil(T alpha/2) - always: the counts reach ceil(T alpha/2)
    need = (
        float(math.ceil(Fraction(dist.total) * alpha / 2))
        if dist.total < 2**53
        else (dist.total * float(alpha) / 2)
    )
    mean = float(d.mean[row])
    head = (mean, math.sqrt(float(d.var[row])))
    total = int(dist.total) if dist.total < 2**53 else 2**d.g
    tail = (d.n, d.g, dist.method, total)
    mc = math.sqrt(p * (1 - p) / DRAWS) if dist.method == MONTE_CARLO else None
    if np.ptp(np.round(d.sums[row] / d.sizes, _DECIMALS)) == 0:
        if d.flat[row] and mean == 0:
            why = "the runs agree on every task"
        elif mean == 0:
            why = "every project's mean difference is 0 (wins and losses cancel within each)"
        else:
            why = f"every project's mean difference is {mean:+.3f}: no spread to bound"
        return PairedDifference(*head, None, None, p, *tail, why, mc)
    if dist.always >= need:
        low, high = bounds or (-math.inf, math.inf)
    else:
        low = float(dist.means[np.argmax(cum_le >= need)])
        high = float(dist.means[len(cum_ge) - 1 - np.argmax(cum_ge[::-1] >= need)])
    if not (math.isfinite(low) and math.isfinite(high)):
        why = f"{d.g} projects: no sign-flip test can reach p < 0.05"
        return PairedDifference(*head, None, None, p, *tail, why, mc)
    return PairedDifference(*head, low, high, p, *tail, None, mc)


def _scale(sums: np.ndarray) -> int | None:
    """The smallest Q <= :data:`MAX_SCALE` making every sum times Q a whole number (None)."""
    import numpy as np

    for q in range(1, MAX_SCALE + 1):
        x = sums * q
        if np.all(np.abs(x - np.round(x)) <= 1e-9 * np.maximum(1.0, np.abs(x))):
            return q
    return None


def _distribution(sums: np.ndarray, sizes: np.ndarray) -> _Distribution:
    """The distribution of the subset means over the projects (``sums``, ``sizes``: G each),
    exact where it can be (see the module's docstring), in a canonical order of the projects."""
    import numpy as np

    q = _scale(sums)
    if q is not None:
        scaled = np.round(sums * q).astype(np.int64)
        cells = (int(np.abs(scaled).sum()) * 2 + 1) * (int(sizes.sum()) + 1)
        if cells * len(sizes) <= CELLS:
            return _convolved(scaled, sizes.astype(np.int64), q)
    order = np.lexsort((sizes, sums))
    sums, sizes = sums[order], sizes[order]
    if len(sizes) <= EXACT_UP_TO:
        s, m = np.zeros(1), np.zeros(1)
        for sg, ng in zip(sums, sizes, strict=True):  # every subset: 2^g sums by doubling
            s = np.concatenate((s, s + sg))
            m = np.concatenate((m, m + ng))
        means = np.round(s[1:] / m[1:], _DECIMALS)
        return _grouped(means, np.ones(len(means)), 1.0, float(2 ** len(sizes)), EXACT)
    return _drawn(sums, sizes)


def _convolved(scaled: np.ndarray, sizes: np.ndarray, q: int) -> _Distribution:
    """Counts of (sum_F Q S_g, sum_F n_g) over every F, one project at a time (2^G in all)."""
    import numpy as np

    order = np.lexsort((sizes, scaled))
    scaled, sizes = scaled[order], sizes[order]
    lo, hi = int(scaled[scaled < 0].sum()), int(scaled[scaled > 0].sum())
    width, n = hi - lo + 1, int(sizes.sum())
    counts = np.zeros((width, n + 1))
    counts[-lo, 0] = 1.0
    for s, m in zip(scaled.tolist(), sizes.tolist(), strict=True):
        new = counts.copy()
        if s >= 0:
            new[s:, m:] += counts[: width - s, : n + 1 - m]
        else:
            new[: width + s, m:] += counts[-s:, : n + 1 - m]
        counts = new
    counts[-lo, 0] -= 1.0  # the empty set: the identity, counted apart
    si, mi = np.nonzero(counts)
    means = (si + lo) / (q * mi.astype(float))
    return _grouped(means, counts[si, mi], 1.0, float(2 ** len(sizes)), EXACT)


def _drawn(sums: np.ndarray, sizes: np.ndarray) -> _Distribution:
    """:data:`DRAWS` seeded random assignments of the projects (in the caller's order)."""
    import numpy as np

    g = len(sizes)
    rng = np.random.default_rng(SEED)
    both = np.stack((sums, sizes), axis=1)
    parts = []
    for start in range(0, DRAWS, _CHUNK):
        rows = min(_CHUNK, DRAWS - start)
        bits = np.frombuffer(rng.bytes(rows * ((g + 7) // 8)), dtype=np.uint8)
        flips = np.unpackbits(bits.reshape(rows, -1), axis=1, count=g).astype(np.float64)
        parts.append(flips @ both)
    drawn = np.concatenate(parts)
    s, m = drawn[:, 0], drawn[:, 1]
    empty = m == 0
    means = np.round(s[~empty] / m[~empty], _DECIMALS)
    return _grouped(
        means, np.ones(len(means)), 1.0 + float(empty.sum()), float(DRAWS + 1), MONTE_CARLO
    )


def _grouped(
    means: np.ndarray, weight: np.ndarray, always: float, total: float, method: str
) -> _Distribution:
    """The distribution with equal means merged, sorted."""
    import numpy as np

    values, inverse = np.unique(means, return_inverse=True)
    return _Distribution(values, np.bincount(inverse, weights=weight), always, total, method)
