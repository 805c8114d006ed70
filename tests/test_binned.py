"""Binned training data shared across fits (ltr/models/engines/binned.py): XGBoost's QuantileDMatrix.

The truth is XGBoost: a fit on a shared matrix must predict exactly like ``xgboost.train`` on a freshly
built ``QuantileDMatrix`` with the same parameters; the matrices built are counted by wrapping
``xgboost.QuantileDMatrix`` itself; a real ``python -m ltr.train -m`` XGBoost sweep builds them once and
gets the values of a sweep that shares nothing. (LightGBM's Datasets: ``tests/test_pruning.py``.)
"""

from __future__ import annotations

import numpy as np
import optuna
import pytest
import xgboost
from helpers import TINY_DATA, run_train_cli

from ltr.data import RankingData
from ltr.models.engines.binned import BINNED
from ltr.models.engines.xgb import query_positions
from ltr.models.registry import get_ranker_class

XGBOOST_QUANTILE_DMATRIX = xgboost.QuantileDMatrix


def _splits(weight: np.ndarray | None = None) -> tuple[RankingData, RankingData]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 5)).astype(np.float32)
    y = np.clip((X[:, 0] * 1.5 + rng.normal(size=400)).round(), 0, 3).astype(int)
    train = RankingData(X=X[:300], y=y[:300], qid=np.repeat(np.arange(30), 10), weight=weight)
    valid = RankingData(X=X[300:], y=y[300:], qid=np.repeat(np.arange(10), 10))
    return train, valid


@pytest.fixture
def sharing():
    """BINNED on for the test, off (and emptied) after it."""
    BINNED.enable()
    try:
        yield BINNED
    finally:
        BINNED.enable(False)


@pytest.fixture
def constructions(monkeypatch) -> list[int]:
    """One entry (max_bin) per ``xgboost.QuantileDMatrix`` built while the test runs."""
    made: list[int] = []

    class Counted(xgboost.QuantileDMatrix):
        def __init__(self, *args, **kwargs):
            made.append(kwargs.get("max_bin"))
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(xgboost, "QuantileDMatrix", Counted)
    return made


def _fit(train, valid, model="lambdamart_xgb", **params):
    ranker = get_ranker_class(model)({"n_trees": 15, **params}, num_threads=1)
    return ranker.fit(train, valid)


def _xgboost_truth(ranker, train: RankingData, valid: RankingData) -> np.ndarray:
    """``xgboost.train`` with the ranker's own parameters on a QuantileDMatrix built for this call alone."""
    params = dict(ranker.engine_params_)
    rounds = int(params.pop("num_boost_round"))
    dtrain = XGBOOST_QUANTILE_DMATRIX(  # not counted by the fixture `constructions`
        train.X,
        label=train.y,
        qid=query_positions(train),
        weight=train.weight,
        max_bin=params["max_bin"],
        nthread=1,
    )
    return xgboost.train(params, dtrain, num_boost_round=rounds).inplace_predict(valid.X)


TRIALS = (
    {"learning_rate": 0.05, "max_depth": 3},
    {"learning_rate": 0.3, "max_depth": 6, "bagging_fraction": 0.7},
)


def test_trials_on_a_shared_quantile_matrix_predict_exactly_like_xgboost_on_a_fresh_one(
    sharing, constructions
):
    train, valid = _splits()
    trials = [_fit(train, None, **params) for params in (*TRIALS, TRIALS[0])]
    assert len(constructions) == 1  # the later trials trained on the first one's matrix
    for ranker in trials:  # the shared matrix, already trained on, still gives XGBoost's own model
        np.testing.assert_array_equal(ranker.predict(valid), _xgboost_truth(ranker, train, valid))
    assert not np.array_equal(trials[0].predict(valid), trials[1].predict(valid))


def test_shared_train_and_validation_matrices_give_the_curves_and_models_of_unshared_fits(constructions):
    """With a validation split (early stopping on ltr's metric over the ref'd validation matrix)."""
    train, valid = _splits()

    def trials() -> list:
        return [_fit(train, valid, n_trees=40, **params) for params in TRIALS]

    fresh = trials()
    assert len(constructions) == 4  # off: train + valid, every trial
    BINNED.enable()
    try:
        shared = trials()
        assert len(constructions) == 6 and BINNED.built == 2  # on: train + valid, once
    finally:
        BINNED.enable(False)
    for a, b in zip(fresh, shared, strict=True):
        assert a.evals_result_ == b.evals_result_ and a.best_iteration_ == b.best_iteration_
        np.testing.assert_array_equal(a.predict(valid), b.predict(valid))


