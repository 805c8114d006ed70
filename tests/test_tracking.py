"""The MLflow tracker: retries on SQLite locks and lost insert races, child runs, Parquet artifacts, statuses, NullTracker parity."""

from __future__ import annotations

import inspect
import os
import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from helpers import PAUSED_RUN, PROJECT_ROOT, TINY_DATA, ForwardingProxy, cli_env
from mlflow.tracking import MlflowClient

from ltr.core.errors import ConfigError, NotFittedError
from ltr.models.pyfunc import as_frame
from ltr.tracking.reader import download_frame, find_runs
from ltr.tracking.store import _INSERT_RACE_RETRIES, is_connection_error, retry_call
from ltr.tracking.writer import TAG_FALLBACK_FOR, NullTracker, SplitDataset, Tracker, flatten_params


def test_a_password_without_a_user_name_is_masked():
    """A token-only server URI (``https://:TOKEN@host``, an empty user name) hides the token like any password.

    Kills mutant #1 (the masking pattern requiring a non-empty user name: the token was written in clear).
    """
    from ltr.tracking.store import mask_secrets

    assert mask_secrets("tracking.uri=https://:t0ken@mlflow.example.org seed=1") == (
        "tracking.uri=https://:***@mlflow.example.org seed=1"
    )


def test_credentials_with_an_unencoded_at_sign_are_split_like_urllib_reads_them():
    """``http://ann:p@ss@host:5000``: the host follows the *last* ``@``, as ``urllib.parse`` reads it
    (username ``ann``, password ``p@ss``).

    Kills mutant #2 (``split_credentials`` splitting at the first ``@``: password ``p``, host ``ss@host``).
    """
    from urllib.parse import urlsplit

    from ltr.tracking.store import split_credentials

    uri = "http://ann:p@ss@127.0.0.1:5000/path"
    parts = urlsplit(uri)
    assert (parts.username, parts.password, parts.hostname) == ("ann", "p@ss", "127.0.0.1")
    assert split_credentials(uri) == ("http://127.0.0.1:5000/path", "ann", "p@ss")


def test_a_password_with_an_unencoded_at_sign_is_masked_whole():
    """The password ``p@ss`` that :func:`split_credentials` hands to MLflow is hidden entirely: before the
    fix the mask stopped at its first ``@`` and params, tags and messages showed ``ann:***@ss@127.0.0.1``.
    Other URIs in the same text, and ``@`` after the authority, are left as they are.
    """
    from ltr.tracking.store import mask_secrets

    text = "tracking.uri=http://ann:p@ss@127.0.0.1:5000/path?to=a@b x=http://b:c@h2 mail=u@example.org"
    assert mask_secrets(text) == (
        "tracking.uri=http://ann:***@127.0.0.1:5000/path?to=a@b x=http://b:***@h2 mail=u@example.org"
    )
    assert mask_secrets("http://h:5000?x=a:b@c") == "http://h:5000?x=a:b@c"  # no userinfo: nothing to hide


def test_retry_backs_off_on_sqlite_lock_then_succeeds():
    calls = []

    def flaky():
        calls.append(1)
        if len(calls) < 3:
            raise sqlite3.OperationalError("database is locked")
        return "ok"

    assert retry_call(flaky) == "ok" and len(calls) == 3


def test_retry_does_not_hide_other_errors():
    calls = []

    def broken():
        calls.append(1)
        raise ValueError("bad value")

    with pytest.raises(ValueError, match="bad value"):
        retry_call(broken)
    assert len(calls) == 1


#: what a PostgreSQL-backed ``mlflow server`` answered when two processes logged one new dataset at once
#: (captured from a real server; the HTTP answer is 400 with this body)
DATASET_RACE = {
    "error_code": "BAD_REQUEST",
    "message": (
        '(psycopg2.errors.UniqueViolation) duplicate key value violates unique constraint "dataset_pk"\n'
        "DETAIL:  Key (experiment_id, name, digest)=(1, d7-train, 9bb70c01) already exists.\n\n"
        "[SQL: INSERT INTO datasets (dataset_uuid, experiment_id, name, digest, dataset_source_type, "
        "dataset_source, dataset_schema, dataset_profile) VALUES (%(dataset_uuid__0)s, ...)]\n"
        "(Background on this error at: https://sqlalche.me/e/21/gkpj)"
    ),
}


