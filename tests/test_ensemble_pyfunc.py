"""Ensembles through MLflow: ltr.models.pyfunc logs the ensemble folder; mlflow.pyfunc.load_model scores
documents identically. A DataFrame with a ``qid`` column is scored query by query (rows in any order);
without one it is scored as ONE query (per-query normalisation needs the query's rows)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from ltr.data.synthetic import generate
from ltr.models import build_ranker
from ltr.tracking.store import process_uris

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
mlflow = pytest.importorskip("mlflow")

FAST = {
    "params": {"n_trees": 15, "num_leaves": 7, "min_data_in_leaf": 5},
    "early_stopping": {"patience": None},
}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("mlflow")
    with process_uris(f"sqlite:///{root}/mlflow.db"):
        yield mlflow.create_experiment("ensemble-pyfunc", artifact_location=(root / "artifacts").as_uri())


@pytest.mark.slow  # MLflow model logging and loading: 60-120 s on a busy 2-core machine
def test_ensembles_round_trip_through_mlflow_pyfunc(store):
    from ltr.models.base import OneQueryWarning
    from ltr.models.pyfunc import as_frame, log_pyfunc_model

    train = generate(60, seed=1, max_docs=30)
    valid = generate(30, seed=2, max_docs=30, qid_start=1000)
    test = generate(20, seed=3, max_docs=30, qid_start=2000)
    ensembles = {
        "bagging": {
            "name": "ensemble_bagging",
            "members": [{"model": "lambdamart", "bags": 2, "query_fraction": 0.7, **FAST}],
        },
        "blend": {
            "name": "ensemble_blend",
            "members": [{"model": "lambdamart", **FAST}, {"model": "regression", **FAST}],
            "params": {"n_restarts": 2, "max_steps": 10},
        },
    }
    fitted = {k: build_ranker(cfg, seed=3, num_threads=1).fit(train, valid) for k, cfg in ensembles.items()}
    with mlflow.start_run(experiment_id=store):
        uris = {
            k: log_pyfunc_model(ens, name=k, input_example=(test.dense()[:3], test.qid[:3])).model_uri
            for k, ens in fitted.items()
        }
    loaded = {k: mlflow.pyfunc.load_model(uri) for k, uri in uris.items()}

    # bagging averages raw scores: rows are independent, any batch of rows scores identically
    np.testing.assert_array_equal(
        np.asarray(loaded["bagging"].predict(as_frame(test.dense())), dtype=np.float64),
        fitted["bagging"].predict(test),
    )
    # the blend normalises per query: one query's documents per call give that query's scores
    expected = fitted["blend"].predict(test)
    for q in range(test.n_queries):
        rows = slice(test.offsets[q], test.offsets[q + 1])
        with pytest.warns(OneQueryWarning):  # right here, but the model cannot know the rows are one query
            got = np.asarray(loaded["blend"].predict(as_frame(test.dense()[rows])), dtype=np.float64)
        np.testing.assert_array_equal(got, expected[rows])
    # ... and a whole multi-query frame with a qid column, rows shuffled across queries, gives every
    # row its query's score (the logged signature keeps the optional qid column)
    perm = np.random.default_rng(0).permutation(test.n_docs)
    frame = as_frame(test.dense()[perm], qid=test.qid[perm])
    got = np.asarray(loaded["blend"].predict(frame), dtype=np.float64)
    # within a query the rows come in a different order, so per-query sums may differ in the last bit
    np.testing.assert_allclose(got, expected[perm], rtol=0, atol=1e-12)
    # without the qid column the same frame is one query: different scores (the reason qid exists),
    # and the model says so
    with pytest.warns(OneQueryWarning, match=r"ensemble_blend scores per query, but \d+ rows"):
        one = np.asarray(loaded["blend"].predict(frame.drop(columns=["qid"])))
    assert not np.allclose(one, expected[perm])


ROW_WISE = {
    "ensemble_bagging": {"members": [{"model": "linear", "bags": 2, "query_fraction": 0.7}]},
    "ensemble_mean (normalization none)": {
        "members": ["linear", "feature"],
        "params": {"normalization": "none"},
    },
}
PER_QUERY = {
    "ensemble_mean": {"members": ["linear", "feature"]},
    "ensemble_rrf": {"members": ["linear", "feature"]},
    "ensemble_borda": {"members": ["linear", "feature"]},
    "ensemble_blend": {"members": ["linear", "feature"], "params": {"n_restarts": 1, "max_steps": 5}},
    "ensemble_stack": {
        "members": ["linear", "feature"],
        "stacker": {"model": "linear"},
        "params": {"n_folds": 2},
    },
}


@pytest.mark.parametrize("kind", [*ROW_WISE, *PER_QUERY])
def test_per_query_ensembles_warn_on_rows_without_query_ids(kind):
    """Several queries' rows without qid: a per-query ensemble scores them as ONE query (wrong scores)
    and warns; a row-wise one scores them right and stays silent."""
    import warnings

    from ltr.models.base import OneQueryWarning

    train = generate(30, seed=1, max_docs=15)
    valid = generate(12, seed=2, max_docs=15, qid_start=500)
    test = generate(6, seed=3, max_docs=15, qid_start=900)
    cfg = {"name": kind.split()[0], "n_jobs": 1, **{**ROW_WISE, **PER_QUERY}[kind]}
    ens = build_ranker(cfg, seed=0, num_threads=1).fit(train, valid)
    assert ens.scores_per_query == (kind in PER_QUERY)
    expected = ens.predict(test)  # RankingData: every query scored as a query, never a warning
    if kind in ROW_WISE:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            np.testing.assert_allclose(ens.predict(test.dense()), expected, rtol=0, atol=1e-12)
    else:
        with pytest.warns(OneQueryWarning, match=rf"{cfg['name']} scores per query, but {test.n_docs} rows"):
            one = ens.predict(test.dense())
        assert not np.allclose(one, expected)  # the warning is about real damage


def test_cross_validation_scores_a_per_query_ensemble_query_by_query():
    """Out-of-fold scores of a z-score mean ensemble have mean 0 within every query (each member is
    z-scored per query); before, a fold's queries were scored as ONE query (a bare matrix)."""
    import warnings

    from ltr.models.crossval import cross_val_scores

    data = generate(20, seed=4, max_docs=15)
    cfg = {"name": "ensemble_mean", "members": ["linear", "feature"], "n_jobs": 1}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no OneQueryWarning: every fold is scored as queries
        scores, _ = cross_val_scores(data, cfg, k=4, seed=0, num_threads=1)
    means = np.add.reduceat(scores, data.offsets[:-1]) / data.group_sizes
    np.testing.assert_allclose(means, 0.0, atol=1e-9)
