"""Metrics under uncertain labels (exact E[DCG], Monte-Carlo NDCG/ERR) and the tie-sensitivity report,
checked against brute-force enumeration of every label assignment and every tie order."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ltr.core.errors import MetricError
from ltr.metrics import evaluate
from ltr.metrics.uncertain import expected_dcg, monte_carlo_metrics, sample_labels, tie_sensitivity


def tiny_case(seed: int, n_grades: int = 3):
    rng = np.random.default_rng(seed)
    sizes = np.array([1, 3, 4, 2])
    offsets = np.r_[0, np.cumsum(sizes)]
    n = offsets[-1]
    probs = rng.dirichlet(np.full(n_grades, 0.7), size=n)
    probs[rng.random(n) < 0.3] = np.eye(n_grades)[rng.integers(0, n_grades)]  # some certain labels
    scores = rng.integers(0, 3, n) / 2.0  # ties
    docno = np.array([f"d{j:02d}" for j in rng.permutation(n)])
    return probs, scores, offsets, docno


def enumerate_truth(name, probs, scores, offsets, **conv):
    """Per query: E[metric] over every label assignment, conditional on the query being defined."""
    out = []
    for q in range(len(offsets) - 1):
        a, b = offsets[q], offsets[q + 1]
        num = den = 0.0
        for labels in itertools.product(range(probs.shape[1]), repeat=b - a):
            p = float(np.prod(probs[np.arange(a, b), labels]))
            if p == 0.0:
                continue
            v = evaluate(name, list(labels), scores[a:b], [0, b - a], **conv)[name][0]
            if not np.isnan(v):
                num += p * v
                den += p
        out.append(num / den if den else np.nan)
    return np.array(out)


def naive_orders(scores, docno, ties):
    """Every ranked order (row indices) the tie convention allows, each equally likely."""
    rows = range(len(scores))
    if ties == "stable":
        return [sorted(rows, key=lambda i: -scores[i])]
    if ties == "docno_desc":
        return [sorted(sorted(rows, key=lambda i: docno[i], reverse=True), key=lambda i: -scores[i])]
    # average: every permutation that sorts the scores descending
    return [
        p
        for p in itertools.permutations(rows)
        if all(scores[i] >= scores[j] for i, j in itertools.pairwise(p))
    ]


@pytest.mark.parametrize("ties", ["stable", "average", "docno_desc"])
@pytest.mark.parametrize("k", [None, 2])
@pytest.mark.parametrize("gain", ["exp2", "linear"])
def test_expected_dcg_is_exact(ties, k, gain):
    """Against a naive loop: every label assignment x every allowed order, DCG written out by hand."""
    probs, scores, offsets, docno = tiny_case(1)
    name = "dcg" if k is None else f"dcg@{k}"
    got = expected_dcg(name, probs, scores, offsets, ties=ties, gain=gain, docno=docno)
    g = (lambda lab: 2.0**lab - 1.0) if gain == "exp2" else float
    want = []
    for q in range(len(offsets) - 1):
        a, b = offsets[q], offsets[q + 1]
        orders = naive_orders(list(scores[a:b]), list(docno[a:b]), ties)
        total = 0.0
        for labels in itertools.product(range(3), repeat=b - a):
            p = float(np.prod(probs[np.arange(a, b), labels]))
            dcgs = [sum(g(labels[i]) / np.log2(r + 2) for r, i in enumerate(o[:k])) for o in orders]
            total += p * sum(dcgs) / len(dcgs)
        want.append(total)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    if ties == "average":
        stable = expected_dcg(name, probs, scores, offsets, ties="stable", gain=gain)
        assert np.abs(stable - got).max() > 1e-3  # the data has ties that matter


def test_monte_carlo_interval_covers_enumerated_truth():
    probs, scores, offsets, _ = tiny_case(2)
    names = ["ndcg", "ndcg@2", "err", "map"]
    est = monte_carlo_metrics(names, probs, scores, offsets, n_samples=4000, seed=11, confidence=0.999)
    for name in names:
        truth = enumerate_truth(name, probs, scores, offsets)
        low, high = est[name].interval()
        ok = ~np.isnan(truth)
        assert np.all((low[ok] <= truth[ok]) & (truth[ok] <= high[ok])), (name, low, truth, high)
        assert np.all(est[name].stderr[ok] < 0.02)


def test_monte_carlo_mean_interval_covers_truth_and_is_seeded():
    probs, scores, offsets, _ = tiny_case(3)
    truth = enumerate_truth("ndcg@3", probs, scores, offsets, no_relevant="zero").mean()
    a = monte_carlo_metrics("ndcg@3", probs, scores, offsets, n_samples=3000, seed=5, no_relevant="zero")[
        "ndcg@3"
    ]
    assert a.mean_low <= truth <= a.mean_high
    assert a.mean_high - a.mean_low < 0.03
    b = monte_carlo_metrics("ndcg@3", probs, scores, offsets, n_samples=3000, seed=5, no_relevant="zero")[
        "ndcg@3"
    ]
    c = monte_carlo_metrics("ndcg@3", probs, scores, offsets, n_samples=3000, seed=6, no_relevant="zero")[
        "ndcg@3"
    ]
    np.testing.assert_array_equal(a.values, b.values)
    assert a.mean != c.mean


def test_monte_carlo_defined_fraction_under_skip():
    # one query, two documents each relevant with probability 0.5: defined with probability 3/4
    probs = np.array([[0.5, 0.5], [0.5, 0.5]])
    est = monte_carlo_metrics("ndcg", probs, [2.0, 1.0], [0, 2], n_samples=4000, seed=3)["ndcg"]
    assert est.defined[0] == pytest.approx(0.75, abs=0.03)
    assert est.values[0] == pytest.approx((2 + 1 / np.log2(3)) / 3, abs=0.02)


def test_sample_labels_frequencies():
    probs = np.array([[0.2, 0.3, 0.5]] * 20000)
    labels = sample_labels(probs, np.random.default_rng(0))
    np.testing.assert_allclose(
        np.bincount(labels.astype(int), minlength=3) / 20000, [0.2, 0.3, 0.5], atol=0.015
    )


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: expected_dcg("dcg", [[0.5, 0.4]], [1.0], [0, 1]), r"label_probs\[0\] sums to 0.9"),
        (
            lambda: expected_dcg("dcg", [[1.0, 0.0]], [1.0, 2.0], [0, 2]),
            "label_probs has 1 rows but scores has 2",
        ),
        (lambda: expected_dcg("ndcg", [[1.0]], [1.0], [0, 1]), "use monte_carlo_metrics"),
        (
            lambda: expected_dcg("dcg", [[1.0]], [1.0], [0, 1], ties="pessimistic"),
            "does not look at the labels",
        ),
        (
            lambda: monte_carlo_metrics("ndcg", [[1.0]], [1.0], [0, 1], n_samples=1),
            r"n_samples: must be in \[2, inf\], got 1",
        ),
        (
            lambda: monte_carlo_metrics("ndcg", [[1.0]], [1.0], [0, 1], n_samples=10.5),
            "n_samples: expected an integer, got 10.5",
        ),
        (lambda: monte_carlo_metrics(3, [[1.0]], [1.0], [0, 1]), "names must be a metric name"),
        (lambda: monte_carlo_metrics([], [[1.0]], [1.0], [0, 1]), "at least one metric name"),
        (
            lambda: monte_carlo_metrics("ndcg", [[1.0]], [1.0], [0, 1], confidence=1.5),
            r"confidence: must be in \(0.0, 1.0\), got 1.5",
        ),
        (lambda: tie_sensitivity("ndcg", [1], [1.0], [0, 1], ties="stable"), "do not pass ties"),
        (lambda: tie_sensitivity("ndcg", [1], [1.0, 0.5], [0, 2]), "labels has 1 entries but scores has 2"),
        (lambda: tie_sensitivity("ndcg", [1, -1], [1.0, 0.5], [0, 2]), "labels must be >= 0"),
        (lambda: expected_dcg("dcg", [[1.0], [1.0]], [1.0, np.nan], [0, 2]), "scores must be finite"),
        (lambda: expected_dcg("dcg", [1.0, 1.0], [1.0, 0.5], [0, 2]), "shape \\(n_docs, n_grades\\)"),
        (lambda: expected_dcg("dcg", [[1.5, -0.5]], [1.0], [0, 1]), "finite and >= 0"),
        (lambda: expected_dcg("dcg@0", [[1.0]], [1.0], [0, 1]), "cutoff k must be >= 1"),
        (
            lambda: monte_carlo_metrics("ndcg", [[1.0]], [1.0], [0, 1], seed=-1),
            r"seed: must be in \[0, inf\], got -1",
        ),
        (
            lambda: monte_carlo_metrics("ndcg", [[1.0]], [1.0], [0, 1], seed="x"),
            "seed: expected an integer, got 'x'",
        ),
        (
            lambda: monte_carlo_metrics("ndcg", [[1.0]], [1.0], [0, 1], confidence="x"),
            "confidence: expected a number, got 'x'",
        ),
        (lambda: monte_carlo_metrics("ndcg", [[1.0]], [1.0, 2.0], [0, 2]), "label_probs has 1 rows"),
    ],
)
def test_errors(call, match):
    with pytest.raises(MetricError, match=match):
        call()


# ----------------------------------------------------------------------------- tie sensitivity


def test_tie_sensitivity_against_naive_counts():
    rng = np.random.default_rng(4)
    sizes = rng.integers(1, 12, 200)
    offsets = np.r_[0, np.cumsum(sizes)]
    labels = rng.integers(0, 4, offsets[-1])
    scores = rng.integers(0, 6, offsets[-1]).astype(float)
    k = 5
    report = tie_sensitivity(f"ndcg@{k}", labels, scores, offsets)
    in_top = crossing = 0
    for q in range(len(sizes)):
        s = np.sort(scores[offsets[q] : offsets[q + 1]])[::-1]
        top, rest = s[:k], s[k:]
        crosses = len(top) == k and len(rest) > 0 and top[-1] == rest[0]
        crossing += crosses
        in_top += crosses or len(np.unique(top)) < len(top)
    assert (report.n_queries, report.n_ties_in_top_k, report.n_ties_crossing_k) == (200, in_top, crossing)
    for ties in ("pessimistic", "average", "optimistic"):
        v = evaluate(f"ndcg@{k}", labels, scores, offsets, ties=ties)[f"ndcg@{k}"]
        assert getattr(report, ties) == pytest.approx(np.nanmean(v), abs=1e-15)
    assert report.pessimistic < report.average < report.optimistic
    assert report.spread == pytest.approx(report.optimistic - report.pessimistic)


def test_tie_sensitivity_bare_name_uses_the_preset_cutoff():
    # xgboost reads a bare "ndcg" as ndcg@32: a tie group at ranks 32-33 crosses that cutoff
    scores = np.r_[np.arange(40.0, 9.0, -1.0), [5.0, 5.0], np.zeros(7)]  # 31 distinct, a pair, 7 tied at 0
    labels = np.r_[np.zeros(31), [2, 0], np.ones(7)]
    r = tie_sensitivity("ndcg", labels, scores, [0, 40], preset="xgboost")
    assert (r.k, r.n_ties_in_top_k, r.n_ties_crossing_k) == (32, 1, 1)
    whole = tie_sensitivity("ndcg", labels, scores, [0, 40])  # ltr: whole list, both groups inside
    assert (whole.k, whole.n_ties_in_top_k, whole.n_ties_crossing_k) == (None, 1, 0)


def test_tie_sensitivity_without_ties_has_zero_spread():
    labels, scores, offsets = [2, 0, 1, 1, 0], [0.9, 0.5, 0.1, 0.3, 0.2], [0, 3, 5]
    r = tie_sensitivity("err@10", labels, scores, offsets)
    assert (r.n_ties_in_top_k, r.n_ties_crossing_k, r.spread) == (0, 0, 0.0)