def _failing(error: BaseException, times: int) -> tuple[Any, list[int]]:
    calls: list[int] = []

    def call() -> str:
        calls.append(1)
        if len(calls) <= times:
            raise error
        return "ok"

    return call, calls


def test_retry_calls_again_after_a_lost_get_or_create_insert():
    from mlflow.exceptions import RestException

    call, calls = _failing(RestException(DATASET_RACE), times=1)
    assert retry_call(call) == "ok" and len(calls) == 2
    assert not is_connection_error(RestException(DATASET_RACE))  # never a reason to leave the server


@pytest.mark.parametrize(
    "error",
    [
        # the same unique-key text, but MLflow's final answer: the experiment name is taken
        {
            "error_code": "RESOURCE_ALREADY_EXISTS",
            "message": "Experiment(name=x) already exists. " + DATASET_RACE["message"],
        },
        {"error_code": "INVALID_PARAMETER_VALUE", "message": "Changing param values is not allowed."},
        {"error_code": "BAD_REQUEST", "message": "(psycopg2.errors.NotNullViolation) null value in column"},
    ],
    ids=["name taken", "param changed", "other database error"],
)
def test_retry_leaves_other_server_answers_to_the_caller(error):
    from mlflow.exceptions import RestException

    call, calls = _failing(RestException(error), times=1)
    with pytest.raises(RestException, match=re.escape(error["message"][:20])):
        retry_call(call)
    assert len(calls) == 1


def test_retry_gives_up_on_a_duplicate_that_persists():
    from mlflow.exceptions import RestException

    call, calls = _failing(RestException(DATASET_RACE), times=100)
    with pytest.raises(RestException, match="duplicate key value"):
        retry_call(call)
    assert len(calls) == 1 + _INSERT_RACE_RETRIES == 4


def _lose_the_first_race(endpoint: str, answered: list[str]) -> Any:
    """A :class:`ForwardingProxy` intercept: the first request to ``endpoint`` of each kind (the JSON keys
    it sets) gets the 400 a PostgreSQL-backed server answers when another client inserted the row first
    (:data:`DATASET_RACE`); ``answered`` collects those kinds."""
    import json

    def intercept(handler: Any, body: bytes | None) -> bool:
        if not handler.path.endswith(endpoint):
            return False
        kind = ",".join(sorted(k for k, v in json.loads(body or b"{}").items() if v and k != "run_id"))
        if kind in answered:
            return False
        answered.append(kind)
        data = json.dumps(DATASET_RACE).encode()
        handler.send_response(400)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)
        return True

    return intercept


@pytest.mark.slow  # a race on a real server: CI only (retry_call is tested in-process)
def test_a_lost_dataset_race_on_a_server_is_retried_and_the_run_stays_there(
    tmp_path, mlflow_session_server, experiment_name
):
    """A real server behind a proxy that answers the first ``log-inputs`` with the 400 a PostgreSQL-backed
    server gave when another process inserted the same dataset first: the tracker calls again, the
    datasets are on the server's run, and nothing moved to the fallback store."""
    upstream = mlflow_session_server
    answered: list[str] = []
    proxy = ForwardingProxy(upstream, intercept=_lose_the_first_race("/runs/log-inputs", answered))
    try:
        tracker = Tracker(proxy.url, experiment_name, fallback_root=tmp_path / "fallback")
        with tracker.start(run_name="racer"):
            tracker.log_datasets([SplitDataset("tiny-train", "abc123", "/data/train.txt", "train")])
    finally:
        proxy.close()
    assert answered == ["datasets"] and tracker.fallback_from is None and not (tmp_path / "fallback").exists()
    (logged,) = MlflowClient(upstream).get_run(tracker.run_id).inputs.dataset_inputs
    assert (logged.dataset.name, logged.dataset.digest) == ("tiny-train", "abc123")


