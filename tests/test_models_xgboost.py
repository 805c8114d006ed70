"""``lambdamart_xgb`` (XGBoost rank:ndcg / rank:pairwise / rank:map): parity with a direct
``xgboost.train`` call, unsorted qids, per-group weights, early stopping, persistence, clear errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
import xgboost as xgb

from ltr.core.errors import ConfigError, DataError
from ltr.data import RankingData
from ltr.data.synthetic import generate
from ltr.metrics import evaluate
from ltr.models import build_ranker, load_ranker

FAST = {"n_trees": 30, "max_depth": 4}


@pytest.fixture(scope="module")
def splits() -> tuple[RankingData, RankingData]:
    return generate(n_queries=80, seed=5, max_docs=40), generate(
        n_queries=40, seed=6, max_docs=40, qid_start=500
    )


def make(params: dict | None = None, seed: int = 11, **cfg) -> object:
    return build_ranker(
        {"name": "lambdamart_xgb", "params": {**FAST, **(params or {})}, **cfg}, seed=seed, num_threads=1
    )


#: what ltr hands XGBoost for FAST with seed 11 on one thread, written independently in XGBoost's own
#: names (its docs, XGBoost Parameters); XGBoost's other defaults equal ltr's (its eta default is 0.3)
XGBOOST_FAST = {
    "objective": "rank:ndcg",
    "tree_method": "hist",
    "eta": 0.1,
    "max_depth": 4,
    "lambdarank_pair_method": "topk",
    "lambdarank_num_pair_per_sample": 32,
    "seed": 11,
    "nthread": 1,
}


def direct(params: dict, data: RankingData, qid: np.ndarray, weight=None) -> xgb.Booster:
    """``xgboost.train`` for FAST's 30 rounds with ``params``, on the query positions ``qid``."""
    dtrain = xgb.QuantileDMatrix(data.X, label=data.y, qid=qid, weight=weight)
    return xgb.train(params, dtrain, num_boost_round=30)


def with_qid(data: RankingData, qid: np.ndarray, weight=None) -> RankingData:
    return RankingData(X=data.X, y=data.y, qid=qid, weight=weight, name=data.name)


def test_same_seed_identical_and_matches_direct_xgboost(splits):
    train, valid = splits
    params = {"feature_fraction": 0.7, "bagging_fraction": 0.8}
    r = make(params).fit(train)
    np.testing.assert_array_equal(r.predict(valid), make(params).fit(train).predict(valid))
    assert not np.array_equal(r.predict(valid), make(params, seed=12).fit(train).predict(valid))
    sampled = {**XGBOOST_FAST, "colsample_bytree": 0.7, "subsample": 0.8}
    np.testing.assert_array_equal(
        r.predict(valid), direct(sampled, train, train.qid).inplace_predict(valid.X)
    )


def test_unsorted_qids_are_handled_and_predictions_keep_row_order(splits):
    train, valid = splits
    rng = np.random.default_rng(0)
    scrambled = rng.permutation(train.n_queries) * 7 + 3  # unsorted, non-contiguous qid values
    data = with_qid(train, np.repeat(scrambled, train.group_sizes))
    with pytest.raises(xgb.core.XGBoostError, match="must be sorted in non-decreasing order"):
        xgb.DMatrix(data.X, label=data.y, qid=data.qid)  # what XGBoost itself says
    r = make().fit(data)
    sorted_ids = with_qid(train, np.repeat(np.arange(train.n_queries), train.group_sizes))
    np.testing.assert_array_equal(r.predict(valid), make().fit(sorted_ids).predict(valid))
    # predictions come back in the caller's row order: scoring a row-permuted matrix permutes the scores
    perm = rng.permutation(valid.n_docs)
    np.testing.assert_array_equal(r.predict(valid.X[perm]), r.predict(valid)[perm])


def test_per_query_weights_go_to_groups(splits):
    train, valid = splits
    w = np.random.default_rng(1).uniform(0.2, 3.0, train.n_queries)
    r = make().fit(with_qid(train, train.qid, weight=w))
    np.testing.assert_array_equal(
        r.predict(valid), direct(XGBOOST_FAST, train, train.qid, weight=w).inplace_predict(valid.X)
    )
    assert not np.array_equal(r.predict(valid), make().fit(train).predict(valid))


