"""LightGBM rankers (lambdamart, xendcg, regression, classification): determinism, early stopping,
history, persistence, parity with a direct ``lightgbm.train`` call, and input checks."""

from __future__ import annotations

import json

import lightgbm as lgb
import numpy as np
import pytest

from ltr.core.errors import ConfigError, DataError, NotFittedError
from ltr.data import RankingData
from ltr.data.synthetic import generate
from ltr.metrics import evaluate
from ltr.models import build_ranker, load_ranker

FAST = {"n_trees": 40, "num_leaves": 7, "min_data_in_leaf": 5}


@pytest.fixture(scope="module")
def splits() -> tuple[RankingData, RankingData]:
    return generate(n_queries=80, seed=3, max_docs=40), generate(
        n_queries=40, seed=4, max_docs=40, qid_start=1000
    )


def make(name: str = "lambdamart", params: dict | None = None, **cfg) -> object:
    return build_ranker({"name": name, "params": {**FAST, **(params or {})}, **cfg}, seed=11, num_threads=1)


@pytest.mark.parametrize("name", ["lambdamart", "xendcg", "regression", "classification"])
def test_same_seed_gives_identical_predictions(splits, name):
    train, valid = splits
    params = {"feature_fraction": 0.7, "bagging_fraction": 0.8}
    a = make(name, params).fit(train, valid).predict(valid)
    b = make(name, params).fit(train, valid).predict(valid)
    assert a.dtype == np.float64 and a.shape == (valid.n_docs,)
    np.testing.assert_array_equal(a, b)
    other = build_ranker({"name": name, "params": {**FAST, **params}}, seed=12, num_threads=1).fit(
        train, valid
    )
    assert not np.array_equal(a, other.predict(valid))


def test_early_stopping_records_best_iteration(splits):
    train, valid = splits
    r = make(params={"n_trees": 300, "learning_rate": 0.3}, early_stopping={"patience": 5})
    r.fit(train, valid)
    curve = r.evals_result_["valid"]["ndcg@10"]
    assert r.best_iteration_ == int(np.argmax(curve))
    assert len(curve) == r.best_iteration_ + 6 < 300  # stopped 5 rounds after the best
    assert r.booster_.best_iteration == r.best_iteration_ + 1 == r.n_iterations_
    # the recorded value is ltr's metric on the model truncated at the best round
    scores = r.predict(valid)
    ours = evaluate("ndcg@10", valid.y, scores, valid.offsets)["ndcg@10"]
    assert curve[r.best_iteration_] == pytest.approx(np.nanmean(ours), abs=1e-12)
    np.testing.assert_array_equal(scores, r.booster_.predict(valid.X, num_iteration=r.best_iteration_ + 1))


def test_history_logs_lightgbm_metric_in_its_own_convention(splits):
    train, valid = splits
    seen: list[tuple[int, dict]] = []
    r = make(early_stopping={"patience": None, "eval_train": True}).fit(
        train, valid, on_iteration=lambda i, v: seen.append((i, v))
    )
    assert [i for i, _ in seen] == list(range(FAST["n_trees"]))
    assert set(seen[0][1]) == {
        "train/ndcg@10",
        "valid/ndcg@10",
        "train/lightgbm_ndcg@10",
        "valid/lightgbm_ndcg@10",
    }
    assert r.best_iteration_ is None and r.n_iterations_ == FAST["n_trees"]
    # LightGBM's own ndcg@10 equals ltr's "lightgbm" preset (exp2 gain, stable ties, empty query = 1)
    last = r.predict(valid)
    theirs = evaluate("ndcg@10", valid.y, last, valid.offsets, preset="lightgbm")["ndcg@10"].mean()
    assert r.evals_result_["valid"]["lightgbm_ndcg@10"][-1] == pytest.approx(theirs, abs=1e-9)
    assert seen[-1][1]["valid/ndcg@10"] == r.evals_result_["valid"]["ndcg@10"][-1]
    # the synthetic data has queries without relevant documents: the conventions really differ
    assert r.evals_result_["valid"]["lightgbm_ndcg@10"][-1] != r.evals_result_["valid"]["ndcg@10"][-1]


def test_lightgbm_metric_dropped_when_conventions_match(splits):
    train, valid = splits
    r = make(early_stopping={"preset": "lightgbm", "eval_train": False}).fit(train, valid)
    assert set(r.evals_result_) == {"valid"} and set(r.evals_result_["valid"]) == {"ndcg@10"}
    assert r.engine_params_["metric"] == "None"