@pytest.mark.slow  # a race on a real server: CI only (retry_call is tested in-process)
def test_sweep_workers_promoting_on_one_parent_retry_a_lost_race(
    tmp_path, mlflow_session_server, experiment_name
):
    """At the end of a sweep every worker promotes the best trial on the shared parent run, so two may add
    the same new metric, param or tag keys at once. A proxy answers the first metrics, params and tags
    ``log-batch`` with the duplicate-key 400 of a lost race: :func:`ltr.sweep.runs.promote` calls again,
    and the parent holds the counts as metrics and the best trial's parameter as a param (not a tag)."""
    import optuna

    from ltr.sweep.runs import promote

    upstream = mlflow_session_server
    answered: list[str] = []
    proxy = ForwardingProxy(upstream, intercept=_lose_the_first_race("/runs/log-batch", answered))
    try:
        study = optuna.create_study(direction="maximize")
        for leaves, value in ((8, 0.5), (16, 0.7)):
            study.add_trial(
                optuna.trial.create_trial(
                    params={"model.params.num_leaves": leaves},
                    distributions={"model.params.num_leaves": optuna.distributions.IntDistribution(8, 64)},
                    value=value,
                )
            )
        tracker = Tracker(proxy.url, experiment_name)
        parent = tracker.client.create_run(tracker.experiment_id, run_name="sweep-parent").info.run_id
        promote(study, tracker, parent, tmp_path)
    finally:
        proxy.close()
    assert answered == ["metrics", "params", "tags"]
    run = MlflowClient(upstream).get_run(parent)
    assert run.data.metrics["sweep/n_complete"] == 2 and run.data.params == {
        "best.model.params.num_leaves": "16"
    }
    assert run.data.tags["ltr.sweep.best_trial"] == "1" and run.info.status == "FINISHED"


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


