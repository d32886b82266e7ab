"""The paired sign-flip test (services/shared/signflip.py): its p-value against the exact sign
test, its interval against a brute-force inversion, and the one property a reader needs: the
interval excludes 0 exactly when p < 0.05, with and without projects, with trials."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats as sps

from services.shared import signflip
from services.shared.signflip import sign_flip, sign_flips


def _excludes_zero(r) -> bool:
    return r.low is not None and (r.low > 0 or r.high < 0)


def _agrees(r) -> bool:
    """The interval and the p-value give one verdict (an interval that cannot be computed:
    only when every project's difference is the same)."""
    if r.low is None:
        return r.no_interval is not None
    return _excludes_zero(r) == (r.p_value < 0.05)


def test_four_wins_no_loss_of_fourteen_is_not_significant_in_either_reading():
    """The issue: +0.143 [+0.024, +0.286] beside McNemar's p = 0.5; the exact sign test says
    0.125, and so does the interval now."""
    r = sign_flip([1] * 4 + [0] * 10, [0] * 14)
    assert r.p_value == pytest.approx(sps.binomtest(4, 4).pvalue) == 0.125
    assert r.method == "sign-flip exact" and r.assignments == 2**14
    assert r.low <= 0 <= r.high and r.mean == pytest.approx(4 / 14)


def test_ten_of_twelve_is_significant_in_both_readings():
    r = sign_flip([1] * 10 + [0] * 2, [0] * 12)  # 10 wins, 2 ties
    assert r.p_value == pytest.approx(2 / 2**10) and r.low > 0
    r = sign_flip([1] * 10 + [0] * 2, [0] * 10 + [1] * 2)  # 10 wins, 2 losses
    assert r.p_value == pytest.approx(sps.binomtest(10, 12).pvalue)  # 0.0386
    assert r.p_value < 0.05 and r.low > 0


def test_single_trial_hit_or_miss_p_is_the_exact_mcnemar_test():
    rng = np.random.default_rng(1)
    for _ in range(40):
        n = int(rng.integers(6, 19))
        a, b = rng.integers(0, 2, n), rng.integers(0, 2, n)
        wins, losses = int(((a == 1) & (b == 0)).sum()), int(((a == 0) & (b == 1)).sum())
        want = sps.binomtest(wins, wins + losses).pvalue if wins + losses else 1.0
        assert sign_flip(a.tolist(), b.tolist()).p_value == pytest.approx(want)


def _brute_p(diffs: np.ndarray, clusters: np.ndarray, d0: float) -> float:
    """Two-sided p of the shift d0 by flipping every project of (d - d0): 2 min(one-sided)."""
    sums = np.array([(diffs[clusters == g] - d0).sum() for g in np.unique(clusters)])
    stats = np.array([np.dot(s, sums) for s in itertools.product((1, -1), repeat=len(sums))])
    observed = sums.sum()
    upper = np.mean(stats >= observed - 1e-9)
    lower = np.mean(stats <= observed + 1e-9)
    return min(1.0, 2 * min(upper, lower))


def test_the_interval_is_the_set_of_shifts_the_test_does_not_reject():
    rng = np.random.default_rng(2)
    for _ in range(6):
        g = int(rng.integers(7, 11))
        clusters = np.repeat(np.arange(g), rng.integers(1, 4, g))
        diffs = rng.choice(
            [-1.0, -0.5, 0.0, 0.5, 1.0], size=len(clusters), p=[0.1, 0.1, 0.3, 0.2, 0.3]
        )
        r = sign_flip(diffs.tolist(), [0.0] * len(diffs), clusters.tolist())
        if r.low is None:
            continue
        for d0 in np.linspace(-1, 1, 41):
            if min(abs(d0 - r.low), abs(d0 - r.high)) < 1e-9:
                continue  # on a bound itself, float ties decide
            inside = r.low <= d0 <= r.high
            assert inside == (_brute_p(diffs, clusters, d0) >= 0.05), (d0, r)


@pytest.mark.parametrize("projects", [None, 4, 8, 16, 40, 300])
def test_the_interval_excludes_zero_exactly_when_p_is_below_five_percent(projects):
    """Paired runs of 14 to 60 tasks, one trial or three (hit rates in thirds), with or
    without projects, and 600 tasks of 300 projects: exact by convolution at every size."""
    rng = np.random.default_rng(projects or 0)
    verdicts = set()
    for trial in range(60 if projects != 300 else 12):
        n = int(rng.integers(14, 61)) if projects != 300 else 600
        k = 1 if trial % 2 else 3
        pa, pb = rng.uniform(0.2, 0.9), rng.uniform(0.2, 0.9)
        a = rng.binomial(k, pa, n) / k
        b = rng.binomial(k, pb, n) / k
        clusters = rng.integers(0, projects, n).tolist() if projects else None
        r = sign_flip(a.tolist(), b.tolist(), clusters)
        assert _agrees(r), r
        verdicts.add(r.p_value < 0.05)
        assert r.method == "sign-flip exact" and r.mc_error is None
    # both verdicts were reached (with 4 projects none can be significant: 2 / 2^4 at best)
    assert verdicts == ({False} if projects == 4 else {True, False})


def test_monte_carlo_is_seeded_and_close_to_the_exact_answer(monkeypatch):
    a = [1] * 15 + [0] * 25
    b = [0] * 6 + [1] * 4 + [0] * 5 + [1] * 3 + [0] * 22  # 11 wins, 3 losses, 26 ties
    exact = sign_flip(a, b)
    assert exact.method == "sign-flip exact" and exact.assignments == 2**40
    assert exact.p_value == pytest.approx(sps.binomtest(11, 14).pvalue)  # 0.057
    monkeypatch.setattr(signflip, "CELLS", 0)  # no convolution: the draws
    r = sign_flip(a, b)
    assert r.method == "sign-flip Monte Carlo" and r == sign_flip(a, b)
    assert abs(r.p_value - exact.p_value) < 4 * r.mc_error


@pytest.mark.parametrize("n", [19, 30, 60, 120, 200])
def test_one_trial_hit_or_miss_p_is_exact_mcnemar_at_every_n(n):
    """Beyond 18 tasks too: the convolution counts all 2^n assignments."""
    rng = np.random.default_rng(n)
    for _ in range(5):
        a, b = rng.integers(0, 2, n), rng.integers(0, 2, n)
        wins, losses = int(((a == 1) & (b == 0)).sum()), int(((a == 0) & (b == 1)).sum())
        want = sps.binomtest(wins, wins + losses).pvalue if wins + losses else 1.0
        r = sign_flip(a.tolist(), b.tolist())
        assert r.method == "sign-flip exact" and r.p_value == pytest.approx(want, rel=1e-9)
        assert _agrees(r)


def test_thirty_tasks_give_one_p_and_interval_in_every_order():
    """The audit's case: 13 wins and 4 losses of 30 tasks; the same p (exact McNemar, 0.049)
    and the same interval whatever the order, with or without projects."""
    a = np.array([1] * 13 + [0] * 4 + [1] * 6 + [0] * 7)
    b = np.array([0] * 13 + [1] * 4 + [1] * 6 + [0] * 7)
    projects = np.arange(30) % 11
    first = sign_flip(a.tolist(), b.tolist())
    assert first.p_value == pytest.approx(sps.binomtest(13, 17).pvalue) and first.low > 0
    clustered = sign_flip(a.tolist(), b.tolist(), projects.tolist())
    rng = np.random.default_rng(7)
    for _ in range(20):
        order = rng.permutation(30)
        again = sign_flip(a[order].tolist(), b[order].tolist())
        assert (again.p_value, again.low, again.high) == (first.p_value, first.low, first.high)
        names = {g: f"p{x}" for g, x in zip(range(11), rng.permutation(11), strict=True)}
        moved = sign_flip(a[order].tolist(), b[order].tolist(), [names[g] for g in projects[order]])
        assert (moved.p_value, moved.low, moved.high) == (
            clustered.p_value,
            clustered.low,
            clustered.high,
        )


def test_a_continuous_metric_of_many_projects_is_order_free_with_its_error():
    rng = np.random.default_rng(3)
    a, b = rng.random(60), rng.random(60)
    clusters = np.arange(60) % 25
    r = sign_flip(a.tolist(), b.tolist(), clusters.tolist())
    assert r.method == "sign-flip Monte Carlo" and r.mc_error is not None
    order = rng.permutation(60)
    again = sign_flip(a[order].tolist(), b[order].tolist(), (clusters[order] + 100).tolist())
    assert (again.p_value, again.low, again.high) == (r.p_value, r.low, r.high)


def test_the_convolution_equals_the_enumeration(monkeypatch):
    """Projects of 1 to 3 tasks, trials in halves: the convolution's p and interval are those
    of enumerating every assignment."""
    rng = np.random.default_rng(11)
    for _ in range(10):
        g = int(rng.integers(5, 13))
        clusters = np.repeat(np.arange(g), rng.integers(1, 4, g)).tolist()
        a = (rng.integers(0, 3, len(clusters)) / 2).tolist()
        b = (rng.integers(0, 3, len(clusters)) / 2).tolist()
        conv = sign_flip(a, b, clusters)
        with monkeypatch.context() as m:
            m.setattr(signflip, "MAX_SCALE", 0)  # no integer scale: enumerated
            enum = sign_flip(a, b, clusters)
        assert conv.method == enum.method == "sign-flip exact"
        assert conv.p_value == pytest.approx(enum.p_value, rel=1e-12)
        assert (conv.low, conv.high) == pytest.approx((enum.low, enum.high), abs=1e-9)


def test_too_few_projects_or_no_spread_say_so():
    few = sign_flip([1, 1, 1, 1, 1], [0, 0, 0, 0, 1])
    assert (few.low, few.high) == (-1.0, 1.0) and few.p_value >= 0.0625  # 2^5: 2/32 at best
    tied = sign_flip([1, 0, 1, 1], [1, 0, 1, 1])
    assert tied.low is None and tied.p_value == 1.0
    assert tied.no_interval == "the runs agree on every task"
    # 4 wins and 4 losses that cancel within their projects: no agreement claimed
    cancel = sign_flip([1, 0] * 4, [0, 1] * 4, ["p", "p", "q", "q", "r", "r", "s", "s"])
    assert cancel.low is None and cancel.p_value == 1.0
    assert "wins and losses cancel" in cancel.no_interval
    swept = sign_flip([1] * 14, [0] * 14)
    assert swept.low is None and swept.p_value < 0.001 and "+1.000" in swept.no_interval
    one = sign_flip([1, 0, 1], [0, 0, 0], ["p", "p", "p"])
    assert one.p_value is None and one.no_interval == "one project"
    assert sign_flip([], []).no_interval == "no task"


def test_several_metrics_share_one_set_of_assignments():
    rng = np.random.default_rng(5)
    clusters = rng.integers(0, 30, 90).tolist()
    pairs = {m: (rng.random(90).tolist(), rng.random(90).tolist()) for m in ("x", "y")}
    together = sign_flips(pairs, clusters)
    for m, (a, b) in pairs.items():
        assert together[m] == sign_flip(a, b, clusters)