#: what ltr hands LightGBM for FAST with seed 11 on one thread, written independently in LightGBM's own
#: names (its docs, Parameters page); every other LightGBM default equals ltr's default
LIGHTGBM_FAST = {
    "objective": "lambdarank",
    "num_iterations": 40,
    "num_leaves": 7,
    "min_data_in_leaf": 5,
    "seed": 11,
    "deterministic": True,
    "force_col_wise": True,
    "num_threads": 1,
    "verbosity": -1,
}


def test_matches_direct_lightgbm_train(splits):
    """A direct lightgbm.train call with the parameters written out here reproduces the model bit for bit."""
    train, valid = splits
    # keys LightGBM spells as ltr does (LightGBM docs, Parameters): the same value on both sides
    same_name = {
        "learning_rate": 0.05,
        "max_depth": 5,
        "min_sum_hessian_in_leaf": 0.02,
        "lambda_l1": 0.3,
        "lambda_l2": 0.7,
        "max_bin": 63,
        "feature_fraction": 0.8,
        "bagging_fraction": 0.7,
        "bagging_by_query": True,
    }
    r = make(params={**same_name, "truncation_level": 11, "label_gain": "linear"}).fit(train)
    lightgbm_params = {
        **LIGHTGBM_FAST,
        **same_name,
        "bagging_freq": 1,
        "lambdarank_truncation_level": 11,
        "label_gain": [float(g) for g in range(int(train.y.max()) + 1)],
    }
    direct = lgb.train(lightgbm_params, lgb.Dataset(train.X, train.y, group=train.group_sizes))
    np.testing.assert_array_equal(r.predict(valid), direct.predict(valid.X))


def test_engine_params_win(splits):
    train, _ = splits
    r = make(engine_params={"num_leaves": 3, "lambdarank_norm": False}).fit(train)
    assert r.engine_params_["num_leaves"] == 3 and r.engine_params_["lambdarank_norm"] is False
    assert max(t["num_leaves"] for t in r.booster_.dump_model()["tree_info"]) <= 3


@pytest.mark.parametrize("name", ["lambdamart", "classification"])
def test_save_load_round_trip(tmp_path, splits, name):
    train, valid = splits
    r = make(name, early_stopping={"patience": 5}).fit(train, valid)
    r.save(tmp_path / "m")
    manifest = json.loads((tmp_path / "m" / "manifest.json").read_text())
    assert manifest["model"] == name and manifest["n_features"] == train.n_features
    assert manifest["engine"] == "lightgbm" and manifest["ltr_version"]
    assert (tmp_path / "m" / "model.txt").read_text().startswith("tree")
    back = load_ranker(tmp_path / "m")
    np.testing.assert_array_equal(back.predict(valid), r.predict(valid))
    assert back.best_iteration_ == r.best_iteration_ and back.evals_result_ == r.evals_result_
    assert back.engine_params_ == r.engine_params_


def test_classification_scores_are_expected_grade(splits):
    train, valid = splits
    r = make("classification").fit(train)
    probs = r.booster_.predict(valid.X)
    assert probs.shape == (valid.n_docs, int(train.y.max()) + 1)
    np.testing.assert_allclose(r.predict(valid), probs @ np.arange(probs.shape[1]))


def test_per_query_weights_are_repeated_on_rows(splits):
    train, valid = splits
    w = np.random.default_rng(0).uniform(0.2, 3.0, train.n_queries)
    weighted = RankingData(X=train.X, y=train.y, qid=train.qid, weight=w, name="w")
    r = make().fit(weighted)
    direct = lgb.train(
        dict(LIGHTGBM_FAST),
        lgb.Dataset(train.X, train.y, group=train.group_sizes, weight=np.repeat(w, train.group_sizes)),
    )
    np.testing.assert_array_equal(r.predict(valid), direct.predict(valid.X))
    assert not np.array_equal(r.predict(valid), make().fit(train).predict(valid))