@pytest.mark.parametrize("user_uri", [None, "sqlite:///users-own.db"])
def test_mlflow_process_state_is_left_as_found(user_uri, tmp_path, monkeypatch):
    """A run or a model load in a user's process leaves MLflow's URIs and their variables as it found them.

    Restoring with ``set_tracking_uri(get_tracking_uri())`` pins MLflow's resolved default and exports
    it as ``MLFLOW_TRACKING_URI`` to every later subprocess (a registered model then lands in the wrong
    store: CI caught it in test_export).
    """
    import mlflow
    from mlflow.tracking._model_registry import utils as registry_utils
    from mlflow.tracking._tracking_service import utils as tracking_utils

    from ltr.tracking.loading import load_model

    for key in ("MLFLOW_TRACKING_URI", "MLFLOW_REGISTRY_URI"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setattr(tracking_utils, "_tracking_uri", None)
    monkeypatch.setattr(registry_utils, "_registry_uri", None)
    if user_uri:
        mlflow.set_tracking_uri(user_uri)
    before = (
        tracking_utils._tracking_uri,
        registry_utils._registry_uri,
        os.environ.get("MLFLOW_TRACKING_URI"),
    )
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    parent = Tracker(uri, "exp", artifact_root=tmp_path / "art")
    with parent.start(run_name="parent"):
        assert mlflow.get_tracking_uri() == uri  # the fluent API writes to the run's store meanwhile
        child = parent.spawn()
        with child.start(run_name="child", parent_run_id=parent.run_id):
            pass
        assert mlflow.get_tracking_uri() == uri
    for source in (f"runs:/{parent.run_id}/model", "models:/nothing/1"):
        with pytest.raises(ConfigError, match="cannot (load it from|find it in)"):
            load_model(source, tracking_uri=uri)
    after = (
        tracking_utils._tracking_uri,
        registry_utils._registry_uri,
        os.environ.get("MLFLOW_TRACKING_URI"),
    )
    assert after == before
    assert "MLFLOW_REGISTRY_URI" not in os.environ


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


# --- a real MLflow server: credentials, a server that dies mid-run, the fallback store ----------------


@pytest.mark.slow  # a real server killed mid-fit: CI only (the fallback logic is also tested in-process)
def test_server_killed_mid_training_the_run_lands_in_the_fallback_store_and_imports(
    tmp_path, mlflow_server, experiment_name, capsys
):
    """Kill the MLflow server while `python -m ltr.train` boosts: the process ends in bounded time,
    exit 0, with params, curves, metrics, artifacts and model in <root>/mlflow-fallback.db, and
    `python -m ltr.tracking import-fallback` brings the run (model included) into another store.

    The training process pauses in round 10 of 40 (tests/paused_run.py: a file handshake, no timing)
    with rounds 0..10 on the server; the server is killed (its proxy: connection refused, requests
    in progress reset) and training resumes, so the server dies mid-fit every time."""
    server_proxy, url = mlflow_server
    root = tmp_path / "work"
    handshake = tmp_path / "handshake"
    handshake.mkdir()
    n_trees, pause_at = 40, 10
    args = [
        "+model=lambdamart",
        *TINY_DATA,
        "num_threads=1",
        f"model.params.n_trees={n_trees}",
        "model.params.learning_rate=0.001",
        "model.early_stopping.patience=null",
        f"tracking.uri={url}",
        f"tracking.experiment={experiment_name}",
    ]
    train = subprocess.Popen(
        [sys.executable, PAUSED_RUN, str(handshake), str(pause_at), "ltr.train", *args],
        cwd=PROJECT_ROOT,
        env=cli_env(root),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 300
        while not (handshake / "paused").exists() and time.monotonic() < deadline and train.poll() is None:
            time.sleep(0.1)
        if not (handshake / "paused").exists():
            train.kill()
            pytest.fail("training never reached round 10:\n" + train.communicate()[1][-3000:])
        server = MlflowClient(url)
        (on_server,) = server.search_runs([server.get_experiment_by_name(experiment_name).experiment_id])
        server_run = on_server.info.run_id
        sent = [m.step for m in server.get_metric_history(server_run, "curve/valid/ndcg_at_10")]
        assert sent == list(range(pause_at + 1))  # training is in progress, its first points on the server
        server_proxy.kill()
        killed_at = time.monotonic()
        (handshake / "resume").touch()
        out, err = train.communicate(timeout=400)
        elapsed = time.monotonic() - killed_at
    finally:
        if train.poll() is None:
            train.kill()
            train.wait()
    assert train.returncode == 0, err[-3000:]
    assert elapsed < 240, f"{elapsed:.0f} s after the server died"
    store = root / "mlflow-fallback.db"
    assert "stopped answering" in err and f"local store {store}" in err
    assert f"-m ltr.tracking import-fallback {store} --to {url}" in err
    assert "Traceback" not in err

    fallback = MlflowClient(f"sqlite:///{store}")
    (r,) = fallback.search_runs([fallback.get_experiment_by_name(experiment_name).experiment_id])
    run_id = r.info.run_id
    assert r.info.status == "FINISHED"
    assert r.data.tags[TAG_FALLBACK_FOR] == url and r.data.tags["ltr.fallback.server_run_id"] == server_run
    assert r.data.params["model.params.n_trees"] == str(n_trees)
    assert r.data.params["tracking.uri"] == url
    assert 0.0 <= r.data.metrics["test/ndcg_at_10"] <= 1.0
    assert "metric_conventions.gain" in r.data.params  # logged after training, after the kill
    steps = [m.step for m in fallback.get_metric_history(run_id, "curve/valid/ndcg_at_10")]
    assert steps == list(range(n_trees))  # the points sent before the kill were replayed, none lost
    assert {a.path for a in fallback.list_artifacts(run_id)} >= {"config", "per_query", "plots"}
    assert f"run {run_id}" in out  # the console names the run where it really is

    target = f"sqlite:///{tmp_path}/imported.db"
    imported = import_fallback_cli(str(store), "--to", target)
    assert imported.returncode == 0, imported.stderr[-3000:]
    client = MlflowClient(target)
    (new,) = client.search_runs([client.get_experiment_by_name(experiment_name).experiment_id])
    assert f"imported run {run_id} as run {new.info.run_id}" in imported.stdout
    assert new.info.status == "FINISHED" and new.info.run_name == r.info.run_name
    assert new.data.params == r.data.params
    assert new.data.metrics == r.data.metrics
    assert len(client.get_metric_history(new.info.run_id, "curve/valid/ndcg_at_10")) == n_trees
    assert {a.path for a in client.list_artifacts(new.info.run_id)} >= {"config", "per_query", "plots"}
    import mlflow

    try:
        mlflow.set_tracking_uri(target)
        model = mlflow.pyfunc.load_model(f"runs:/{new.info.run_id}/model")
        mlflow.set_tracking_uri(f"sqlite:///{store}")
        original = mlflow.pyfunc.load_model(f"runs:/{run_id}/model")
    finally:
        mlflow.set_tracking_uri(None)
    features = [c.name for c in model.metadata.get_input_schema().inputs if c.name != "qid"]  # f1 … fn
    X = np.random.default_rng(0).random((4, len(features)))
    frame = as_frame(X, qid=np.array([1, 1, 2, 2]))
    np.testing.assert_allclose(np.ravel(model.predict(frame)), np.ravel(original.predict(frame)))
    # the same command again, and on a missing store: in-process (the real process was shown above)
    from ltr.tracking.__main__ import main as tracking_main

    capsys.readouterr()
    assert tracking_main(["import-fallback", str(store), "--to", target]) == 0
    assert "0 run(s) imported" in capsys.readouterr().out  # imported runs are not copied twice
    assert tracking_main(["import-fallback", str(tmp_path / "nowhere.db"), "--to", target]) == 2
    missing = capsys.readouterr().err
    assert missing.startswith("error: import-fallback: no fallback store") and missing.count("\n") == 1


def import_fallback_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m ltr.tracking import-fallback ARGS`` as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "ltr.tracking", "import-fallback", *args],
        cwd=PROJECT_ROOT,
        env=cli_env(PROJECT_ROOT),
        capture_output=True,
        text=True,
        timeout=300,
    )


