"""scikit-learn baselines (linear, random_forest) and the single-feature ranker: parity with the
estimators they wrap, persistence without pickle, one-shot validation records, clear errors."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import scipy.sparse as sp

from ltr.core.errors import ConfigError, DataError
from ltr.data import RankingData
from ltr.data.synthetic import generate
from ltr.metrics import evaluate
from ltr.models import build_ranker, load_ranker


@pytest.fixture(scope="module")
def splits() -> tuple[RankingData, RankingData]:
    return generate(n_queries=60, seed=7, max_docs=30), generate(
        n_queries=30, seed=8, max_docs=30, qid_start=900
    )


def make(name: str, params: dict | None = None, **cfg):
    return build_ranker({"name": name, "params": params or {}, **cfg}, seed=3, num_threads=1)


def test_linear_equals_standardised_ridge_and_round_trips(tmp_path, splits):
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    train, valid = splits
    w = np.random.default_rng(0).uniform(0.5, 2, train.n_queries)
    weighted = RankingData(X=train.X, y=train.y, qid=train.qid, weight=w)
    r = make("linear", {"alpha": 3.0}).fit(weighted, valid)
    pipe = make_pipeline(StandardScaler(), Ridge(alpha=3.0))
    pipe.fit(train.X.astype(float), train.y, ridge__sample_weight=np.repeat(w, train.group_sizes))
    np.testing.assert_allclose(r.predict(valid), pipe.predict(valid.X.astype(float)), rtol=1e-9, atol=1e-9)
    assert r.best_iteration_ is None and len(r.evals_result_["valid"]["ndcg@10"]) == 1
    r.save(tmp_path / "lin")
    state = json.loads((tmp_path / "lin" / "model.json").read_text())
    assert len(state["weights"]) == train.n_features
    np.testing.assert_array_equal(load_ranker(tmp_path / "lin").predict(valid), r.predict(valid))


def test_linear_sparse_input_and_nonfinite_features(splits):
    train, valid = splits
    sparse = RankingData(X=sp.csr_matrix(train.X), y=train.y, qid=train.qid)
    r = make("linear").fit(sparse)
    np.testing.assert_allclose(r.predict(sp.csr_matrix(valid.X)), r.predict(valid.X))
    X = train.X.copy()
    X[5, 2] = np.nan  # row 6, feature 3 (1-based, as in the SVMlight file)
    bad = RankingData(X=X, y=train.y, qid=train.qid, name="nan.txt")
    with pytest.raises(
        DataError,
        match=r"nan.txt \(train\): query qid=1 \(rows 1-\d+\) has a non-finite value in feature 3 \(row 6\)",
    ):
        make("linear").fit(bad)


def test_random_forest_matches_sklearn_and_round_trips_with_skops(tmp_path, splits):
    from sklearn.ensemble import RandomForestRegressor

    train, valid = splits
    r = make("random_forest", {"n_trees": 8, "feature_fraction": 0.5, "bagging_fraction": 0.7}).fit(train)
    direct = RandomForestRegressor(
        n_estimators=8, max_features=0.5, max_samples=0.7, min_samples_leaf=20, random_state=3, n_jobs=1
    ).fit(train.X, train.y)
    np.testing.assert_array_equal(r.predict(valid), direct.predict(valid.X))
    r.save(tmp_path / "rf")
    assert (tmp_path / "rf" / "model.skops").is_file()
    np.testing.assert_array_equal(load_ranker(tmp_path / "rf").predict(valid), r.predict(valid))


def test_random_forest_refuses_untrusted_skops_file(tmp_path, splits):
    import skops.io as sio
    from sklearn.preprocessing import FunctionTransformer

    train, _ = splits
    make("random_forest", {"n_trees": 2}).fit(train).save(tmp_path / "rf")
    sio.dump(FunctionTransformer(func=os.system), tmp_path / "rf" / "model.skops")  # a hostile payload
    with pytest.raises(ConfigError, match=r"model.skops: refuses to load types .*system"):
        load_ranker(tmp_path / "rf")


def test_feature_best_is_the_argmax_over_columns_and_directions(tmp_path, splits):
    train, valid = splits
    seen = []
    r = make("feature").fit(train, valid, on_iteration=lambda i, v: seen.append((i, v)))
    brute = {
        (j, d): np.nanmean(
            evaluate(
                "ndcg@10", valid.y, (1 if d == "desc" else -1) * valid.X[:, j].astype(float), valid.offsets
            )["ndcg@10"]
        )
        for j in range(valid.n_features)
        for d in ("desc", "asc")
    }
    best = max(brute.values())
    assert brute[(r.feature_, r.direction_)] == pytest.approx(best, abs=1e-12)
    assert r.selection_[f"{r.feature_}:{r.direction_}"] == pytest.approx(best, abs=1e-12)
    assert seen == [(0, {"valid/ndcg@10": r.evals_result_["valid"]["ndcg@10"][0]})]
    assert r.evals_result_["valid"]["ndcg@10"][0] == pytest.approx(best, abs=1e-12)
    r.save(tmp_path / "f")
    back = load_ranker(tmp_path / "f")
    assert (back.feature_, back.direction_) == (r.feature_, r.direction_)
    np.testing.assert_array_equal(back.predict(valid), r.predict(valid))


def test_feature_fixed_column_direction_and_missing_values():
    X = np.array([[1.0], [np.nan], [3.0]], dtype=np.float32)
    d = RankingData(X=X, y=[0, 1, 2], qid=[1, 1, 1])
    asc = make("feature", {"feature": 1, "direction": "asc"}).fit(d)  # 1-based: column 0
    assert asc.predict(d).tolist() == [-1.0, -np.inf, -3.0]
    desc = make("feature", {"feature": 1, "direction": "desc"}).fit(d)
    assert desc.predict(d).tolist() == [1.0, -np.inf, 3.0]
    with pytest.raises(
        ConfigError, match=r"model.params.feature=2 but data has 1 features \(1-based ids 1-1"
    ):
        make("feature", {"feature": 2, "direction": "desc"}).fit(d)
    with pytest.raises(
        ConfigError,
        match=r"model.params.feature: must be a feature id >= 1 \(1-based, as in SVMlight files\) or 'best', got 0",
    ):
        make("feature", {"feature": 0})
    with pytest.raises(ConfigError, match="engine_params must be empty"):
        make("feature", engine_params={"x": 1})


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            {"name": "linear", "engine_params": {"positve": True}},
            "model linear: model.engine_params.positve is not a parameter of scikit-learn's Ridge; "
            "did you mean positive?",
        ),
        (
            {"name": "random_forest", "engine_params": {"ccp_alpah": 0.01}},
            "model random_forest: model.engine_params.ccp_alpah is not a parameter of scikit-learn's "
            "RandomForestRegressor; did you mean ccp_alpha?",
        ),
        (
            {"name": "random_forest", "engine_params": {"learning_rate": 0.1}},
            "model.engine_params.learning_rate is not a parameter of scikit-learn's RandomForestRegressor",
        ),  # a boosting parameter: RandomForestRegressor(learning_rate=...) fails inside fit
        (
            {"name": "random_forest", "params": {"n_estimators": 50}},
            "model random_forest: model.params.n_estimators is scikit-learn's name for n_trees: "
            "use model.params.n_trees",
        ),
        (
            {"name": "random_forest", "params": {"min_samples_leaf": 5}},
            "model.params.min_samples_leaf is scikit-learn's name for min_data_in_leaf",
        ),
    ],
)
def test_unknown_engine_params_and_sklearn_spellings_fail_at_build(config, message):
    """``engine_params`` are the estimator's arguments: a typo failed inside fit, after the data was read
    (``TypeError: unexpected keyword argument``); now a ConfigError at build with the closest of the
    estimator's own ``get_params()`` names."""
    with pytest.raises(ConfigError) as raised:
        build_ranker(config, seed=0, num_threads=1)
    assert message in str(raised.value)


def test_sklearn_only_parameters_are_accepted_and_reach_the_estimator(splits):
    """Read back from the fitted estimator (random forest: ``get_params()``), or seen in the fit (linear:
    Ridge's ``positive`` leaves no negative weight where the unconstrained fit has some)."""
    train, _ = splits
    forest = make(
        "random_forest", {"n_trees": 2}, engine_params={"ccp_alpha": 0.01, "min_impurity_decrease": 0.001}
    )
    given = forest.fit(train).model_.get_params()
    assert (given["ccp_alpha"], given["min_impurity_decrease"]) == (0.01, 0.001)
    free, positive = make("linear").fit(train), make("linear", engine_params={"positive": True}).fit(train)
    assert (free.weights_ < 0).any() and (positive.weights_ >= 0).all()
    with pytest.raises(ConfigError, match="did you mean positive"):
        make("linear", engine_params={"positve": True})
