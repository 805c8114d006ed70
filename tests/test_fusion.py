"""Per-query normalisation and rank fusion: against naive per-query loops, hand-checked cases and ranx."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import rankdata

from ltr.core.errors import ConfigError, DataError, LtrError
from ltr.models.ensembles.fusion import (
    borda_fusion,
    descending_ranks,
    fuse,
    normalize_scores,
    reciprocal_rank_fusion,
    weighted_sum,
)


def random_lists(seed: int, n_queries: int = 40, n_members: int = 3, tied: bool = False):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 30, n_queries)
    offsets = np.r_[0, np.cumsum(sizes)]
    S = rng.normal(size=(offsets[-1], n_members))
    if tied:
        S = np.round(S, 0)  # many ties
    return S, offsets


# --- naive references: one query at a time, textbook formulas -----------------------------------


def naive_normalize(s: np.ndarray, offsets: np.ndarray, method: str) -> np.ndarray:
    out = np.empty_like(s)
    for a, b in zip(offsets[:-1], offsets[1:], strict=True):
        q = s[a:b]
        if method == "zscore":
            out[a:b] = (q - q.mean()) / max(q.std(), 1e-9)
        elif method == "minmax":
            out[a:b] = (q - q.min()) / max(q.max() - q.min(), 1e-9)
        elif method == "rank":
            out[a:b] = 1.0 - (rankdata(-q, method="average") - 1.0) / len(q)
        else:
            out[a:b] = q
    return out


def naive_ranks(s: np.ndarray, offsets: np.ndarray, ties: str) -> np.ndarray:
    out = np.empty_like(s)
    for a, b in zip(offsets[:-1], offsets[1:], strict=True):
        out[a:b] = rankdata(-s[a:b], method="average" if ties == "average" else "ordinal")
    return out


@pytest.mark.parametrize("tied", [False, True])
@pytest.mark.parametrize("ties", ["average", "first"])
def test_descending_ranks_match_scipy_per_query(tied, ties):
    S, offsets = random_lists(1, tied=tied)
    np.testing.assert_array_equal(
        descending_ranks(S[:, 0], offsets, ties=ties), naive_ranks(S[:, 0], offsets, ties)
    )


@pytest.mark.parametrize("tied", [False, True])
@pytest.mark.parametrize("method", ["zscore", "minmax", "rank", "none"])
def test_normalize_matches_naive_loop(method, tied):
    S, offsets = random_lists(2, tied=tied)
    got = normalize_scores(S, offsets, method)
    for j in range(S.shape[1]):
        np.testing.assert_allclose(
            got[:, j], naive_normalize(S[:, j], offsets, method), rtol=1e-12, atol=1e-12
        )


def test_normalize_degenerate_queries():
    offsets = np.array([0, 1, 4, 4, 6])  # a single doc, three equal scores, an empty query, two docs
    s = np.array([5.0, 2.0, 2.0, 2.0, 1.0, 3.0])
    assert normalize_scores(s, offsets, "zscore").tolist() == [0.0, 0.0, 0.0, 0.0, -1.0, 1.0]
    assert normalize_scores(s, offsets, "minmax").tolist() == [0.0, 0.0, 0.0, 0.0, 0.0, 1.0]
    np.testing.assert_allclose(
        normalize_scores(s, offsets, "rank"), [1.0, 2 / 3, 2 / 3, 2 / 3, 0.5, 1.0], rtol=1e-15
    )


def test_rrf_and_borda_hand_checked():
    # one query, docs a b c d; member 1 ranks a>b>c>d, member 2 ranks c>a>d>b
    S = np.array([[4.0, 3.0], [3.0, 1.0], [2.0, 4.0], [1.0, 2.0]])
    offsets = np.array([0, 4])
    rrf = reciprocal_rank_fusion(S, offsets)  # k = 60
    expected = [1 / 61 + 1 / 62, 1 / 62 + 1 / 64, 1 / 63 + 1 / 61, 1 / 64 + 1 / 63]
    np.testing.assert_allclose(rrf, expected, rtol=1e-15)
    assert np.argsort(-rrf).tolist() == [0, 2, 1, 3]  # a, c, b, d
    assert borda_fusion(S, offsets).tolist() == [4 + 3, 3 + 1, 2 + 4, 1 + 2]
    # weights scale each member's contribution
    np.testing.assert_allclose(
        reciprocal_rank_fusion(S, offsets, k=0, weights=[2.0, 0.0]), [2 / 1, 2 / 2, 2 / 3, 2 / 4]
    )


def test_fusion_ties_get_average_rank_and_are_row_order_free():
    S = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 2.0]])
    offsets = np.array([0, 3])
    # member 1: rows 0 and 1 tie for ranks 1-2 → 1.5 each
    np.testing.assert_allclose(
        reciprocal_rank_fusion(S, offsets, k=0), [1 / 1.5 + 1 / 3, 1 / 1.5 + 1 / 2, 1 / 3 + 1]
    )
    perm = np.array([1, 0, 2])
    np.testing.assert_allclose(borda_fusion(S[perm], offsets), borda_fusion(S, offsets)[perm])


def test_fusion_matches_naive_loop_on_random_lists():
    S, offsets = random_lists(3, tied=True)
    w = np.array([0.5, 1.0, 2.0])
    rrf = np.zeros(S.shape[0])
    borda = np.zeros(S.shape[0])
    for a, b in zip(offsets[:-1], offsets[1:], strict=True):
        for j in range(S.shape[1]):
            r = rankdata(-S[a:b, j], method="average")
            rrf[a:b] += w[j] / (60 + r)
            borda[a:b] += w[j] * (b - a - r + 1)
    np.testing.assert_allclose(reciprocal_rank_fusion(S, offsets, weights=w), rrf, rtol=1e-13)
    np.testing.assert_allclose(borda_fusion(S, offsets, weights=w), borda, rtol=1e-13)
    np.testing.assert_allclose(
        weighted_sum(S, offsets, weights=w, normalization="zscore"),
        sum(w[j] * naive_normalize(S[:, j], offsets, "zscore") for j in range(3)),
        rtol=1e-12,
    )


def _ranx_runs(S: np.ndarray, offsets: np.ndarray):
    from ranx import Run

    runs = []
    for j in range(S.shape[1]):
        d = {
            f"q{q}": {f"d{i}": float(S[i, j]) for i in range(offsets[q], offsets[q + 1])}
            for q in range(len(offsets) - 1)
        }
        runs.append(Run.from_dict(d))
    return runs


def _from_ranx(run, n_docs: int, offsets: np.ndarray) -> np.ndarray:
    out = np.full(n_docs, np.nan)
    for q in range(len(offsets) - 1):
        for doc, value in run[f"q{q}"].items():
            out[int(doc[1:])] = value
    return out


@pytest.mark.slow  # ranx compiles its numba kernels on first use (~50 s on a busy 2-core machine)
@pytest.mark.parametrize(
    ("ours", "norm", "method", "params"),
    [
        ({"method": "rrf", "k": 60}, None, "rrf", {"k": 60}),
        ({"method": "rrf", "k": 10}, None, "rrf", {"k": 10}),
        ({"method": "borda"}, None, "bordafuse", {}),
        (
            {"method": "mean", "normalization": "minmax", "weights": [0.2, 0.3, 0.5]},
            "min-max",
            "wsum",
            {"weights": [0.2, 0.3, 0.5]},
        ),
        (
            {"method": "mean", "normalization": "zscore", "weights": [0.2, 0.3, 0.5]},
            "zmuv",
            "wsum",
            {"weights": [0.2, 0.3, 0.5]},
        ),
        (
            {"method": "mean", "normalization": "rank", "weights": [0.2, 0.3, 0.5]},
            "rank",
            "wsum",
            {"weights": [0.2, 0.3, 0.5]},
        ),
    ],
)
def test_fusion_matches_ranx(ours, norm, method, params):
    ranx = pytest.importorskip("ranx")
    S, offsets = random_lists(4, n_queries=15)  # continuous scores: no ties, so ranx's order is unique
    expected = _from_ranx(
        ranx.fuse(_ranx_runs(S, offsets), norm=norm, method=method, params=params), len(S), offsets
    )
    ours = dict(ours)
    got = fuse(S, offsets, ours.pop("method"), **ours)
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)


def test_bad_inputs_raise_clear_errors():
    S, offsets = random_lists(5)
    with pytest.raises(ConfigError, match="normalization"):
        normalize_scores(S[:, 0], offsets, "softmax")
    with pytest.raises(ConfigError, match="one per member"):
        fuse(S, offsets, "rrf", weights=[1.0])
    with pytest.raises(ConfigError, match="fusion method"):
        fuse(S, offsets, "condorcet")
    with pytest.raises(LtrError, match="end at the number of documents"):
        fuse(S, offsets[:-1], "rrf")
    bad = S.copy()
    bad[7, 1] = np.nan
    with pytest.raises(DataError, match="row 7"):
        fuse(bad, offsets, "borda")
    with pytest.raises(ConfigError, match="k"):
        reciprocal_rank_fusion(S, offsets, k=-1)


def test_fusion_and_blend_arguments_are_checked_by_the_one_checker():
    from ltr.models.ensembles.blend import coordinate_ascent, query_folds

    S = np.array([[3.0, 0.1], [2.0, 0.3], [1.0, 0.2]])
    offsets = np.array([0, 3])
    np.testing.assert_array_equal(
        reciprocal_rank_fusion(S, offsets, k=np.int64(60)), reciprocal_rank_fusion(S, offsets, k=60.0)
    )
    for bad in (-1, True, "60"):
        with pytest.raises(ConfigError, match="rrf k: "):
            reciprocal_rank_fusion(S, offsets, k=bad)
    assert np.bincount(query_folds(10, np.int64(3), seed=1)).tolist() == [4, 3, 3]
    with pytest.raises(ConfigError, match=r"stack.n_folds: must be in \[2, inf\], got 1"):
        query_folds(10, 1, seed=1)
    y = np.array([1, 0, 0])
    fit = coordinate_ascent(S, y, offsets, n_restarts=np.int64(2), max_steps=np.int32(3), seed=0)
    assert len(fit.restart_scores) == 2
    for kwargs, message in (
        ({"max_steps": True}, r"blend.max_steps: expected an integer, got True"),
        ({"n_restarts": 0}, r"blend.n_restarts: must be in \[1, inf\], got 0"),
        ({"step_scale": 1.0}, r"blend.step_scale: must be in \(1.0, inf\], got 1.0"),
        ({"tolerance": -1e-9}, r"blend.tolerance: must be in \[0.0, inf\]"),
    ):
        with pytest.raises(ConfigError, match=message):
            coordinate_ascent(S, y, offsets, **kwargs)


def _ranked_labels_descend(X: np.ndarray, w: np.ndarray, labels: np.ndarray, offsets: np.ndarray) -> bool:
    """Whether ``X @ w`` puts every query's documents in non-increasing label order (NDCG = 1 for any gain)."""
    s = X @ w
    return all(
        np.all(np.diff(labels[a:b][np.argsort(-s[a:b], kind="stable")]) <= 0)
        for a, b in zip(offsets[:-1], offsets[1:], strict=True)
    )