class BasicAuthProxy(ForwardingProxy):
    """A real HTTP proxy in front of a server that answers 401 unless ``Authorization`` is ``user:password``."""

    def __init__(self, upstream: str, user: str, password: str) -> None:
        import base64

        expected = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
        self.authorized, self.refused = 0, 0

        def check(handler: Any, body: bytes | None) -> bool:
            if handler.headers.get("Authorization") != expected:
                self.refused += 1
                handler.send_response(401)
                handler.send_header("WWW-Authenticate", 'Basic realm="mlflow"')
                handler.send_header("Content-Length", "0")
                handler.end_headers()
                return True
            self.authorized += 1
            return False

        super().__init__(upstream, check, drop_headers=("authorization",))


@pytest.mark.slow  # a real server behind an authenticating proxy: CI only (masking is tested in-process)
def test_credentials_in_the_server_uri_reach_the_server_and_are_never_shown(
    tmp_path, mlflow_session_server, experiment_name
):
    """``tracking.uri=http://user:secret@host:port``: every request carries the credentials (a proxy
    refuses any other), and the secret is in no output, param, tag or config artifact."""
    url = mlflow_session_server
    proxy = BasicAuthProxy(url, "ann", "s3cr3t")
    try:
        uri = f"http://ann:s3cr3t@127.0.0.1:{proxy.port}"
        proc = subprocess.run(
            [sys.executable, "-m", "ltr.train", "+model=lambdamart", *TINY_DATA, "num_threads=1",
             "model.params.n_trees=5", f"tracking.uri={uri}", f"tracking.experiment={experiment_name}"],
            cwd=PROJECT_ROOT, env=cli_env(tmp_path / "work"), capture_output=True, text=True, timeout=600,
        )  # fmt: skip
    finally:
        proxy.close()
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proxy.authorized > 0 and proxy.refused == 0
    assert "s3cr3t" not in proc.stdout + proc.stderr
    client = MlflowClient(url)
    (r,) = client.search_runs([client.get_experiment_by_name(experiment_name).experiment_id])
    assert r.info.status == "FINISHED"
    assert r.data.params["tracking.uri"] == f"http://ann:***@127.0.0.1:{proxy.port}"
    written = [*r.data.params.values(), *r.data.tags.values()]
    assert not [v for v in written if "s3cr3t" in v]
    assert any("tracking.uri=http://ann:***@" in v for v in r.data.tags.values())  # the command tags
    local = client.download_artifacts(r.info.run_id, "config/resolved.yaml", str(tmp_path / "dl"))
    assert "s3cr3t" not in Path(local).read_text() and "ann:***@" in Path(local).read_text()


