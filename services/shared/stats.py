"""The estimators behind every published mean: a 95% interval per mean that holds its level at
this benchmark's sizes (Clopper-Pearson, Korn-Graubard, a studentized beta interval, CR2 t),
pass@k and pass^k over one task set, per-task consistency, win/loss/tie.

Pure functions over plain numbers (numpy; ``scipy.special`` for the t, normal and beta
quantiles: 0.4 s to import where ``scipy.stats`` takes 1.5 s). Both are imported by the
functions that use them: every green and purple process imports this module (its scores), and
most never compute an interval. The paired comparison of two runs is
:mod:`services.shared.signflip`. ``docs/scoring.md`` (section 5) gives each formula and its
reference; ``tests/shared/test_stats.py`` checks each against values worked by hand and
``tests/shared/test_coverage.py`` measures the coverage of every interval.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

LEVEL = 0.95
HIT = 1.0
"""A trial is a *hit* on a metric when the metric is 1 (for iou: a perfect overlap)."""

METHODS: dict[str, str] = {
    "clopper-pearson": "Clopper-Pearson exact binomial interval (independent tasks, one trial)",
    "korn-graubard": (
        "Clopper-Pearson on the effective sample size (Korn & Graubard 1998): the larger of "
        "the CR2 cluster-robust variance (degrees of freedom: Bell-McCaffrey, at most 1.5 times "
        "the projects carrying it) and the intra-project correlation's model variance; trials "
        "count where they vary"
    ),
    "beta-t": (
        "studentized beta interval for a mean in [0, 1]: Clopper-Pearson form on the effective "
        "sample size mean(1-mean)/Var, scaled by (z/t)^2 with Bell-McCaffrey degrees of freedom"
    ),
    "t-cr2": "Student t with the CR2 cluster-robust standard error, Bell-McCaffrey df",
}
"""What each interval's ``method`` names (``docs/scoring.md``, section 5, has the formulas)."""


@dataclass(frozen=True)
class Interval:
    """A mean over tasks with its standard error and 95% interval. ``low``/``high`` are None
    when nothing can be said; ``no_interval`` then says why (``one project``)."""

    mean: float | None
    se: float | None
    low: float | None
    high: float | None
    n: int
    """Units (tasks) in the mean."""
    n_clusters: int
    method: str | None = None
    """The key of :data:`METHODS` that produced ``low``/``high``."""
    no_interval: str | None = None
    df: float | None = None
    """Degrees of freedom of the cluster-robust variance (Bell-McCaffrey)."""

    def to_dict(self) -> dict[str, float | int | str | None]:
        r = _round
        return {
            "mean": r(self.mean),
            "se": r(self.se),
            "ci_low": r(self.low),
            "ci_high": r(self.high),
            "n": self.n,
            "n_clusters": self.n_clusters,
            "method": self.method,
            "no_interval": self.no_interval,
            "df": r(self.df),
        }


def _round(x: float | None) -> float | None:
    return None if x is None else round(float(x), 6)


@dataclass(frozen=True)
class Design:
    """R data sets of the same N tasks in the same G clusters (one row each): per row the mean
    over tasks, its CR2 variance and the tasks' sample variance; the Bell-McCaffrey degrees of
    freedom, which depend on the cluster sizes alone (the intercept-only regression, in closed
    form)."""

    n: int
    sizes: np.ndarray
    """(G,) tasks per cluster."""
    df: float
    sums: np.ndarray
    """(R, G) per row, the sum of each cluster's values."""
    mean: np.ndarray
    var: np.ndarray
    """(R,) CR2 (Bell & McCaffrey 2002) variance of the mean: sum_g e_g^2 / (1 - n_g/N) / N^2."""
    s2: np.ndarray
    """(R,) the tasks' sample variance (ddof 1)."""
    flat: np.ndarray
    """(R,) every task has the same value (its float variance may still not be exactly 0)."""
    binary: np.ndarray
    """(R,) every value is 0 or 1."""
    unit: np.ndarray
    """(R,) every value lies in [0, 1]."""

    @property
    def g(self) -> int:
        return len(self.sizes)

    @property
    def independent(self) -> bool:
        return self.g == self.n


