"""Click simulator: display order, click-model probabilities (checked empirically), determinism, errors."""

from __future__ import annotations

import numpy as np
import pytest

from ltr.clicks import (
    click_probabilities,
    clicks_from_config,
    examination_probabilities,
    noisy_feature_scores,
    resolve_click_config,
    simulate_clicks,
)
from ltr.core.errors import ConfigError, DataError
from ltr.data import RankingData
from ltr.data.synthetic import generate


def one_query(labels, scores):
    n = len(labels)
    return RankingData(X=np.arange(n, dtype=np.float32)[:, None], y=labels, qid=[7] * n), np.asarray(
        scores, float
    )


def test_formulas():
    np.testing.assert_allclose(
        click_probabilities(np.array([0, 1, 2, 3, 4]), epsilon=0.1, max_label=4),
        [0.1, 0.1 + 0.9 / 15, 0.1 + 0.9 * 3 / 15, 0.1 + 0.9 * 7 / 15, 1.0],
    )
    np.testing.assert_allclose(examination_probabilities(np.arange(4), eta=2.0), [1, 1 / 4, 1 / 9, 1 / 16])


def test_log_shows_top_k_in_display_order_per_session():
    data = generate(30, seed=3, max_docs=40)
    scores = np.random.default_rng(0).normal(size=data.n_docs)
    log = simulate_clicks(data, scores, top_k=5, sessions=3, seed=1)
    assert log.data.n_queries == 30 * 3
    np.testing.assert_array_equal(log.source_query, np.repeat(np.arange(30), 3))
    for s in range(log.data.n_queries):
        a, b = log.data.offsets[s], log.data.offsets[s + 1]
        q = log.source_query[s]
        qa, qb = data.offsets[q], data.offsets[q + 1]
        expected = qa + np.argsort(-scores[qa:qb], kind="stable")[:5]  # the logging ranker's top 5
        np.testing.assert_array_equal(log.source_row[a:b], expected)
        np.testing.assert_array_equal(log.position[a:b], np.arange(b - a))
    np.testing.assert_array_equal(log.data.X, data.X[log.source_row])
    assert set(np.unique(log.data.y)) <= {0.0, 1.0}


def test_pbm_click_rates_match_theta_times_attractiveness():
    data, scores = one_query([4, 0, 2, 1, 3], [5, 4, 3, 2, 1])
    log = simulate_clicks(
        data, scores, model="pbm", eta=1.0, epsilon=0.1, max_label=4, top_k=5, sessions=40_000, seed=2
    )
    rate = log.data.y.reshape(-1, 5).mean(axis=0)
    p = examination_probabilities(np.arange(5), eta=1.0) * click_probabilities(
        np.array([4, 0, 2, 1, 3]), epsilon=0.1, max_label=4
    )
    assert np.all(np.abs(rate - p) <= 4 * np.sqrt(p * (1 - p) / 40_000)), (rate, p)
    np.testing.assert_allclose(log.examination[:5], examination_probabilities(np.arange(5), eta=1.0))


def test_cascade_clicks_the_first_attractive_document_only():
    labels = np.array([1, 0, 3, 2])
    data, scores = one_query(labels, [4, 3, 2, 1])
    n = 40_000
    log = simulate_clicks(
        data, scores, model="cascade", epsilon=0.2, max_label=3, top_k=4, sessions=n, seed=5
    )
    clicks = log.data.y.reshape(-1, 4)
    assert clicks.sum(axis=1).max() == 1  # at most one click per session
    c = click_probabilities(labels, epsilon=0.2, max_label=3)
    reach = np.r_[1.0, np.cumprod(1 - c)[:-1]]  # P(no attractive document above)
    p = reach * c
    assert np.all(np.abs(clicks.mean(axis=0) - p) <= 4 * np.sqrt(p * (1 - p) / n)), (clicks.mean(axis=0), p)
    np.testing.assert_allclose(log.examination[:4], reach, rtol=1e-12)


