"""``catboost`` (YetiRank, optional extra): parity with CatBoost itself, early stopping on ltr's
metric, CatBoost's own NDCG against ltr's ``catboost`` preset, persistence, missing-package error."""

from __future__ import annotations

import numpy as np
import pytest

from ltr.core.errors import ConfigError
from ltr.data import RankingData
from ltr.data.synthetic import generate
from ltr.metrics import evaluate
from ltr.models import build_ranker, load_ranker

catboost = pytest.importorskip("catboost")
FAST = {"n_trees": 40, "max_depth": 4}


@pytest.fixture(scope="module")
def splits() -> tuple[RankingData, RankingData]:
    return generate(n_queries=60, seed=9, max_docs=30), generate(
        n_queries=30, seed=10, max_docs=30, qid_start=700
    )


def make(params: dict | None = None, seed: int = 4, **cfg):
    return build_ranker(
        {"name": "catboost", "params": {**FAST, **(params or {})}, **cfg}, seed=seed, num_threads=1
    )


def test_deterministic_and_equal_to_catboost_itself(splits):
    train, valid = splits
    params = {"bagging_fraction": 0.8, "feature_fraction": 0.7}
    r = make(params).fit(train)
    np.testing.assert_array_equal(r.predict(valid), make(params).fit(train).predict(valid))
    # the same fit written out in CatBoost's own names (its docs); ltr's defaults for the rest
    direct = catboost.CatBoost(
        {
            "loss_function": "YetiRank",
            "iterations": 40,
            "learning_rate": 0.1,
            "depth": 4,
            "l2_leaf_reg": 3.0,
            "border_count": 254,
            "rsm": 0.7,
            "bootstrap_type": "Bernoulli",
            "subsample": 0.8,
            "random_seed": 4,
            "thread_count": 1,
            "allow_writing_files": False,
            "verbose": False,
        }
    )
    direct.fit(
        catboost.Pool(train.X, train.y, group_id=np.repeat(np.arange(train.n_queries), train.group_sizes))
    )
    np.testing.assert_array_equal(r.predict(valid), direct.predict(valid.X, prediction_type="RawFormulaVal"))


def test_early_stopping_on_ltr_metric_and_catboost_metric_logged(tmp_path, splits):
    train, valid = splits
    r = make({"n_trees": 300, "learning_rate": 0.3}, early_stopping={"patience": 5}).fit(train, valid)
    curve = r.evals_result_["valid"]["ndcg@10"]
    assert r.best_iteration_ == int(np.argmax(curve)) and len(curve) == r.best_iteration_ + 6 < 300
    assert r.model_.tree_count_ == r.best_iteration_ + 1
    scores = r.predict(valid)
    ours = np.nanmean(evaluate("ndcg@10", valid.y, scores, valid.offsets)["ndcg@10"])
    assert curve[r.best_iteration_] == pytest.approx(ours, abs=1e-12)
    # CatBoost's NDCG:top=10;type=Base equals ltr's "catboost" preset (linear gain, pessimistic ties, empty = 1)
    theirs = evaluate("ndcg@10", valid.y, scores, valid.offsets, preset="catboost")["ndcg@10"].mean()
    assert r.evals_result_["valid"]["catboost_ndcg@10"][r.best_iteration_] == pytest.approx(theirs, abs=1e-9)
    r.save(tmp_path / "cb")
    assert (tmp_path / "cb" / "model.cbm").is_file()
    np.testing.assert_array_equal(load_ranker(tmp_path / "cb").predict(valid), scores)


def test_unsupported_vocabulary():
    with pytest.raises(ConfigError, match=r"params.num_leaves is not supported: .*symmetric: use max_depth"):
        make({"num_leaves": 31})
    with pytest.raises(ConfigError, match=r"params.label_gain is not supported"):
        make({"label_gain": "linear"})
    # the missing package: tests/test_extras.py


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            {"engine_params": {"l2_leaf_regg": 5}},
            "model catboost: model.engine_params.l2_leaf_regg is not a CatBoost parameter; "
            "did you mean l2_leaf_reg?",
        ),
        (
            {"engine_params": {"random_strenght": 2}},
            "model.engine_params.random_strenght is not a CatBoost parameter; did you mean random_strength?",
        ),
        (
            {"params": {"iterations": 50}},
            "model catboost: model.params.iterations is CatBoost's name for n_trees: use model.params.n_trees",
        ),
        (
            {"params": {"n_estimators": 50}},
            "model.params.n_estimators is CatBoost's name for n_trees: use model.params.n_trees",
        ),  # a synonym of iterations (CatBoost's own synonym table)
        (
            {"params": {"reg_lambda": 2.0}},
            "model.params.reg_lambda is CatBoost's name for lambda_l2: use model.params.lambda_l2",
        ),
    ],
)
def test_unknown_engine_params_and_catboost_spellings_fail_at_build(config, message):
    """A typo in ``engine_params`` failed inside CatBoost's fit, after the data was read ("Unknown
    option"): now a ConfigError at build with the closest of CatBoost's own parameter names."""
    with pytest.raises(ConfigError) as raised:
        build_ranker({"name": "catboost", **config}, seed=0, num_threads=1)
    assert message in str(raised.value)


def test_catboost_only_parameters_are_accepted_and_reach_catboost():
    """``engine_params`` outside ltr's vocabulary reach CatBoost: read back from the trained model's
    own parameters (``get_all_params()``), not from ltr's dict."""
    X = np.random.default_rng(2).normal(size=(40, 3)).astype(np.float32)
    data = RankingData(X=X, y=(X[:, 0] > 0).astype(int), qid=np.repeat(np.arange(4), 10))
    engine = {"l2_leaf_reg": 7.5, "random_strength": 2.5, "model_size_reg": 0.25}
    r = make({"n_trees": 3}, engine_params=engine).fit(data)
    given = r.model_.get_all_params()
    assert {k: given[k] for k in engine} == engine
    with pytest.raises(ConfigError, match="did you mean random_strength"):
        make(engine_params={**engine, "random_strenght": 2.5})


def test_a_synonym_in_engine_params_wins_over_the_translated_parameter():
    """``engine_params.reg_lambda`` next to the translated ``l2_leaf_reg`` stopped CatBoost's fit ("only
    one of the parameters l2_leaf_reg, reg_lambda should be initialized"); now it replaces the value."""
    X = np.random.default_rng(2).normal(size=(40, 3)).astype(np.float32)
    data = RankingData(X=X, y=(X[:, 0] > 0).astype(int), qid=np.repeat(np.arange(4), 10))
    r = make({"n_trees": 6}, engine_params={"reg_lambda": 6.5, "n_estimators": 3}).fit(data)
    assert (r.model_.get_all_params()["l2_leaf_reg"], r.model_.tree_count_) == (6.5, 3)
