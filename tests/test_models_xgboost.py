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


# --- engine_params: checked against XGBoost's own parameter list ------------------------------------------------


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            {"engine_params": {"max_bni": 64}},
            "model lambdamart_xgb: model.engine_params.max_bni is not an XGBoost parameter with "
            "booster=gbtree, tree_method=hist, objective=rank:ndcg; did you mean max_bin?",
        ),
        (
            {"engine_params": {"lambdarank_bias_nrom": 2.0}},
            "model.engine_params.lambdarank_bias_nrom is not an XGBoost parameter",
        ),  # a parameter of the ranking objective, misspelt
        (
            {"engine_params": {"rate_drop": 0.1}},
            "model.engine_params.rate_drop is not an XGBoost parameter with booster=gbtree",
        ),  # dart's parameter: XGBoost ignores it on gbtree ("Parameters: { rate_drop } are not used")
        (
            {"engine_params": {"n_estimators": 5}},
            "model.engine_params.n_estimators is not an XGBoost parameter with booster=gbtree, "
            "tree_method=hist, objective=rank:ndcg; did you mean num_boost_round?",
        ),  # the scikit-learn wrapper's name, which xgboost.train ignores
        (
            {"engine_params": {"booster": "gbtre"}},
            "model lambdamart_xgb: XGBoost refuses model.engine_params.booster=gbtre: Unknown gbm type gbtre",
        ),
        (
            {"params": {"eta": 0.3}},
            "model lambdamart_xgb: model.params.eta is XGBoost's name for learning_rate: "
            "use model.params.learning_rate",
        ),
        (
            {"params": {"reg_alpha": 0.5}},
            "model.params.reg_alpha is XGBoost's name for lambda_l1: use model.params.lambda_l1",
        ),  # an alias of alpha, the name ltr's translation uses
        (
            {"params": {"n_estimators": 50}},
            "model.params.n_estimators is XGBoost's name for n_trees: use model.params.n_trees",
        ),  # the scikit-learn wrapper's name for num_boost_round
        (
            {"params": {"min_child_weight": 2}},
            "model.params.min_child_weight is XGBoost's name for min_sum_hessian_in_leaf",
        ),
    ],
)
def test_unknown_engine_params_and_xgboost_spellings_fail_at_build(config, message):
    """A typo in ``engine_params`` trained with XGBoost's default, silently (ltr runs XGBoost with
    ``verbosity=0``, which hides its "are not used" warning): now a ConfigError with the closest of
    XGBoost's own names for the booster, tree method and objective the model trains with."""
    with pytest.raises(ConfigError) as raised:
        build_ranker({"name": "lambdamart_xgb", **config}, seed=0, num_threads=1)
    assert message in str(raised.value)


def test_xgboost_only_parameters_are_accepted_and_reach_xgboost():
    """Parameters outside ltr's vocabulary (and aliases of those it translates) reach XGBoost: read back
    from the trained booster's own configuration; the list follows the setup (dart's ``rate_drop``)."""
    X = np.random.default_rng(1).normal(size=(40, 3)).astype(np.float32)
    data = RankingData(X=X, y=(X[:, 0] > 0).astype(int), qid=np.repeat(np.arange(4), 10))
    engine = {"max_bin": 17, "gamma": 0.25, "reg_lambda": 2.5, "booster": "dart", "rate_drop": 0.125}
    r = make({"n_trees": 3}, engine_params=engine).fit(data)
    config = json.loads(r.booster_.save_config())["learner"]
    booster = config["gradient_booster"]
    assert config["learner_train_param"]["booster"] == booster["name"] == "dart"
    trees = booster["gbtree"]["tree_train_param"]
    assert (trees["max_bin"], trees["gamma"], trees["lambda"]) == ("17", "0.25", "2.5")
    assert booster["dart_train_param"]["rate_drop"] == "0.125"
    with pytest.raises(ConfigError, match="did you mean max_bin"):
        make(engine_params={**engine, "max_bni": 17})


def test_xgboost_parameter_list_agrees_with_xgboosts_own_check():
    """The list is the one XGBoost's ``validate_parameters`` uses: no name of it draws XGBoost's
    "Parameters: { ... } are not used" warning, and names outside it (typos, dart's parameters on
    gbtree, the scikit-learn ``n_estimators``) do."""
    import warnings

    from ltr.models.engines.xgb import ROUNDS, SETUP_DEFAULTS, xgboost_parameter_names

    dmat = xgb.DMatrix(np.zeros((2, 1), np.float32), label=[0, 1], qid=[0, 0])

    def leaves(node: object) -> dict[str, str]:
        """Every ``name: "value"`` of a save_config() tree (each parameter with XGBoost's default)."""
        if isinstance(node, list):
            return {k: v for item in node for k, v in leaves(item).items()}
        if not isinstance(node, dict):
            return {}
        return {k: v for k, v in node.items() if isinstance(v, str)} | {
            k: v for child in node.values() for k, v in leaves(child).items()
        }

    defaults = leaves(json.loads(xgb.Booster(SETUP_DEFAULTS, [dmat]).save_config())) | {"eval_metric": "ndcg"}

    def unused(name: str, value: object) -> bool:
        """XGBoost's verdict on ``name`` (set to ``value``, which it must accept)."""
        with warnings.catch_warnings(record=True) as caught, xgb.config_context(verbosity=1):
            warnings.simplefilter("always")
            xgb.Booster({**SETUP_DEFAULTS, name: value}, [dmat]).save_config()
        return any("are not used" in str(w.message) for w in caught)

    names = [n for n in xgboost_parameter_names() if n != ROUNDS]  # ROUNDS is xgboost.train's argument
    assert len(names) > 50
    assert not [n for n in names if unused(n, defaults.get(n, 1))]
    assert all(unused(n, 1) for n in ("max_bni", "rate_drop", "n_estimators", ROUNDS))


def test_an_alias_in_engine_params_replaces_the_translated_parameter():
    """``learning_rate`` / ``reg_lambda`` replace the translation's ``eta`` / ``lambda`` (one name each in
    ``engine_params_``, the one ltr's code reads), and reach XGBoost."""
    X = np.random.default_rng(1).normal(size=(40, 3)).astype(np.float32)
    data = RankingData(X=X, y=(X[:, 0] > 0).astype(int), qid=np.repeat(np.arange(4), 10))
    r = make({"n_trees": 3}, engine_params={"learning_rate": 0.5, "reg_lambda": 2.5}).fit(data)
    assert (r.engine_params_["eta"], r.engine_params_["lambda"]) == (0.5, 2.5)
    assert not {"learning_rate", "reg_lambda"} & set(r.engine_params_)
    trees = json.loads(r.booster_.save_config())["learner"]["gradient_booster"]["tree_train_param"]
    assert (trees["eta"], trees["lambda"]) == ("0.5", "2.5")