def test_blend_returns_the_weights_of_its_best_member_when_nothing_beats_it():
    """Member 0 ranks both queries perfectly (NDCG 1, nothing can do strictly better), member 1 reversed:
    the blend's weights must rank like member 0 — the score it reports is that of the weights it returns.

    Kills mutant #21 (the first restart from the *worst* member: no restart strictly beats the best member's
    1.0, so the worst member's one-hot weights were returned with the best member's score).
    """
    from ltr.models.ensembles.blend import coordinate_ascent

    labels = np.array([2.0, 1.0, 0.0, 0.0, 1.0, 2.0])
    offsets = np.array([0, 3, 6])
    X = np.column_stack([labels, -labels])
    fit = coordinate_ascent(X, labels, offsets, metric="ndcg@10", seed=0)
    assert fit.score == 1.0 and fit.member_scores[0] == 1.0 and fit.member_scores[1] < 1.0
    assert _ranked_labels_descend(X, fit.weights, labels, offsets)


def test_blend_moves_a_zero_weight_off_zero_in_one_restart():
    """The module example with one restart: it starts at member 0 alone (w = [1, 0]); each member is right on
    one query, and any w_1 in (w_0/2, 2·w_0) ranks both relevant documents first (by hand: query 1 scores
    w_0 vs 0.5·w_1, query 2 w_1 vs 0.5·w_0), so the line search along the zero weight must reach NDCG 1.

    Kills mutant #22 (without the ``origin != 0`` guard a zero weight's step is step_base·|0| = 0: stuck at 0).
    """
    from ltr.models.ensembles.blend import coordinate_ascent

    labels = np.array([1.0, 0.0, 1.0, 0.0])
    offsets = np.array([0, 2, 4])
    X = np.array([[1.0, 0.0], [0.0, 0.5], [0.0, 1.0], [0.5, 0.0]])
    fit = coordinate_ascent(X, labels, offsets, metric="ndcg@10", n_restarts=1, seed=0)
    assert fit.score == 1.0 and 0.5 * fit.weights[0] < fit.weights[1] < 2 * fit.weights[0]
    assert _ranked_labels_descend(X, fit.weights, labels, offsets)
