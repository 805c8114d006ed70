"""MLflow pyfunc wrapper: log any ranker to a temporary SQLite store, load it back with
``mlflow.pyfunc.load_model`` and get identical scores from a DataFrame."""

from __future__ import annotations

import os

import numpy as np
import pytest

from ltr.data.synthetic import generate
from ltr.errors import DataError
from ltr.models import build_ranker

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
mlflow = pytest.importorskip("mlflow")

FAST = {
    "lambdamart": {"n_trees": 10, "num_leaves": 7, "min_data_in_leaf": 5},
    "lambdamart_xgb": {"n_trees": 10, "max_depth": 3},
    "random_forest": {"n_trees": 4},
    "linear": {},
    "feature": {},
}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("mlflow")
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(f"sqlite:///{root}/mlflow.db")
    experiment = mlflow.create_experiment("pyfunc-test", artifact_location=(root / "artifacts").as_uri())
    yield experiment
    mlflow.set_tracking_uri(previous)


def round_trip(store, models: list[str]) -> None:
    from ltr.models.pyfunc import as_frame, log_pyfunc_model

    train = generate(n_queries=40, seed=1, max_docs=20)
    test = generate(n_queries=20, seed=2, max_docs=20)
    rankers = {
        name: build_ranker({"name": name, "params": params}, seed=0, num_threads=1).fit(train)
        for name, params in FAST.items()
        if name in models
    }
    uris = {}
    with mlflow.start_run(experiment_id=store):
        for name, ranker in rankers.items():
            info = log_pyfunc_model(ranker, name=name, input_example=test.dense()[:3])
            uris[name] = info.model_uri
    assert set(rankers) == set(models) and set(uris) == set(models)
    frame = as_frame(test.dense())
    # every check runs for every logged model (not only for the last one of a loop)
    for name, ranker in rankers.items():
        loaded = mlflow.pyfunc.load_model(uris[name])
        expected = ranker.predict(test)
        scores = np.asarray(loaded.predict(frame), dtype=np.float64)
        np.testing.assert_array_equal(scores, expected, err_msg=name)
        # columns may come in any order; a missing column is named (MLflow enforces the logged signature)
        shuffled = frame[frame.columns[::-1]]
        np.testing.assert_array_equal(np.asarray(loaded.predict(shuffled)), expected, err_msg=name)
        # the optional qid column is accepted and, for a row-wise model, changes nothing
        with_qid = as_frame(test.dense(), qid=test.qid)
        np.testing.assert_array_equal(np.asarray(loaded.predict(with_qid)), expected, err_msg=name)
        # float64 features pass the (double) signature too, with the same scores
        np.testing.assert_array_equal(
            np.asarray(loaded.predict(frame.astype("float64"))), expected, err_msg=name
        )
        assert loaded.metadata.get_input_schema().input_names()[-1] == "qid", name
        with pytest.raises(Exception, match="f0"):
            loaded.predict(frame.drop(columns=["f0"]))


def test_pyfunc_round_trip_gives_identical_scores(store):
    round_trip(store, ["lambdamart", "linear"])


@pytest.mark.slow
def test_pyfunc_round_trip_every_engine(store):
    round_trip(store, ["lambdamart_xgb", "random_forest", "feature"])


def test_score_by_query_groups_rows_and_restores_order():
    """A per-query ensemble scored through the pyfunc path: any row order, queries interleaved."""
    from ltr.models.pyfunc import as_frame, input_matrix, input_qid, score_by_query

    train = generate(n_queries=30, seed=1, max_docs=15)
    test = generate(n_queries=12, seed=2, max_docs=15)
    cfg = {"name": "ensemble_mean", "members": ["linear", "feature"], "params": {"normalization": "zscore"}}
    ens = build_ranker(cfg, seed=0, num_threads=1).fit(train, train)
    expected = ens.predict(test)
    perm = np.random.default_rng(1).permutation(test.n_docs)
    frame = as_frame(test.dense()[perm], qid=test.qid[perm])
    got = score_by_query(ens, input_matrix(frame, test.n_features), input_qid(frame))
    np.testing.assert_allclose(got, expected[perm], rtol=0, atol=1e-12)
    # one query's rows alone score the same as inside the whole frame
    q = test.qid[perm][0]
    own = test.qid[perm] == q
    alone = score_by_query(ens, test.dense()[perm][own], None)
    np.testing.assert_allclose(alone, got[own], rtol=0, atol=1e-12)


def test_qid_column_errors():
    import pandas as pd

    from ltr.models.pyfunc import as_frame, input_qid

    with pytest.raises(DataError, match=r"column 'qid' must hold integer query ids; row 1 has 2.5"):
        input_qid(pd.DataFrame({"f0": [1.0, 2.0], "qid": [1.0, 2.5]}))
    with pytest.raises(DataError, match=r"row 0 has 'a'"):
        input_qid(pd.DataFrame({"f0": [1.0], "qid": ["a"]}))
    with pytest.raises(DataError, match=r"qid must hold one integer per row \(2\)"):
        as_frame(np.eye(2), qid=[1])
    with pytest.raises(DataError, match=r"row 0 has True"):
        input_qid(pd.DataFrame({"f0": [1.0], "qid": [True]}))
    with pytest.raises(DataError, match=r"row 1 has 9007199254740992.0"):  # 2^53: ids may merge
        input_qid(pd.DataFrame({"f0": [1.0, 2.0], "qid": [1.0, 2.0**53]}))
    with pytest.raises(DataError, match="beyond the int64 range"):
        input_qid(pd.DataFrame({"f0": [1.0], "qid": np.array([2**63], dtype=np.uint64)}))


def test_input_matrix_errors():
    import pandas as pd

    from ltr.models.pyfunc import input_matrix

    with pytest.raises(DataError, match=r"missing feature column\(s\) \['f1'\]; expected columns f0 … f1"):
        input_matrix(pd.DataFrame({"f0": [1.0]}), 2)
    # called directly (not through MLflow), an array framed with integer columns is taken positionally
    assert input_matrix(pd.DataFrame(np.eye(2)), 2).tolist() == [[1.0, 0.0], [0.0, 1.0]]
