"""Plots are real PNGs of the data given; feature importance agrees with the engines' own numbers."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import captured_figures
from matplotlib.image import imread

from ltr.analysis.comparison import compare
from ltr.data.synthetic import generate
from ltr.models import build_ranker
from ltr.report.plots import (
    feature_importance,
    plot_difference_histogram,
    plot_feature_importance,
    plot_forest,
    plot_learning_curves,
    plot_ndcg_at_k,
)


def _curves(n_systems: int, K: int = 20) -> dict:
    k = np.arange(1, K + 1)
    return {
        f"system_{i}": (0.5 + 0.01 * k - 0.01 * i, 0.45 + 0.01 * k - 0.01 * i, 0.55 + 0.01 * k - 0.01 * i)
        for i in range(n_systems)
    }


@pytest.mark.parametrize("n_systems", [2, 5])
def test_ndcg_at_k_has_integer_k_ticks_and_one_panel_per_system_when_many(tmp_path, n_systems):
    with captured_figures() as figures:
        _png(plot_ndcg_at_k(_curves(n_systems, K=7), tmp_path / "k.png"))
    axes = figures[0].axes
    assert len(axes) == (1 if n_systems <= 3 else n_systems)
    for ax in axes:
        low, high = ax.get_xlim()
        ticks = [t for t in ax.get_xticks() if low <= t <= high]
        assert ticks and all(float(t).is_integer() for t in ticks), ticks
        assert max(ticks) <= 7 and min(ticks) >= 1
    if n_systems > 3:
        # each panel: its own band (one PolyCollection) and its system as the coloured line
        assert [ax.get_title() for ax in axes] == [f"system_{i}" for i in range(5)]
        assert all(len(ax.collections) == 1 for ax in axes)
        # the other systems drawn thin and grey for reference
        assert sum(1 for line in axes[0].get_lines() if line.get_color() == "0.75") == 4


@pytest.fixture(scope="module")
def data():
    return generate(n_queries=40, seed=3, max_docs=30)


def _png(path):
    image = imread(path)
    assert image.ndim == 3 and image.shape[0] > 200 and image.shape[1] > 400
    assert image[..., :3].std() > 0.05  # not a blank canvas
    return image


def test_each_plot_writes_a_png(tmp_path):
    rng = np.random.default_rng(0)
    _png(
        plot_learning_curves(
            {"valid": {"ndcg@10": [0.5, 0.6, 0.65]}, "train": {"ndcg@10": [0.6, 0.7, 0.8]}},
            tmp_path / "a.png",
            best_iteration=2,
        )
    )
    k = np.arange(1, 21)
    curves = {
        "a": (0.5 + 0.01 * k, 0.45 + 0.01 * k, 0.55 + 0.01 * k),
        "b": (0.4 + 0.01 * k, 0.35 + 0.01 * k, 0.45 + 0.01 * k),
    }
    _png(plot_ndcg_at_k(curves, tmp_path / "b.png"))
    _png(
        plot_difference_histogram(
            {"a": rng.normal(0.02, 0.1, 200), "b": np.r_[rng.normal(0, 0.1, 50), np.nan]},
            tmp_path / "c.png",
            metric="err@10",
            baseline="base",
        )
    )
    base = rng.random(60)
    report = compare(
        {
            "base": {"m": base},
            "x": {"m": base + 0.1 + rng.normal(0, 0.05, 60)},
            "y": {"m": base + rng.normal(0, 0.1, 60)},
        },
        baseline="base",
        query_ids=np.arange(60),
        B=500,
    )
    _png(plot_forest(report, tmp_path / "d.png"))
    _png(plot_feature_importance(np.array([0.0, 5.0, 1.0, 0.0, 3.0]), tmp_path / "e.png"))


def test_lightgbm_importance_is_the_boosters_gain(data):
    ranker = build_ranker({"name": "lambdamart", "params": {"n_trees": 10}}, seed=1, num_threads=1).fit(data)
    expected = ranker.booster_.feature_importance(importance_type="gain")
    np.testing.assert_array_equal(feature_importance(ranker), expected)
    assert expected.sum() > 0


def test_xgboost_importance_is_total_gain_by_column(data):
    ranker = build_ranker({"name": "lambdamart_xgb", "params": {"n_trees": 10}}, seed=1, num_threads=1).fit(
        data
    )
    scores = ranker.booster_.get_score(importance_type="total_gain")
    got = feature_importance(ranker, data.n_features)
    assert got.shape == (data.n_features,)
    for key, value in scores.items():
        assert got[int(key[1:])] == pytest.approx(value)
    assert np.count_nonzero(got) == len(scores)


def test_rankers_without_importance_give_none(data):
    ranker = build_ranker({"name": "feature"}, seed=1, num_threads=1).fit(data, data)
    assert feature_importance(ranker) is None


def test_one_feature_numbering_everywhere_a_user_sees_features(tmp_path):
    """docs/data.md: feature ``j`` is token ``j:v`` of a (1-based) SVMlight file. The one informative
    token ``3:`` is called f3 by the importance plot, the ``feature`` model's params/logged choice and
    the pyfunc input columns; the constant token ``5:`` is feature 5 in ``ltr.data info``."""
    from ltr.data import RankingData
    from ltr.data.info import summarize
    from ltr.data.svmlight import load_svmlight, write_svmlight
    from ltr.report.plots import top_features

    rng = np.random.default_rng(0)
    X = rng.random((400, 5)).astype(np.float32) + 0.5
    X[:, 4] = 1.0  # constant
    y = np.floor(X[:, 2] * 2.0 - 1.0).clip(0, 2).astype(int)  # the label follows column 2 only
    path = write_svmlight(RankingData(X=X, y=y, qid=np.repeat(np.arange(40), 10)), tmp_path / "f.txt")
    assert path.read_text().splitlines()[0].split()[4].startswith("3:")  # column 2 is token 3
    data = load_svmlight(path)
    summary = summarize(data)
    assert summary["constant_features"] == 1 and [list(r) for r in summary["constant_feature_ranges"]] == [
        [5, 5]
    ]
    ranker = build_ranker({"name": "lambdamart", "params": {"n_trees": 5}}, seed=1, num_threads=1).fit(data)
    assert top_features(feature_importance(ranker))[0][0] == "f3"
    best = build_ranker({"name": "feature"}, seed=1).fit(data)
    assert best.learned_choices()[0] == {"feature.id": 3, "feature.direction": "desc"}
    fixed = build_ranker({"name": "feature", "params": {"feature": 3, "direction": "desc"}}, seed=1).fit(data)
    np.testing.assert_array_equal(fixed.predict(data), X[:, 2].astype(np.float64))
    pytest.importorskip("mlflow")
    from ltr.models.pyfunc import as_frame, input_matrix

    frame = as_frame(X)
    np.testing.assert_array_equal(frame["f3"].to_numpy(), X[:, 2])
    # the pyfunc model scores column f3 as the feature model's feature 3
    np.testing.assert_array_equal(fixed.predict(input_matrix(frame, 5)), fixed.predict(data))
