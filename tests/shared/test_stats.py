"""The estimators of services/shared/stats.py against values worked by hand."""

from __future__ import annotations

import numpy as np
import pytest

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


def test_mcnemar_exact_on_a_known_table():
    # 8 pairs only A hit, 2 only B: p = 2 * P(X <= 2 | Bin(10, 1/2)) = 2 * 56 / 1024
    a = [True] * 8 + [False] * 2 + [True] * 5 + [False] * 3
    b = [False] * 8 + [True] * 2 + [True] * 5 + [False] * 3
    m = stats.mcnemar_exact(a, b)
    assert (m.both, m.only_a, m.only_b, m.neither) == (5, 8, 2, 3)
    assert m.p_value == pytest.approx(112 / 1024)
    # 0 vs 5 discordant: p = 2 / 32
    assert stats.mcnemar_exact([False] * 5, [True] * 5).p_value == pytest.approx(0.0625)
    assert stats.mcnemar_exact([True, False], [True, False]).p_value == 1.0


def test_win_loss_tie():
    assert stats.win_loss_tie([1, 0, 0.5, 1], [0, 1, 0.5, 0]) == {"win": 2, "loss": 1, "tie": 1}


def test_consistency_counts_tasks_whose_trials_agree():
    share, n = stats.consistency([[True, True], [False, False, False], [True, False], [True]])
    assert (share, n) == (pytest.approx(2 / 3), 3)
    assert stats.consistency([[True]]) == (None, 0)


def test_bootstrap_two_clusters_matches_the_exact_distribution():
    # clusters {1,1} and {0,0}: resampling two clusters gives 1, 0.5, 0 with chances 1/4,1/2,1/4
    # -> SE = sqrt(1/8) = 0.354, and the 95% interval spans [0, 1].
    iv = stats.cluster_bootstrap([1, 1, 0, 0], ["a", "a", "b", "b"])
    assert iv.mean == 0.5 and iv.n == 4 and iv.n_clusters == 2
    assert iv.se == pytest.approx(np.sqrt(1 / 8), abs=0.015)
    assert (iv.low, iv.high) == (0.0, 1.0)
    # the plain bootstrap of the same four values: SE = sqrt(p(1-p)/n) = 0.25
    plain = stats.cluster_bootstrap([1, 1, 0, 0])
    assert plain.n_clusters == 4
    assert plain.se == pytest.approx(0.25, abs=0.015)


def test_bootstrap_is_seeded_and_degenerate_cases_are_defined():
    v = [1, 0, 1, 1, 0, 0, 1]
    assert stats.cluster_bootstrap(v) == stats.cluster_bootstrap(v)
    assert stats.cluster_bootstrap(v, seed=1) != stats.cluster_bootstrap(v, seed=2)
    assert stats.cluster_bootstrap([]).mean is None
    one = stats.cluster_bootstrap([0.3, 0.5], ["p", "p"])
    assert (one.mean, one.se, one.low, one.high) == (0.4, 0.0, 0.4, 0.4)


def _width(iv: stats.Interval) -> float:
    return iv.high - iv.low


def test_clustering_widens_the_interval_on_a_clustered_set():
    # 10 projects of 10 tasks; a project's tasks all succeed or all fail.
    clusters = [f"p{i // 10}" for i in range(100)]
    values = [float((i // 10) % 2) for i in range(100)]
    plain = stats.cluster_bootstrap(values)
    clustered = stats.cluster_bootstrap(values, clusters)
    assert plain.mean == clustered.mean == 0.5
    # SE: sqrt(.25/100) = 0.05 plain against sqrt(.25/10) = 0.158 clustered
    assert plain.se == pytest.approx(0.05, abs=0.006)
    assert clustered.se == pytest.approx(0.158, abs=0.015)
    assert _width(clustered) > 2.5 * _width(plain)


def test_clustering_does_not_widen_the_interval_on_an_independent_set():
    # 20 data sets of 200 independent hits in 20 projects (labels unrelated to the values):
    # the clustered width matches the plain one on average and is never much wider.
    rng = np.random.default_rng(7)
    ratios = []
    for _ in range(20):
        values = rng.integers(0, 2, size=200).astype(float).tolist()
        clusters = rng.integers(0, 20, size=200).tolist()
        plain = stats.cluster_bootstrap(values)
        ratios.append(_width(stats.cluster_bootstrap(values, clusters)) / _width(plain))
    assert 0.85 < float(np.mean(ratios)) < 1.1
    assert max(ratios) < 1.4
    # within-project balance (each project half hits): clustering narrows, never widens
    balanced = [float(i % 2) for i in range(100)]
    by_project = [f"p{i // 10}" for i in range(100)]
    assert _width(stats.cluster_bootstrap(balanced, by_project)) < _width(
        stats.cluster_bootstrap(balanced)
    )


def test_paired_difference_resamples_tasks_together():
    a = [1, 1, 1, 0, 1, 1, 0, 1]
    b = [0, 1, 0, 0, 0, 1, 0, 0]
    iv = stats.paired_difference(a, b)
    assert iv.mean == pytest.approx(0.5)
    assert iv.low > 0  # A hits wherever B does, and more: every resample's difference is >= 0
    same = stats.paired_difference(a, a)
    assert (same.mean, same.se, same.low, same.high) == (0.0, 0.0, 0.0, 0.0)


def test_trial_summary_closed_forms():
    # task x: 3 trials, 2 hits; task y: 3 trials, 0 hits; task z: 2 trials, 2 hits
    s = stats.trial_summary({"x": [1, 1, 0], "y": [0, 0, 0], "z": [1, 1]}, 3)
    assert s["pass@1"] == pytest.approx((2 / 3 + 0 + 1) / 3, abs=1e-6)
    assert s["pass@2"] == pytest.approx((1 + 0 + 1) / 3, abs=1e-6)  # x: 1 - C(1,2)/C(3,2) = 1
    assert s["pass^2"] == pytest.approx((1 / 3 + 0 + 1) / 3, abs=1e-6)
    assert s["pass@3"] == pytest.approx(0.5) and s["n@3"] == 2  # z has fewer than 3 trials
    assert s["pass^3"] == 0.0
    assert s["consistency"] == pytest.approx(2 / 3, abs=1e-6)