# --- clear errors, before training -----------------------------------------------------------------
def _toy(labels, qid=None, name="toy.txt") -> RankingData:
    labels = np.asarray(labels, dtype=float)
    qid = np.repeat([1, 2], [len(labels) // 2, len(labels) - len(labels) // 2]) if qid is None else qid
    X = np.arange(len(labels) * 2, dtype=np.float32).reshape(-1, 2)
    return RankingData(X=X, y=labels, qid=qid, name=name)


def test_label_beyond_default_gain_table_names_query():
    data = _toy([0, 1, 2, 0, 31, 1], qid=np.array([4, 4, 4, 9, 9, 9]))
    with pytest.raises(
        DataError, match=r"toy.txt \(train\): query qid=9 \(rows 4-6\) has label 31.*0-30.*label_gain"
    ):
        make().fit(data)
    # a gain table covering the label makes it legal, and is passed to LightGBM
    r = make(params={"label_gain": [float(2**i - 1) for i in range(32)], "min_data_in_leaf": 1}).fit(data)
    assert len(r.engine_params_["label_gain"]) == 32
    linear = make(params={"label_gain": "linear", "min_data_in_leaf": 1}).fit(data)
    assert linear.engine_params_["label_gain"] == [float(i) for i in range(32)]
    with pytest.raises(DataError, match=r"qid=9.*label 31.*label_gain \(3 entries\)"):
        make(params={"label_gain": [0, 1, 3]}).fit(data)


def test_fractional_or_negative_labels_rejected():
    with pytest.raises(DataError, match=r"query qid=2 \(rows 3-4\) has label 0.5 at row 4.*whole-number"):
        make().fit(_toy([0, 1, 2, 0.5]))
    with pytest.raises(DataError, match=r"label -1"):
        make().fit(_toy([0, 1, -1, 0]))
    # pointwise regression accepts any finite label
    make("regression", {"min_data_in_leaf": 1}).fit(_toy([0, 1, 2, 0.5]))


def test_query_over_lightgbm_limit_names_query():
    n = 10_001
    data = RankingData(
        X=np.zeros((n + 2, 1), np.float32),
        y=np.zeros(n + 2),
        qid=np.r_[[5, 5], np.full(n, 77)],
        name="big.txt",
    )
    with pytest.raises(
        DataError, match=r"big.txt \(train\): query qid=77 \(rows 3-10003\) has 10,001 documents.*10,000"
    ):
        make().fit(data)


def test_a_query_of_exactly_lightgbms_limit_trains():
    """LightGBM's ranking objectives accept up to 10,000 rows per query (its own check refuses 10,001,
    shown here on the raw engine): a query of exactly 10,000 rows must train, not be refused by ltr.

    Kills mutant #18 (``check_query_size`` refusing ``>= limit``).
    """
    n = 10_000
    rng = np.random.default_rng(0)
    X, y = rng.random((n + 2, 1)).astype(np.float32), rng.integers(0, 3, n + 2)
    lgb.train(
        {"objective": "lambdarank", "verbosity": -1, "num_threads": 1}, lgb.Dataset(X, y, group=[2, n]), 1
    )
    data = RankingData(X=X, y=y, qid=np.r_[[5, 5], np.full(n, 77)], name="limit.txt")
    assert make(params={"n_trees": 1}).fit(data).predict(data).shape == (n + 2,)


def test_a_query_weighted_zero_is_accepted():
    """A weight of 0 leaves a query out of the loss (weights must be >= 0, so 0 is allowed): its rows get
    weight 0, and LightGBM trains on the rest.

    Kills mutant #19 (``row_weights`` refusing ``weight <= 0``).
    """
    from ltr.models.checks import row_weights

    d = RankingData(X=np.zeros((3, 1), np.float32), y=[0, 1, 0], qid=[1, 1, 2], weight=[2.0, 0.0])
    assert row_weights(d).tolist() == [2.0, 2.0, 0.0]
    train = generate(n_queries=30, seed=5, max_docs=20)
    weighted = RankingData(
        X=train.X, y=train.y, qid=train.qid, weight=np.r_[0.0, np.ones(train.n_queries - 1)], name="w"
    )
    assert make(params={"n_trees": 3}).fit(weighted).predict(weighted).shape == (train.n_docs,)


def test_validation_labels_above_the_training_labels_get_a_gain():
    """``label_gain: linear`` is a table over 0..max label of train *and* the evaluated splits: a validation
    label 4 above every training label (0-2) needs gain entry 4, or LightGBM's own NDCG on the validation
    set fails on it.

    Kills mutant #20 (``watch`` taking the largest label of the training split only).
    """
    rng = np.random.default_rng(1)
    train = RankingData(
        X=rng.random((60, 3)).astype(np.float32), y=rng.integers(0, 3, 60), qid=np.repeat(np.arange(6), 10)
    )
    valid_y = rng.integers(0, 3, 30)
    valid_y[4] = 4
    valid = RankingData(X=rng.random((30, 3)).astype(np.float32), y=valid_y, qid=np.repeat(np.arange(3), 10))
    r = make(params={"n_trees": 3, "label_gain": "linear"}).fit(train, valid)
    assert r.engine_params_["label_gain"] == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_valid_must_have_same_features(splits):
    train, _ = splits
    other = RankingData(X=np.zeros((3, 2), np.float32), y=[0, 1, 0], qid=[1, 1, 1], name="v.txt")
    with pytest.raises(DataError, match=r"v.txt \(valid\): has 2 feature columns.*trained on 46"):
        make().fit(train, other)


def test_predict_checks(splits):
    train, _ = splits
    with pytest.raises(NotFittedError, match="LambdaMART is not fitted yet"):
        make().predict(train)
    r = make().fit(train)
    with pytest.raises(DataError, match=r"has 3 feature columns but the model was trained on 46"):
        r.predict(np.zeros((2, 3)))


def test_empty_validation_metric_is_an_error(splits):
    train, _ = splits
    empty = RankingData(X=np.zeros((4, 46), np.float32), y=[0, 0, 0, 0], qid=[1, 1, 2, 2], name="v.txt")
    with pytest.raises(DataError, match="no validation query has a relevant document"):
        make().fit(train, empty)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            {"engine_params": {"min_gain_to_splitt": 0.5}},
            "model lambdamart: model.engine_params.min_gain_to_splitt is not a LightGBM parameter; "
            "did you mean min_gain_to_split?",
        ),
        (
            {"engine_params": {"not_a_param": 1}},
            "model.engine_params.not_a_param is not a LightGBM parameter",
        ),
        (
            {"params": {"num_iterations": 50}},
            "model lambdamart: model.params.num_iterations is LightGBM's name for n_trees: use model.params.n_trees",
        ),
        (
            {"params": {"n_estimators": 50}},
            "model.params.n_estimators is LightGBM's name for n_trees",
        ),  # an alias
        (
            {"params": {"min_data_in_leaf": 5, "lambda_l1": 0.1, "eta": 0.1}},
            "model.params.eta is LightGBM's name",
        ),
    ],
)
def test_unknown_engine_params_and_engine_spellings_fail_at_build(config, message):
    """A typo in ``engine_params`` no longer trains with the default silently: it is checked against
    LightGBM's own parameter table (names and aliases); LightGBM's spelling of an ltr parameter under
    ``params`` names the ltr key."""
    with pytest.raises(ConfigError) as raised:
        build_ranker({"name": "lambdamart", **config}, seed=0, num_threads=1)
    assert message in str(raised.value)