def test_other_binning_gets_its_own_matrix_and_the_cache_keeps_the_four_latest(sharing, constructions):
    train, valid = _splits()
    for max_bin in (255, 255, 63, 255, 63):
        _fit(train, valid, max_bin=max_bin)
    assert constructions == [255, 255, 63, 63]  # train + valid per binning; the repeats reuse them
    other_bins = _fit(train, None, max_bin=16)
    np.testing.assert_array_equal(other_bins.predict(valid), _xgboost_truth(other_bins, train, valid))
    for max_bin in (32, 48, 255):  # 16, 32, 48 (train only) are newer than 255: it was dropped
        _fit(train, None, max_bin=max_bin)
    assert constructions[4:] == [16, 32, 48, 255]


def test_nothing_is_shared_across_data_weights_or_click_logs(sharing, constructions):
    """Equal binning, other data: a copy of train, train with query weights, simulated click logs with
    other labels each fit. Each builds its own matrix and gets XGBoost's model for its own data."""
    train, valid = _splits()
    weighted, _ = _splits(weight=np.random.default_rng(1).uniform(0.1, 2.0, size=30))
    copy = RankingData(X=train.X.copy(), y=train.y.copy(), qid=train.qid.copy())
    for data in (train, weighted, copy):
        ranker = _fit(data, None)
        np.testing.assert_array_equal(ranker.predict(valid), _xgboost_truth(ranker, data, valid))
    assert len(constructions) == 3
    assert not np.array_equal(_fit(train, None).predict(valid), _fit(weighted, None).predict(valid))
    assert len(constructions) == 3  # the last two found their own entries

    clicks = [
        get_ranker_class("lambdamart_xgb_clicks")(
            {"n_trees": 10}, clicks={"model": model}, seed=1, num_threads=1
        )
        for model in ("pbm", "cascade")
    ]
    for ranker in clicks:
        ranker.fit(train)
    assert len(constructions) == 5  # one matrix per click log (labels = that log's clicks)
    assert not np.array_equal(clicks[0].predict(valid), clicks[1].predict(valid))


def test_lightgbm_and_xgboost_fits_on_the_same_data_keep_their_own_binned_data(sharing, constructions):
    train, valid = _splits()
    for model in ("lambdamart", "lambdamart_xgb", "lambdamart", "lambdamart_xgb"):
        _fit(train, valid, model=model)
    assert len(constructions) == 2 and BINNED.built == 4  # LightGBM's 2 Datasets, XGBoost's 2 matrices


@pytest.mark.slow
def test_an_xgboost_sweep_builds_its_matrices_once_with_the_results_of_an_unshared_sweep(tmp_path):
    """The shipped XGBoost search (conf/hparams_search/xgboost_optuna.yaml), 3 trials: with share_data the
    process builds the train and valid QuantileDMatrix once (``ltr.datasets_built`` stays 2); without,
    every trial builds its own; the trials' parameters and values are identical."""
    values = {}
    for share in ("true", "false"):
        root = tmp_path / share
        args = [
            "-m", "+model=lambdamart_xgb", "hparams_search=xgboost_optuna", *TINY_DATA, "model.params.n_trees=20",
            "num_threads=1", "tracking=none", "hydra.sweeper.n_trials=3", f"hydra.sweeper.share_data={share}",
        ]  # fmt: skip
        proc = run_train_cli(args, root, timeout=900)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
        study = optuna.load_study(
            study_name="lambdamart_xgb-synthetic", storage=f"sqlite:///{root}/optuna.db"
        )
        assert [t.state for t in study.trials] == [optuna.trial.TrialState.COMPLETE] * 3
        values[share] = [(t.params, t.value) for t in study.trials]
        built = [t.user_attrs.get("ltr.datasets_built") for t in study.trials]
        assert built == ([2, 2, 2] if share == "true" else [None] * 3)
    assert len({v for _, v in values["true"]}) == 3  # three different models
    assert values["true"] == values["false"]
