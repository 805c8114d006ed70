"""The MLflow tracker: retries on SQLite locks, child runs, Parquet artifacts, statuses, NullTracker parity."""

from __future__ import annotations

import inspect
import sqlite3

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from ltr.errors import ConfigError, NotFittedError
from ltr.tracking import NullTracker, Tracker, _retry, download_frame, find_runs, flatten_params


def test_retry_backs_off_on_sqlite_lock_then_succeeds():
    calls = []

    def flaky():
        calls.append(1)
        if len(calls) < 3:
            raise sqlite3.OperationalError("database is locked")
        return "ok"

    assert _retry(flaky) == "ok" and len(calls) == 3


def test_retry_does_not_hide_other_errors():
    calls = []

    def broken():
        calls.append(1)
        raise ValueError("bad value")

    with pytest.raises(ValueError, match="bad value"):
        _retry(broken)
    assert len(calls) == 1


def test_null_tracker_has_every_public_method_of_tracker():
    public = {n for n, _ in inspect.getmembers(Tracker, inspect.isfunction) if not n.startswith("_")}
    assert public <= {n for n in dir(NullTracker) if not n.startswith("_")}


def test_flatten_params_nested_lists_and_empty():
    assert flatten_params({"a": {"b": [1, 2], "c": {}}, "d": None}) == {
        "a.b": "[1, 2]",
        "a.c": "{}",
        "d": "None",
    }


def test_child_runs_parquet_and_statuses(tmp_path):
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    parent = Tracker(uri, "exp", artifact_root=tmp_path / "art")
    frame = pd.DataFrame({"qid": [3, 1], "ndcg@10": [0.5, float("nan")]})
    with parent.start(run_name="parent"):
        child = parent.spawn()
        with child.start(run_name="child", parent_run_id=parent.run_id):
            child.log_frame(frame, "per_query/test.parquet")
            child.log_iteration_values([(0, {"valid/ndcg@10": 0.1}), (1, {"valid/ndcg@10": 0.2})])
        with pytest.raises(RuntimeError), child.start(run_name="bad", parent_run_id=parent.run_id):
            raise RuntimeError("nope")
    client = MlflowClient(uri)
    runs = {r.info.run_name: r for r in client.search_runs([parent.experiment_id])}
    assert runs["child"].data.tags["mlflow.parentRunId"] == runs["parent"].info.run_id
    assert (runs["parent"].info.status, runs["child"].info.status, runs["bad"].info.status) == (
        "FINISHED",
        "FINISHED",
        "FAILED",
    )
    assert [
        m.value for m in client.get_metric_history(runs["child"].info.run_id, "curve/valid/ndcg_at_10")
    ] == [0.1, 0.2]
    pd.testing.assert_frame_equal(
        download_frame(uri, runs["child"].info.run_id, "per_query/test.parquet"), frame
    )
    # selection for --from-mlflow: by parent (finished children only), by name, unknown name
    assert [r["name"] for r in find_runs(uri, parent_run_id=runs["parent"].info.run_id)] == ["child"]
    assert [r["run_id"] for r in find_runs(uri, run_names=["child"], experiment="exp")] == [
        runs["child"].info.run_id
    ]
    with pytest.raises(ConfigError, match="no finished run named 'zzz'"):
        find_runs(uri, run_names=["zzz"])
    with pytest.raises(ConfigError, match="has no artifact"):
        download_frame(uri, runs["parent"].info.run_id, "per_query/test.parquet")


# --- the ranker says how it is logged ---------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_splits():
    from ltr.data.synthetic import generate

    return generate(30, seed=1, max_docs=20), generate(10, seed=2, max_docs=20, qid_start=1000)


@pytest.mark.parametrize("model", ["lambdamart", "lambdamart_xgb", "catboost", "linear", "feature"])
def test_every_ranker_is_logged_through_ltr_pyfunc(model, tiny_splits):
    """One input for every logged model: no ranker asks for a native flavour (which rejects ``qid``)."""
    from ltr.models import build_ranker

    if model == "catboost":
        pytest.importorskip("catboost")
    params = {"n_trees": 3} if model in {"lambdamart", "lambdamart_xgb", "catboost"} else {}
    ranker = build_ranker({"name": model, "params": params}, seed=1, num_threads=1)
    with pytest.raises(NotFittedError, match="is not fitted yet"):
        ranker.logged_model()
    ranker.fit(*tiny_splits)
    assert ranker.logged_model() == ("pyfunc", ranker)


def test_ensembles_are_logged_as_pyfunc(tiny_splits):
    from ltr.models import build_ranker

    member = {"model": "lambdamart", "params": {"n_trees": 2}, "early_stopping": {"patience": None}}
    ensemble = build_ranker({"name": "ensemble_mean", "members": [member, member], "n_jobs": 1}, seed=1)
    with pytest.raises(NotFittedError, match="is not fitted yet"):
        ensemble.logged_model()
    ensemble.fit(*tiny_splits)
    assert ensemble.logged_model() == ("pyfunc", ensemble)


def test_unknown_flavor_is_refused_naming_the_ranker(tmp_path):
    class OnnxRanker:
        def logged_model(self):  # noqa: ANN202
            return "onnx", None

    tracker = Tracker(f"sqlite:///{tmp_path}/mlflow.db", "exp", artifact_root=tmp_path / "art")
    with (
        tracker.start(run_name="r"),
        pytest.raises(ValueError, match="OnnxRanker.*'onnx'; known: pyfunc"),
    ):
        tracker.log_ranker(OnnxRanker())
