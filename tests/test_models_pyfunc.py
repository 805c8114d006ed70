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
    frame = as_frame(test.dense())
    for name, ranker in rankers.items():
        loaded = mlflow.pyfunc.load_model(uris[name])
        scores = np.asarray(loaded.predict(frame), dtype=np.float64)
        np.testing.assert_array_equal(scores, ranker.predict(test), err_msg=name)
    # columns may come in any order; a missing column is named (MLflow enforces the logged signature)
    shuffled = frame[frame.columns[::-1]]
    np.testing.assert_array_equal(np.asarray(loaded.predict(shuffled)), ranker.predict(test))
    with pytest.raises(Exception, match="f0"):
        loaded.predict(frame.drop(columns=["f0"]))


def test_pyfunc_round_trip_gives_identical_scores(store):
    round_trip(store, ["lambdamart", "linear"])


@pytest.mark.slow
def test_pyfunc_round_trip_every_engine(store):
    round_trip(store, ["lambdamart_xgb", "random_forest", "feature"])


def test_input_matrix_errors():
    import pandas as pd

    from ltr.models.pyfunc import input_matrix

    with pytest.raises(DataError, match=r"missing feature column\(s\) \['f1'\]; expected columns f0 … f1"):
        input_matrix(pd.DataFrame({"f0": [1.0]}), 2)
    # without a logged signature MLflow frames an array with integer columns: taken positionally
    assert input_matrix(pd.DataFrame(np.eye(2)), 2).tolist() == [[1.0, 0.0], [0.0, 1.0]]