def test_simulation_is_deterministic_for_a_seed():
    data = generate(20, seed=1)
    a = clicks_from_config(data, {"model": "cascade", "sessions": 2}, seed=4)
    b = clicks_from_config(data, {"model": "cascade", "sessions": 2}, seed=4)
    c = clicks_from_config(data, {"model": "cascade", "sessions": 2}, seed=5)
    np.testing.assert_array_equal(a.data.y, b.data.y)
    np.testing.assert_array_equal(a.source_row, b.source_row)
    assert not np.array_equal(a.data.y, c.data.y) or not np.array_equal(a.source_row, c.source_row)


def test_noisy_feature_production_ranker():
    data = generate(10, seed=2)
    x = data.X[:, 3].astype(float)
    np.testing.assert_allclose(
        noisy_feature_scores(data, feature=4, noise=0.0, seed=1), (x - x.mean()) / x.std(), rtol=1e-6
    )  # feature 4 (1-based, as in SVMlight files) is column 3
    noisy = noisy_feature_scores(data, feature=4, noise=1.0, seed=1)
    assert 0.5 < np.corrcoef(noisy, x)[0, 1] < 0.9  # signal plus unit-variance noise: corr ≈ 1/√2
    with pytest.raises(
        ConfigError, match=r"clicks.logging.feature: expected a 1-based feature id 1..46, got 47"
    ):
        noisy_feature_scores(data, feature=47, noise=1.0, seed=1)
    with pytest.raises(ConfigError, match=r"clicks.logging.feature"):
        noisy_feature_scores(data, feature=0, noise=1.0, seed=1)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"model": "dbn"}, r"clicks.model: expected one of \['pbm', 'cascade'\]"),
        ({"eta": -1}, r"clicks.eta: must be in \[0.0, inf\], got -1"),
        ({"epsilon": 1.5}, r"clicks.epsilon: must be in \[0.0, 1.0\], got 1.5"),
        ({"top_k": 0}, r"clicks.top_k: must be in \[1, inf\], got 0"),
        ({"top_k": True}, "clicks.top_k: expected an integer, got True"),
        ({"sessions": 2.5}, "clicks.sessions: expected an integer, got 2.5"),
    ],
)
def test_bad_click_options(kwargs, message):
    data = generate(5, seed=1)
    with pytest.raises(ConfigError, match=message):
        simulate_clicks(data, np.zeros(data.n_docs), **kwargs)
    with pytest.raises(ConfigError, match=message):
        resolve_click_config(kwargs)


def test_bad_click_inputs():
    data = generate(5, seed=1)
    with pytest.raises(DataError, match="logging scores must be"):
        simulate_clicks(data, np.zeros(3))
    with pytest.raises(
        ConfigError, match=r"model.clicks: unknown key\(s\) session; accepted: model, eta, epsilon, "
    ):
        resolve_click_config({"session": 3})
    with pytest.raises(
        ConfigError, match=r"model.clicks.logging.kind: expected one of \['feature'\], got 'model'"
    ):
        resolve_click_config({"logging": {"kind": "model"}})
    with pytest.raises(ConfigError, match=r"model.clicks.logging.noise: must be in \[0.0, inf\]"):
        resolve_click_config({"logging": {"noise": -1}})
    with pytest.raises(ConfigError, match=r"model.clicks.max_label: must be in \(0.0, inf\]"):
        resolve_click_config({"max_label": 0})


def test_click_block_fills_nested_defaults_and_takes_numpy_scalars():
    resolved = resolve_click_config(
        {"sessions": np.int64(3), "eta": np.float64(0.5), "logging": {"feature": 2}}
    )
    assert resolved["sessions"] == 3 and type(resolved["sessions"]) is int and resolved["eta"] == 0.5
    assert resolved["logging"] == {"kind": "feature", "feature": 2, "noise": 1.0}
    assert resolved["model"] == "pbm" and resolved["top_k"] == 10 and resolved["max_label"] is None