def design(values: Sequence[Sequence[float]], clusters: Sequence[Hashable] | None = None) -> Design:
    """Group each row of ``values`` (rows of the same N tasks) by ``clusters`` (None: every task
    its own). With G >= 2 clusters: e_g = S_g - mean n_g, CR2 variance
    sum_g e_g^2 / (N^2 (1 - n_g/N)), Bell-McCaffrey df = tr(Q)^2 / tr(Q^2) under independent
    errors (N - 1 for independent tasks, G - 1 for equal clusters)."""
    import numpy as np

    y = np.atleast_2d(np.asarray(values, dtype=float))
    n = y.shape[1]
    if clusters is None:
        sums, sizes = y, np.ones(n)
    else:
        if len(clusters) != n:
            raise ValueError("values and clusters differ in length")
        index = {c: i for i, c in enumerate(dict.fromkeys(clusters))}
        ids = np.fromiter((index[c] for c in clusters), dtype=np.int64, count=n)
        order = np.argsort(ids, kind="stable")
        sizes = np.bincount(ids).astype(float)
        starts = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
        sums = np.add.reduceat(y[:, order], starts, axis=1)
    mean = y.sum(axis=1) / n
    flat = y.max(axis=1) == y.min(axis=1)
    s2 = np.where(flat, 0.0, y.var(axis=1, ddof=1) if n > 1 else 0.0)
    kinds = (np.all((y == 0) | (y == 1), axis=1), np.all((y >= 0) & (y <= 1), axis=1))
    if len(sizes) < 2:
        return Design(n, sizes, math.nan, sums, mean, np.full(len(y), math.nan), s2, flat, *kinds)
    w = 1.0 / (n * n * (1.0 - sizes / n))
    e = sums - mean[:, None] * sizes
    var = np.where(flat, 0.0, (w * e * e).sum(axis=1))
    a = w * sizes * sizes / n
    tr_q2 = float(np.sum(w * w * ((sizes - sizes * sizes / n) ** 2 - (sizes**2 / n) ** 2)))
    df = (1.0 / n) ** 2 / (tr_q2 + float(a.sum()) ** 2)
    if len(sizes) == n:
        df = float(n - 1)  # the closed form, exactly
    return Design(n, sizes, df, sums, mean, var, s2, flat, *kinds)


def mean_interval(
    values: Sequence[float],
    clusters: Sequence[Hashable] | None = None,
    *,
    hit_rate: bool,
    trials: Sequence[int] | None = None,
    level: float = LEVEL,
) -> Interval:
    """The mean of ``values`` (one per task; a task's trials averaged first) with its 95%
    interval. ``hit_rate``: the values are hit rates (each trial a hit or a miss): the
    Korn-Graubard interval (Clopper-Pearson exactly for independent tasks with one trial each);
    ``trials``: each task's trials (None: one each), which narrow it where they vary.
    Otherwise a mean of values in [0, 1] gets the studentized beta interval, any other the CR2 t
    interval. One task or one project: no interval, and why."""
    return mean_intervals([values], clusters, hit_rate=hit_rate, trials=trials, level=level)[0]