def test_every_lightgbm_parameter_and_alias_is_accepted_in_engine_params():
    """LightGBM's own table is the truth: each of its names and aliases passes (here: a handful, plus the
    count of the table, so a table that lost most of its entries would fail)."""
    from ltr.models.engines.lgbm import lightgbm_parameter_names

    names = lightgbm_parameter_names()
    assert len(set(names.values())) > 100
    for key in (
        "min_split_gain",
        "feature_pre_filter",
        "zero_as_missing",
        "lambdarank_norm",
        "verbose",
        "seed",
    ):
        build_ranker({"name": "lambdamart", "engine_params": {key: 1}}, seed=0, num_threads=1)


def test_an_alias_in_engine_params_wins_over_the_translated_parameter():
    """``engine_params.eta`` next to the translated ``learning_rate``: LightGBM keeps its canonical name
    and dropped the alias silently; now the alias replaces the translated value (read back from the model)."""
    X = np.random.default_rng(3).normal(size=(40, 3)).astype(np.float32)
    data = RankingData(X=X, y=(X[:, 0] > 0).astype(int), qid=np.repeat(np.arange(4), 10))
    r = make(params={"n_trees": 6}, engine_params={"eta": 0.5, "num_boost_round": 3}).fit(data)
    assert "[learning_rate: 0.5]" in r.booster_.model_to_string().splitlines()
    assert r.booster_.current_iteration() == 3
    assert (r.engine_params_["learning_rate"], r.engine_params_["num_iterations"]) == (0.5, 3)
    assert "eta" not in r.engine_params_