def test_early_stopping_and_history(splits):
    train, valid = splits
    seen = []
    r = make({"n_trees": 300, "learning_rate": 0.5}, early_stopping={"patience": 4, "eval_train": True})
    r.fit(train, valid, on_iteration=lambda i, v: seen.append(v))
    curve = r.evals_result_["valid"]["ndcg@10"]
    assert r.best_iteration_ == int(np.argmax(curve)) and len(curve) == r.best_iteration_ + 5 < 300
    assert r.booster_.num_boosted_rounds() == r.best_iteration_ + 1 == r.n_iterations_
    assert set(seen[0]) == {
        "train/ndcg@10",
        "valid/ndcg@10",
        "train/xgboost_ndcg@10",
        "valid/xgboost_ndcg@10",
    }
    scores = r.predict(valid)
    assert curve[r.best_iteration_] == pytest.approx(
        np.nanmean(evaluate("ndcg@10", valid.y, scores, valid.offsets)["ndcg@10"]), abs=1e-12
    )
    # XGBoost's own ndcg@10 at the best round equals ltr's "xgboost" preset on the same scores
    theirs = evaluate("ndcg@10", valid.y, scores, valid.offsets, preset="xgboost")["ndcg@10"].mean()
    assert r.evals_result_["valid"]["xgboost_ndcg@10"][r.best_iteration_] == pytest.approx(theirs, abs=1e-6)


def binary(data: RankingData) -> RankingData:
    return RankingData(X=data.X, y=(data.y >= 2).astype(float), qid=data.qid, name=data.name)


def test_rank_map_needs_binary_labels(splits):
    train, _ = splits
    with pytest.raises(
        DataError, match=r"has label [2-4], but XGBoost rank:map \(binary relevance\) accepts labels 0-1"
    ):
        make({"objective": "rank:map"}).fit(train)


@pytest.mark.parametrize("objective", ["rank:pairwise", "rank:map"])
def test_other_objectives(splits, objective):
    train, valid = map(binary, splits)
    r = make({"objective": objective}).fit(train, valid)
    assert (
        json.loads(r.booster_.save_config())["learner"]["objective"]["name"] == objective
    )  # XGBoost's own view
    assert np.isfinite(r.predict(valid)).all() and r.best_iteration_ is not None


def test_save_load_round_trip(tmp_path, splits):
    train, valid = splits
    r = make(early_stopping={"patience": 5}).fit(train, valid)
    r.save(tmp_path / "m")
    assert (tmp_path / "m" / "model.ubj").is_file()
    back = load_ranker(tmp_path / "m")
    np.testing.assert_array_equal(back.predict(valid), r.predict(valid))
    assert back.best_iteration_ == r.best_iteration_ and back.n_iterations_ == r.n_iterations_


def test_label_gain_translation_and_limits():
    X = np.arange(12, dtype=np.float32).reshape(6, 2)
    data = RankingData(X=X, y=[0, 1, 32, 0, 2, 1], qid=[8, 8, 8, 2, 2, 2], name="g.txt")
    with pytest.raises(
        DataError, match=r"g.txt \(train\): query qid=8 \(rows 1-3\) has label 32.*label_gain: linear"
    ):
        make().fit(data)
    r = make({"label_gain": "linear", "min_sum_hessian_in_leaf": 0.0}).fit(data)
    assert r.engine_params_["ndcg_exp_gain"] is False
    assert make({"label_gain": [0, 1, 3, 7]}).translate(
        r.params_ | {"label_gain": [0.0, 1.0, 3.0, 7.0]}, {}, None
    )["ndcg_exp_gain"]
    with pytest.raises(ConfigError, match=r"label_gain .* is neither 2\^l - 1 nor l"):
        make({"label_gain": [0, 1, 5]})


@pytest.mark.parametrize(
    ("param", "message"),
    [("min_data_in_leaf", "min_child_weight"), ("bagging_by_query", "subsamples rows, not whole queries")],
)
def test_unsupported_vocabulary_is_explained(param, message):
    with pytest.raises(ConfigError, match=rf"params.{param} is not supported: .*{message}"):
        make({param: 5 if param == "min_data_in_leaf" else True})