def mean_intervals(
    values: Sequence[Sequence[float]],
    clusters: Sequence[Hashable] | None = None,
    *,
    hit_rate: bool,
    trials: Sequence[int] | None = None,
    level: float = LEVEL,
) -> list[Interval]:
    """:func:`mean_interval` of each row of ``values`` (rows of the same tasks and clusters),
    computed together."""
    import numpy as np

    y = np.asarray(values, dtype=float).reshape(len(values), -1)
    n = y.shape[1]
    if n == 0:
        return [Interval(None, None, None, None, 0, 0, no_interval="no task")] * len(y)
    d = design(y, clusters)
    if n == 1 or d.g == 1:
        why = "one task" if n == 1 else "one project"
        return [Interval(float(m), None, None, None, n, d.g, no_interval=why) for m in d.mean]
    se = np.sqrt(d.var)
    if hit_rate:
        if trials is not None and len(trials) != n:
            raise ValueError("values and trials differ in length")
        n_eff = _korn_graubard_n(d, level, n if trials is None else max(n, int(sum(trials))))
        methods = np.where(d.independent & d.binary, "clopper-pearson", "korn-graubard")
    else:
        n_eff = _beta_t_n(d, level)
        methods = np.where(d.unit, "beta-t", "t-cr2")
    low, high = _beta_bounds(d.mean, n_eff, level)
    half = _t(level, d.df) * se
    t_rows = methods == "t-cr2"
    low, high = np.where(t_rows, d.mean - half, low), np.where(t_rows, d.mean + half, high)
    out = []
    for i, m in enumerate(map(float, d.mean)):
        if t_rows[i] and d.flat[i]:  # a t interval of no spread: nothing bounds it
            out.append(Interval(m, 0.0, None, None, n, d.g, no_interval="no spread"))
        else:
            bounds = (float(low[i]), float(high[i]))
            out.append(Interval(m, float(se[i]), *bounds, n, d.g, str(methods[i]), df=d.df))
    return out


def _t(level: float, df: float) -> float:
    """The (1 + level) / 2 quantile of Student's t with ``df`` degrees of freedom."""
    from scipy.special import stdtrit

    return float(stdtrit(df, (1 + level) / 2))


def _df_factor(d: Design, level: float, top: float) -> float:
    """(top / t_df)^2, at most 1: the degrees-of-freedom adjustment of an effective sample size
    (``top``: t_{N-1} for a proportion, whose variance p(1-p) is known given p; z otherwise)."""
    return min(1.0, (top / _t(level, d.df)) ** 2)


def _worst_case_n(d: Design, level: float) -> float:
    """The effective sample size when the data cannot estimate the design effect (every task
    scored the same): its largest value, sum n_g^2 / N (a project's tasks all alike), with the
    degrees-of-freedom adjustment; N for independent tasks."""
    return d.n * d.n / float((d.sizes**2).sum()) * _df_factor(d, level, _t(level, d.n - 1))


def _korn_graubard_n(d: Design, level: float, trials: int) -> np.ndarray:
    """n* = min(M, n*_CR2, n*_model), in the manner of Korn & Graubard (1998): n*_V = s_1^2 / V
    times (t_{M-1} / t_nu)^2, s_1^2 = N mean (1 - mean) / (N - 1) the variance one-trial tasks at
    this mean would have, M the trials (``trials``): a task whose trials vary counts for up to
    its trials.

    V_CR2, from the run's residuals, with nu = min(Bell-McCaffrey df, 1.5 x :func:`_carriers`):
    few projects may carry the whole variance (a rate near 0 or 1). V_model = (s^2 / N)
    (1 + (m - 1) rho), m = sum n_g^2 / N, rho the intra-project correlation (:func:`_icc`), with
    the Bell-McCaffrey df: it carries the weight of a large project whose tasks happened to
    agree, which the residuals miss. Independent tasks (rho = 0: V_model = V_CR2 = s^2 / N):
    n* >= N, as a mean of independent values in [0, 1] is no more spread than a binomial's:
    Clopper-Pearson itself for one trial each, never wider with more. No spread:
    :func:`_worst_case_n`."""
    import numpy as np
    from scipy.special import stdtrit

    p, n = d.mean, d.n
    with np.errstate(divide="ignore", invalid="ignore"):
        s1 = n * p * (1 - p) / (n - 1)
        model = d.s2 / n * (1 + (float((d.sizes**2).sum()) / n - 1) * _icc(d))
        t_cr2 = stdtrit(np.minimum(d.df, CARRIERS * _carriers(d)), (1 + level) / 2)
        top = _t(level, trials - 1)
        by_cr2 = s1 / d.var * np.minimum(1.0, (top / t_cr2) ** 2)
        by_model = s1 / model * _df_factor(d, level, top)
        n_eff = np.minimum(trials, np.minimum(by_cr2, by_model))
    if d.independent:
        n_eff = np.maximum(n, n_eff)
    return np.where(d.flat, _worst_case_n(d, level), n_eff)