def test_wrong_credentials_fail_before_training_with_one_masked_line(tmp_path, mlflow_session_server):
    url = mlflow_session_server
    proxy = BasicAuthProxy(url, "ann", "s3cr3t")
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "ltr.train", "+model=lambdamart", *TINY_DATA,
             f"tracking.uri=http://ann:wrong@127.0.0.1:{proxy.port}"],
            cwd=PROJECT_ROOT, env=cli_env(tmp_path), capture_output=True, text=True, timeout=600,
        )  # fmt: skip
    finally:
        proxy.close()
    assert proc.returncode == 2
    assert "wrong" not in proc.stdout + proc.stderr
    assert proc.stderr.startswith(
        f"error: tracking.uri=http://127.0.0.1:{proxy.port}: the MLflow server refused"
    )
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "data").exists()  # before any data was generated


@pytest.mark.parametrize(
    "kill_before",
    [pytest.param("start", marks=pytest.mark.slow), pytest.param("metrics", marks=pytest.mark.slow), "end"],
)  # one kill point in the fast suite, all three in CI
def test_server_dying_between_calls_or_before_the_run_ends_loses_nothing(
    tmp_path, mlflow_server, monkeypatch, kill_before, experiment_name
):
    """In-process: the server dies before a later call (or only before the run is ended): the fallback
    run holds everything, the call that failed included, and ends FINISHED; the import command is printed."""
    from ltr.tracking.store import HTTP_LIMITS

    for name, value in HTTP_LIMITS.items():
        monkeypatch.setenv(name, value)
    server, url = mlflow_server
    note = tmp_path / "note.txt"
    note.write_text("hello")
    tracker = Tracker(url, experiment_name, fallback_root=tmp_path / "work")
    t0 = time.monotonic()
    if kill_before == "start":
        server.kill()
    with tracker.start(run_name="r", tags={"ltr.command": "x tracking.uri=http://a:pw@h:1"}):
        tracker.log_params({"p": 1})
        tracker.log_artifact(note, "notes")
        tracker.log_iteration_values([(0, {"valid/ndcg@10": 0.25})])
        if kill_before == "metrics":
            server.kill()
        tracker.log_metrics({"test/ndcg_at_10": 0.5})
        if kill_before == "end":
            server.kill()
    assert time.monotonic() - t0 < 120
    store = tmp_path / "work" / "mlflow-fallback.db"
    assert tracker.uri == f"sqlite:///{store}" and tracker.fallback_from == url
    client = MlflowClient(tracker.uri)
    (run,) = client.search_runs([tracker.experiment_id])  # one run, however late the server died
    assert run.info.run_id == tracker.run_id
    assert run.info.status == "FINISHED" and run.info.run_name == "r"
    assert run.data.params == {"p": "1"} and run.data.metrics["test/ndcg_at_10"] == 0.5
    assert run.data.tags["ltr.command"] == "x tracking.uri=http://a:***@h:1"
    assert [m.value for m in client.get_metric_history(tracker.run_id, "curve/valid/ndcg_at_10")] == [0.25]
    local = client.download_artifacts(tracker.run_id, "notes/note.txt", str(tmp_path / "dl"))
    assert Path(local).read_text() == "hello"
