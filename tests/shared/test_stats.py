"""The estimators of services/shared/stats.py against values worked by hand and against scipy's
own implementations (the coverage of every interval: tests/shared/test_coverage.py)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from services.shared import stats


@pytest.mark.parametrize(
    ("n", "c", "k", "want"),
    [
        (5, 2, 1, 0.4),  # c/n
        (5, 2, 2, 1 - 3 / 10),  # 1 - C(3,2)/C(5,2)
        (5, 2, 4, 1.0),  # C(3,4) = 0: four draws from five must include a hit
        (3, 0, 2, 0.0),
        (3, 3, 3, 1.0),
        (10, 1, 3, 1 - 84 / 120),  # C(9,3)=84, C(10,3)=120
    ],
)
def test_pass_at_k_hand_worked(n, c, k, want):
    assert stats.pass_at_k(n, c, k) == pytest.approx(want)


@pytest.mark.parametrize(
    ("n", "c", "k", "want"),
    [
        (5, 2, 1, 0.4),
        (5, 2, 2, 1 / 10),  # C(2,2)/C(5,2)
        (5, 3, 2, 3 / 10),
        (5, 2, 3, 0.0),
        (3, 3, 3, 1.0),
        (10, 7, 3, 35 / 120),  # C(7,3)=35
    ],
)
def test_pass_hat_k_hand_worked(n, c, k, want):
    assert stats.pass_hat_k(n, c, k) == pytest.approx(want)


def test_fewer_than_k_attempts_give_no_value():
    assert stats.pass_at_k(2, 1, 3) is None
    assert stats.pass_hat_k(2, 2, 3) is None
    with pytest.raises(ValueError):
        stats.pass_at_k(2, 3, 1)


def test_win_loss_tie():
    assert stats.win_loss_tie([1, 0, 0.5, 1], [0, 1, 0.5, 0]) == {"win": 2, "loss": 1, "tie": 1}


def test_consistency_counts_tasks_whose_trials_agree():
    share, n = stats.consistency([[True, True], [False, False, False], [True, False], [True]])
    assert (share, n) == (pytest.approx(2 / 3), 3)
    assert stats.consistency([[True]]) == (None, 0)


@pytest.mark.parametrize(("hits", "n"), [(11, 12), (0, 5), (5, 5), (3, 30), (99, 100), (1, 2)])
def test_independent_hit_rates_get_exactly_scipys_clopper_pearson(hits, n):
    """The bundled baseline's 11 of 12 (docs/tasks.md): [0.615, 0.998], never the bootstrap's [0.75, 1.00]."""
    iv = stats.mean_interval([1.0] * hits + [0.0] * (n - hits), hit_rate=True)
    ref = sps.binomtest(hits, n).proportion_ci(confidence_level=0.95, method="exact")
    assert iv.method == "clopper-pearson" and iv.n == iv.n_clusters == n
    assert (iv.low, iv.high) == (pytest.approx(ref.low, abs=1e-9), pytest.approx(ref.high))
    assert iv.high - iv.low > 0.02  # all hits or all misses too: never [x, x]
    # and the same with projects named, one task each
    named = stats.mean_interval([1.0] * hits + [0.0] * (n - hits), list(range(n)), hit_rate=True)
    assert (named.low, named.high, named.method) == (iv.low, iv.high, iv.method)


def test_the_cr2_variance_and_bell_mccaffrey_df_worked_by_hand():
    # two projects of two tasks: mean 1/2, e = (2 - 1, 0 - 1), w = 1 / (16 (1 - 2/4)) = 1/8:
    # Var = (1 + 1) / 8 = 1/4; equal clusters: df = G - 1 = 1
    d = stats.design([1, 1, 0, 0], ["a", "a", "b", "b"])
    assert d.var[0] == pytest.approx(0.25) and d.df == pytest.approx(1.0)
    assert d.g == 2 and not d.independent
    # independent tasks: CR2 = s^2 / N, df = N - 1
    y = [0.2, 0.9, 0.4, 0.4, 1.0]
    d = stats.design(y)
    assert d.var[0] == pytest.approx(np.var(y, ddof=1) / 5) and d.df == 4
    # equal clusters of three, any values: df = G - 1 (Bell-McCaffrey for balanced designs)
    assert stats.design(np.arange(12.0), [i // 3 for i in range(12)]).df == pytest.approx(3.0)
    # unequal clusters: fewer than G - 1 (one project of 6 and three of 1)
    assert stats.design(np.arange(9.0), [0] * 6 + [1, 2, 3]).df < 3


def test_korn_graubard_worked_by_hand():
    values, clusters = [1, 1, 1, 0, 1, 0, 0, 0], ["a", "a", "b", "b", "c", "c", "d", "d"]
    iv = stats.mean_interval(values, clusters, hit_rate=True)
    d = stats.design(values, clusters)
    # e_g = 1, 0, 0, -1: two projects carry the CR2 variance; the ANOVA correlation: SSB 1,
    # SSW 1, MSB 1/3, MSW 1/4, n0 2: rho = (1/12) / (7/12)
    assert stats._carriers(d)[0] == pytest.approx(2.0)
    assert stats._icc(d)[0] == pytest.approx(1 / 7)
    s1 = 8 * 0.25 / 7  # the variance of 8 one-trial tasks at 0.5
    model = d.s2[0] / 8 * (1 + (2 - 1) / 7)
    t = sps.t.ppf(0.975, 7)
    by_cr2 = s1 / d.var[0] * min(1.0, (t / sps.t.ppf(0.975, min(3.0, 1.5 * 2))) ** 2)
    by_model = s1 / model * min(1.0, (t / sps.t.ppf(0.975, d.df)) ** 2)
    n_eff = min(8, by_cr2, by_model)
    x = 0.5 * n_eff
    assert iv.method == "korn-graubard" and iv.n_clusters == 4 and iv.df == pytest.approx(3.0)
    assert iv.low == pytest.approx(sps.beta.ppf(0.025, x, n_eff - x + 1))
    assert iv.high == pytest.approx(sps.beta.ppf(0.975, x + 1, n_eff - x))
    # clustering widens: the same values as eight independent tasks
    plain = stats.mean_interval(values, hit_rate=True)
    assert iv.high - iv.low > plain.high - plain.low


def test_a_large_project_whose_tasks_agreed_still_weighs_as_large():
    # one project of 20 tasks, all misses, beside 20 projects of one task (5 hits): the
    # residuals of the large project are small (it agrees with a low mean), but the correlation
    # the small ones cannot show is measured on the projects of several tasks; here two more
    # projects of 4 that split 4-0 and 0-4 show it, and the model variance widens the interval
    values = [0.0] * 20 + [1.0] * 5 + [0.0] * 15 + [1.0] * 4 + [0.0] * 4
    clusters = [0] * 20 + list(range(1, 21)) + [21] * 4 + [22] * 4
    d = stats.design(values, clusters)
    model = d.s2[0] / d.n * (1 + (float((d.sizes**2).sum()) / d.n - 1) * stats._icc(d)[0])
    assert model > d.var[0]
    iv = stats.mean_interval(values, clusters, hit_rate=True)
    s1 = d.n * d.mean[0] * (1 - d.mean[0]) / (d.n - 1)
    cr2_only = s1 / d.var[0] * min(1.0, (sps.t.ppf(0.975, d.n - 1) / sps.t.ppf(0.975, d.df)) ** 2)
    low, high = stats._beta_bounds(d.mean, np.array([cr2_only]))
    assert iv.high - iv.low > float(high[0] - low[0])


def test_all_hits_in_projects_assume_the_worst_design_effect():
    # 12 hits in 6 projects of 2: nothing estimates the design effect: n* = N^2 / sum n_g^2 = 6,
    # times (t_11 / t_5)^2; the lower bound (alpha/2)^(1/n*)
    iv = stats.mean_interval([1.0] * 12, [i // 2 for i in range(12)], hit_rate=True)
    n_eff = 6 * (sps.t.ppf(0.975, 11) / sps.t.ppf(0.975, 5)) ** 2
    assert iv.low == pytest.approx(0.025 ** (1 / n_eff)) and iv.high == 1.0
    assert iv.low < stats.mean_interval([1.0] * 12, hit_rate=True).low


def test_nothing_to_say_is_said_with_the_reason():
    none = stats.mean_interval([], hit_rate=True)
    assert (none.mean, none.low, none.no_interval) == (None, None, "no task")
    one = stats.mean_interval([1.0], hit_rate=True)
    assert (one.mean, one.low, one.high, one.no_interval) == (1.0, None, None, "one task")
    project = stats.mean_interval([1.0, 0.0, 1.0], ["p", "p", "p"], hit_rate=True)
    assert (project.mean, project.low, project.no_interval) == (
        pytest.approx(2 / 3),
        None,
        "one project",
    )
    assert project.to_dict()["ci_low"] is None and project.to_dict()["no_interval"] == "one project"


def test_a_bounded_continuous_mean_gets_the_studentized_beta_interval():
    y = [0.2, 0.3, 0.1, 0.5, 0.0]
    iv = stats.mean_interval(y, hit_rate=False)
    m, var = np.mean(y), np.var(y, ddof=1) / 5
    n_eff = m * (1 - m) / var * (sps.norm.ppf(0.975) / sps.t.ppf(0.975, 4)) ** 2
    assert iv.method == "beta-t" and iv.se == pytest.approx(np.sqrt(var))
    assert iv.low == pytest.approx(sps.beta.ppf(0.025, m * n_eff, n_eff - m * n_eff + 1))
    assert iv.high == pytest.approx(sps.beta.ppf(0.975, m * n_eff + 1, n_eff - m * n_eff))
    # near 0 the interval stays in [0, 1] and reaches further up than down (a t interval is
    # symmetric and would cross 0)
    assert 0 <= iv.low < m < iv.high <= 1 and iv.high - m > m - iv.low
    assert m - sps.t.ppf(0.975, 4) * np.sqrt(var) < 0


def test_an_unbounded_mean_gets_the_t_interval():
    y = [2.0, 3.0, 5.0]
    iv = stats.mean_interval(y, hit_rate=False)
    lo, hi = sps.t.interval(0.95, 2, loc=np.mean(y), scale=sps.sem(y))
    assert iv.method == "t-cr2" and (iv.low, iv.high) == (pytest.approx(lo), pytest.approx(hi))
    flat = stats.mean_interval([4.0, 4.0, 4.0], hit_rate=False)
    assert flat.low is None and flat.no_interval == "no spread"


def test_intervals_of_many_rows_are_those_of_each_row():
    rng = np.random.default_rng(3)
    rows = rng.random((5, 9))
    clusters = [i // 3 for i in range(9)]
    together = stats.mean_intervals(rows, clusters, hit_rate=False)
    assert together == [stats.mean_interval(r.tolist(), clusters, hit_rate=False) for r in rows]


def test_trial_summary_is_over_one_task_set_and_monotone():
    # task x: 3 trials, 2 hits; task y: 3 trials, 0 hits; task z: 2 trials, 2 hits (left out:
    # fewer than K = 3 attempts)
    s = stats.trial_summary({"x": [1, 1, 0], "y": [0, 0, 0], "z": [1, 1]}, 3)
    assert s["n"] == 2 and s["n@1"] == s["n@2"] == s["n@3"] == 2
    assert s["pass@1"] == pytest.approx((2 / 3 + 0) / 2, abs=1e-6)
    assert s["pass@2"] == pytest.approx((1 + 0) / 2, abs=1e-6)  # x: 1 - C(1,2)/C(3,2) = 1
    assert s["pass^2"] == pytest.approx((1 / 3 + 0) / 2, abs=1e-6)
    assert s["pass@3"] == 0.5 and s["pass^3"] == 0.0
    assert s["consistency"] == 0.5 and s["n_consistency"] == 2


def test_unequal_trials_never_make_pass_hat_k_rise():
    """The issue's crafted run: pass^2 = 0.667 and pass^3 = 1.000 when pass^3 averaged over the
    one task with three attempts."""
    per_task = {"a": [1, 1, 1], "b": [1, 0], "c": [1, 1]}
    s = stats.trial_summary(per_task, 3)
    assert s["n"] == 1
    for k in (1, 2):
        assert s[f"pass@{k}"] <= s[f"pass@{k + 1}"]
        assert s[f"pass^{k}"] >= s[f"pass^{k + 1}"]
    rng = np.random.default_rng(0)
    for _ in range(200):
        tasks = {i: rng.integers(0, 2, size=rng.integers(1, 6)).tolist() for i in range(8)}
        s = stats.trial_summary(tasks, 5)
        at = [s[f"pass@{k}"] for k in range(1, 6)]
        hat = [s[f"pass^{k}"] for k in range(1, 6)]
        if s["n"]:
            assert at == sorted(at) and hat == sorted(hat, reverse=True)
        else:
            assert at == hat == [None] * 5


def test_no_zero_width_interval_from_float_noise_or_balanced_projects():
    """Three tasks of iou 0.4 read 0.400 [0.40, 0.40] before (a variance of 1e-33 from float
    rounding); two projects alike in their means gave a CR2 variance of 0."""
    same = stats.mean_interval([0.4, 0.4, 0.4], hit_rate=False)
    assert same.se == 0.0 and same.low < 0.1 and same.high > 0.9
    balanced = stats.mean_interval([0.2, 0.6, 0.2, 0.6], ["a", "a", "b", "b"], hit_rate=False)
    independent = stats.mean_interval([0.2, 0.6, 0.2, 0.6], hit_rate=False)
    assert balanced.high - balanced.low >= independent.high - independent.low > 0.5