CARRIERS = 1.5
"""V_CR2's nu in projects, as a multiple of the projects that carry the variance: the plug-in
count is about a third of the true one when every project carries alike (E chi2_1^2 = 3) and
exact when one does; 1.5, measured over ``bench/coverage_grid.py``'s grid, covers in every cell
(2 does not at every seed)."""


def _residuals(d: Design) -> tuple[np.ndarray, np.ndarray]:
    """Per row and project, e_g = S_g - mean n_g, and the CR2 weights w_g."""
    e = d.sums - d.mean[:, None] * d.sizes
    return e, 1.0 / (d.n * d.n * (1.0 - d.sizes / d.n))


def _icc(d: Design) -> np.ndarray:
    """The one-way ANOVA estimate of the intra-project correlation of the task values, per row,
    clipped to [0, 1]: (MSB - MSW) / (MSB + (n0 - 1) MSW), n0 = (N - sum n_g^2 / N) / (G - 1);
    0 when no project has two tasks."""
    import numpy as np

    e, _ = _residuals(d)
    ssb = (e * e / d.sizes).sum(axis=1)
    ssw = np.maximum(0.0, (d.n - 1) * d.s2 - ssb)
    if d.n == d.g:
        return np.zeros(len(d.mean))
    msb, msw = ssb / (d.g - 1), ssw / (d.n - d.g)
    n0 = (d.n - float((d.sizes**2).sum()) / d.n) / (d.g - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = (msb - msw) / (msb + (n0 - 1) * msw)
    return np.clip(np.nan_to_num(rho, nan=0.0), 0.0, 1.0)


def _carriers(d: Design) -> np.ndarray:
    """How many projects carry the CR2 variance, per row: (sum a_g)^2 / sum a_g^2 of its terms
    a_g = w_g e_g^2 (the Satterthwaite degrees of freedom of a sum of independent squares, with
    each square's share estimated from the run itself: G when all are alike, 1 when one project
    holds every hit); the Bell-McCaffrey df where there is no spread."""
    import numpy as np

    e, w = _residuals(d)
    a = w * e * e
    with np.errstate(divide="ignore", invalid="ignore"):
        nu = a.sum(axis=1) ** 2 / (a * a).sum(axis=1)
    return np.where(np.isfinite(nu) & (nu > 0), nu, d.df)


def _beta_t_n(d: Design, level: float) -> np.ndarray:
    """n* = mean (1 - mean) / max(Var_CR2, s^2/N) times (z / t_df)^2: to first order the t
    interval, bounded by [0, 1] and wider on the side away from a mean near 0 or 1; as for a hit
    rate, projects never count for more than independent tasks (a CR2 variance below s^2/N is
    taken as s^2/N); with no spread, :func:`_worst_case_n`."""
    import numpy as np
    from scipy.special import ndtri

    var = np.maximum(d.var, d.s2 / d.n)
    with np.errstate(divide="ignore", invalid="ignore"):
        n_eff = d.mean * (1 - d.mean) / var * _df_factor(d, level, float(ndtri((1 + level) / 2)))
    return np.where(d.flat, _worst_case_n(d, level), n_eff)


def _beta_bounds(p: np.ndarray, n_eff: np.ndarray, level: float = LEVEL) -> tuple[Any, Any]:
    """The Clopper-Pearson bounds for x = p n* successes of n* trials (not necessarily whole
    numbers): Beta((1-level)/2; x, n*-x+1) and Beta((1+level)/2; x+1, n*-x); 0 and 1 at the
    ends. Element-wise over arrays."""
    import numpy as np
    from scipy.special import betaincinv  # the beta quantile: Beta(q; a, b) = I^-1_q(a, b)

    n_eff = np.asarray(n_eff, dtype=float)
    x = np.clip(np.asarray(p, dtype=float) * n_eff, 0.0, n_eff)
    alpha = 1 - level
    tiny = np.finfo(float).tiny
    top = n_eff - x > 1e-12 * n_eff
    low = np.where(x > 0, betaincinv(np.maximum(x, tiny), n_eff - x + 1, alpha / 2), 0.0)
    high = np.where(top, betaincinv(x + 1, np.maximum(n_eff - x, tiny), 1 - alpha / 2), 1.0)
    return low, high


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
    vals = [v for v in per_task if v is not None]
    return (math.fsum(vals) / len(vals), len(vals)) if vals else (None, 0)


def consistency(per_task_hits: Sequence[Sequence[bool]]) -> tuple[float | None, int]:
    """Share of tasks with at least two trials whose trials all agree (all hits or all
    misses), and the number of such tasks."""
    multi = [h for h in per_task_hits if len(h) >= 2]
    if not multi:
        return None, 0
    return sum(all(h) or not any(h) for h in multi) / len(multi), len(multi)


def win_loss_tie(a: Sequence[float], b: Sequence[float]) -> dict[str, int]:
    """Per task: A's value above B's (win), below (loss), equal (tie)."""
    import numpy as np

    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    return {
        "win": int((d > 1e-12).sum()),
        "loss": int((d < -1e-12).sum()),
        "tie": int((np.abs(d) <= 1e-12).sum()),
    }


def pass_k_metrics(agg: Mapping[str, Any], metrics: Iterable[str]) -> list[str]:
    """Of ``metrics``, those in the pass@k table of the aggregate ``agg``: the hit/miss ones
    with a trials row (an aggregate stored before continuous metrics were left out of
    ``trials`` still has them: their interval is then a continuous mean's)."""
    trials = agg.get("trials") or {}
    ivs = (agg.get("uncertainty") or {}).get("mean_all") or {}
    return [
        m
        for m in metrics
        if trials.get(m) and (ivs.get(m) or {}).get("method") not in CONTINUOUS_METHODS
    ]


CONTINUOUS_METHODS = frozenset({"beta-t", "t-cr2"})
"""The interval methods of a continuous mean (:data:`METHODS`)."""


def trial_summary(
    per_task_values: Mapping[Hashable, Sequence[float]], k_max: int
) -> dict[str, object]:
    """pass@k and pass^k for k = 1..k_max over one task set: the tasks with at least k_max
    attempts (``n``; a hit is a value of 1), so pass@k never falls and pass^k never rises with
    k; and the consistency of those tasks' trials, for one metric."""
    counts = [(len(v), sum(x >= HIT for x in v)) for v in per_task_values.values()]
    eligible = [(n, c) for n, c in counts if n >= k_max]
    out: dict[str, object] = {"n": len(eligible)}
    for k in range(1, k_max + 1):
        pk, n_pk = mean_over_tasks([pass_at_k(n, c, k) for n, c in eligible])
        ph, _ = mean_over_tasks([pass_hat_k(n, c, k) for n, c in eligible])
        out[f"pass@{k}"] = _round(pk)
        out[f"pass^{k}"] = _round(ph)
        out[f"n@{k}"] = n_pk
    hits = [[x >= HIT for x in v] for v in per_task_values.values() if len(v) >= k_max]
    share, n_multi = consistency(hits)
    out["consistency"] = _round(share)
    out["n_consistency"] = n_multi
    return out
