"""Metric agreement: Kendall's τ and Pearson/Spearman against scipy, τ_AP against a brute-force
implementation of Yilmaz et al.'s definition, discriminative power against ltr.stats' tests."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd
import pytest
from helpers import captured_figures
from scipy import stats

from ltr.analysis.agreement import kendall_tau, metric_agreement, tau_ap
from ltr.core.errors import ConfigError, DataError
from ltr.stats import paired_t_test, randomization_test


def brute_tau_ap(reference: dict[str, float], other: dict[str, float]) -> float:
    """τ_AP written from the paper: list systems by ``other``; for each position i ≥ 2 the share of the
    systems above it that ``reference`` also puts above it; average, rescale to [−1, 1]."""
    listed = sorted(other, key=lambda s: -other[s])
    n = len(listed)
    acc = 0.0
    for i in range(1, n):
        here = listed[i]
        correct = sum(1 for s in listed[:i] if reference[s] > reference[here])
        acc += correct / i
    return 2.0 * acc / (n - 1) - 1.0


def test_tau_ap_hand_example_swap_at_top_costs_more() -> None:
    # a>b>c>d reference. Swap at top: C = 0, 2/2, 3/3 → 2/3·2 − 1 = 1/3. Swap at bottom: 1, 1, 2/3 → 7/9.
    assert tau_ap([4, 3, 2, 1], [3, 4, 2, 1]) == pytest.approx(1 / 3)
    assert tau_ap([4, 3, 2, 1], [4, 3, 1, 2]) == pytest.approx(7 / 9)
    assert tau_ap([4, 3, 2, 1], [4, 3, 2, 1]) == pytest.approx(1.0)
    assert tau_ap([4, 3, 2, 1], [1, 2, 3, 4]) == pytest.approx(-1.0)
    # Kendall's τ does not see the difference
    assert kendall_tau([4, 3, 2, 1], [3, 4, 2, 1]) == kendall_tau([4, 3, 2, 1], [4, 3, 1, 2])


@pytest.mark.parametrize("seed", range(20))
def test_tau_ap_matches_brute_force_and_tau_matches_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 12))
    ref, oth = rng.random(n), rng.random(n)
    names = [f"s{i}" for i in range(n)]
    expected = brute_tau_ap(dict(zip(names, ref, strict=True)), dict(zip(names, oth, strict=True)))
    assert tau_ap(ref, oth) == pytest.approx(expected, abs=1e-12)
    assert kendall_tau(ref, oth) == pytest.approx(stats.kendalltau(ref, oth).statistic, abs=1e-12)


def test_kendall_tau_with_ties_is_tau_b_like_scipy() -> None:
    x, y = [1, 2, 2, 3, 4, 4], [2, 1, 3, 3, 5, 4]
    assert kendall_tau(x, y) == pytest.approx(stats.kendalltau(x, y).statistic)
    assert np.isnan(kendall_tau([1, 1, 1], [1, 2, 3]))


def _frames(n_systems: int = 5, n_queries: int = 60, seed: int = 0) -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    q = [f"q{i}" for i in range(n_queries)]
    difficulty = rng.random(n_queries)
    out = {}
    for k in range(n_systems):
        base = np.clip(difficulty + 0.04 * k + rng.normal(0, 0.1, n_queries), 0, 1)
        out[f"sys{k}"] = pd.DataFrame(
            {
                "ndcg@10": base,
                "err@10": np.clip(base**2 + rng.normal(0, 0.05, n_queries), 0, 1),
                "rr": (rng.random(n_queries) < base).astype(float),
            },
            index=q,
        )
    return out


def test_agreement_matrices_match_scipy_on_pooled_values() -> None:
    frames = _frames()
    agr = metric_agreement(frames, B=300, test_B=2000, seed=3)
    metrics = list(agr.metrics)
    means = {m: [frames[s][m].mean() for s in frames] for m in metrics}
    pooled = {m: np.concatenate([frames[s][m].to_numpy() for s in frames]) for m in metrics}
    for i, a in enumerate(metrics):
        for j, b in enumerate(metrics):
            if i == j:
                continue
            assert agr.kendall_tau[i, j] == pytest.approx(stats.kendalltau(means[a], means[b]).statistic)
            names = list(frames)
            assert agr.tau_ap[i, j] == pytest.approx(
                brute_tau_ap(dict(zip(names, means[a], strict=True)), dict(zip(names, means[b], strict=True)))
            )
            assert agr.pearson[i, j] == pytest.approx(stats.pearsonr(pooled[a], pooled[b]).statistic)
            assert agr.spearman[i, j] == pytest.approx(stats.spearmanr(pooled[a], pooled[b]).statistic)
            for est, (low, high) in ((agr.pearson, agr.pearson_ci), (agr.spearman, agr.spearman_ci)):
                assert low[i, j] < est[i, j] < high[i, j]


def test_correlation_ci_width_agrees_with_scipy_bootstrap_over_queries() -> None:
    frames = _frames(n_systems=1 + 1, n_queries=200, seed=5)
    agr = metric_agreement(frames, metrics=["ndcg@10", "err@10"], B=2000, test_B=100, seed=1)
    systems = list(frames)

    def pearson_over(idx: np.ndarray) -> float:
        a = np.concatenate([frames[s]["ndcg@10"].to_numpy()[idx] for s in systems])
        b = np.concatenate([frames[s]["err@10"].to_numpy()[idx] for s in systems])
        return float(np.corrcoef(a, b)[0, 1])

    res = stats.bootstrap(
        (np.arange(200),),
        pearson_over,
        vectorized=False,
        n_resamples=2000,
        method="percentile",
        random_state=9,
    )
    ours = agr.pearson_ci[1][0, 1] - agr.pearson_ci[0][0, 1]
    theirs = res.confidence_interval.high - res.confidence_interval.low
    assert ours == pytest.approx(theirs, rel=0.2)
    assert agr.pearson_ci[0][0, 1] == pytest.approx(res.confidence_interval.low, abs=0.02)


def test_same_seed_same_cis_and_other_seed_differs() -> None:
    frames = _frames(n_queries=40)
    a = metric_agreement(frames, B=200, test_B=500, seed=4)
    b = metric_agreement(frames, B=200, test_B=500, seed=4)
    c = metric_agreement(frames, B=200, test_B=500, seed=5)
    np.testing.assert_array_equal(a.pearson_ci[0], b.pearson_ci[0])
    assert not np.array_equal(a.pearson_ci[0], c.pearson_ci[0])


@pytest.mark.parametrize("test", ["randomization", "t"])
def test_discriminative_power_counts_pairs_below_alpha(test: str) -> None:
    frames = _frames(n_queries=30)
    agr = metric_agreement(frames, B=50, test_B=3000, seed=2, test=test, alpha=0.05)
    names = list(frames)
    assert agr.pairs == tuple(combinations(names, 2))
    for i, m in enumerate(agr.metrics):
        ps = []
        for a, b in combinations(names, 2):
            x, y = frames[a][m].to_numpy(), frames[b][m].to_numpy()
            r = paired_t_test(x, y) if test == "t" else randomization_test(x, y, B=3000, seed=2)
            ps.append(r.pvalue)
        np.testing.assert_allclose(agr.pvalues[i], ps)
        assert agr.discriminative_power[m] == pytest.approx(np.mean(np.array(ps) < 0.05))
        np.testing.assert_array_equal(agr.asl_curves()[m], np.sort(ps))
    # a coin-flip metric separates fewer pairs than graded NDCG on these systems
    assert agr.discriminative_power["ndcg@10"] > agr.discriminative_power["rr"]


def test_a_pair_whose_asl_equals_alpha_is_not_significant() -> None:
    """Sakai's discriminative power counts ASL < α, strictly. Three queries on which system y beats x by
    the same 0.25: of the 2³ sign flips only all-plus and all-minus reach |mean| = 0.25, so the exact
    two-sided ASL is 2/8 = 0.25 (scipy's exact paired permutation test agrees); at α = 0.25 the pair is
    not significant.

    Kills mutant #10 (``discriminative_power`` counting ``p <= alpha``).
    """
    q = ["q1", "q2", "q3"]
    x = pd.DataFrame({"a": [0.25, 0.5, 0.0], "b": [0.1, 0.9, 0.4]}, index=q)
    y = pd.DataFrame({"a": [0.5, 0.75, 0.25], "b": [0.3, 0.2, 0.6]}, index=q)
    exact = stats.permutation_test(
        (x["a"].to_numpy(), y["a"].to_numpy()),
        lambda u, v, axis: np.mean(u - v, axis=axis),
        permutation_type="samples",
        vectorized=True,
    ).pvalue
    assert exact == pytest.approx(0.25)
    agr = metric_agreement({"x": x, "y": y}, alpha=0.25, B=20, test_B=1000)
    assert agr.pvalues[0, 0] == pytest.approx(0.25)
    assert agr.discriminative_power["a"] == 0.0


def test_nan_queries_are_dropped_for_every_metric() -> None:
    frames = _frames(n_queries=20)
    frames["sys1"].loc["q3", "err@10"] = np.nan
    agr = metric_agreement(frames, B=20, test_B=100)
    assert (agr.n_queries, agr.n_dropped, agr.n_skipped_by_all) == (19, 1, 0)
    assert "(1 not scored by every system)" in agr.to_markdown()
    for system in frames:  # every system skips q5 under ndcg@10: the metric left it out
        frames[system].loc["q5", "ndcg@10"] = np.nan
    agr = metric_agreement(frames, B=20, test_B=100)
    assert (agr.n_queries, agr.n_dropped, agr.n_skipped_by_all) == (18, 2, 1)
    assert (
        "(1 skipped by every system: the metric is undefined for them, e.g. no relevant document; 1 not"
        in (agr.to_markdown())
    )


def test_lower_is_better_metric_is_ranked_reversed() -> None:
    frames = _frames(n_queries=20)
    for f in frames.values():
        f["loss"] = 1.0 - f["ndcg@10"]
    agr = metric_agreement(frames, metrics=["ndcg@10", "loss"], lower_is_better=["loss"], B=20, test_B=100)
    assert agr.kendall_tau[0, 1] == pytest.approx(1.0) and agr.tau_ap[0, 1] == pytest.approx(1.0)
    assert agr.pearson[0, 1] == pytest.approx(-1.0)


def test_markdown_lists_every_pair_and_metric() -> None:
    agr = metric_agreement(_frames(n_queries=20), B=20, test_B=100)
    text = agr.to_markdown()
    assert "| ndcg@10 | err@10 |" in text and "| err@10 | rr |" in text
    assert "Discriminative power" in text and "/10 |" in text
    assert len(agr.to_frame()) == 3


def test_bad_input_is_named() -> None:
    frames = _frames(n_queries=10)
    with pytest.raises(DataError, match="at least 2 systems"):
        metric_agreement({"only": frames["sys0"]})
    with pytest.raises(ConfigError, match="≥ 2 distinct metrics"):
        metric_agreement(frames, metrics=["ndcg@10"])
    with pytest.raises(DataError, match="no values for metric 'map'"):
        metric_agreement(frames, metrics=["ndcg@10", "map"])
    other = dict(frames)
    other["sys2"] = frames["sys2"].iloc[:5]
    with pytest.raises(DataError, match="same .* query ids"):
        metric_agreement(other)
    with pytest.raises(ConfigError, match="test"):
        metric_agreement(frames, test="wilcoxon")


def test_asl_plot_has_integer_pair_ticks(tmp_path) -> None:  # noqa: ANN001 - pytest fixture
    from ltr.report.plots import plot_asl_curves

    agr = metric_agreement(_frames(n_queries=20), B=20, test_B=100)
    with captured_figures() as captured:
        path = plot_asl_curves(agr.asl_curves(), tmp_path / "asl.png", alpha=agr.alpha)
    assert path.is_file() and path.stat().st_size > 1000
    ax = captured[0].axes[0]
    ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
    assert ticks and all(float(t).is_integer() for t in ticks)
    assert [line.get_label() for line in ax.get_lines()][:3] == list(agr.metrics)
