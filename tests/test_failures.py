"""Failures end runs honestly: Ctrl-C → KILLED, an exception → FAILED with its traceback, an unreachable
tracking server → a clear error before any work; whatever was logged before the failure stays."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import (
    PROJECT_ROOT,
    TINY_DATA,
    compose_config,
    default_sigint,
    free_port,
    store_client,
    train_main_in_process,
)

from ltr.core.errors import ConfigError
from ltr.models.engines.lgbm import LambdaMART
from ltr.train import run

TINY = [*TINY_DATA, "num_threads=1"]


class ExplodingLambdaMART(LambdaMART):
    """LambdaMART that raises in the middle of fitting (after iteration 5)."""

    name = "exploding_lambdamart"

    def fit(self, train, valid=None, *, on_iteration=None):  # noqa: ANN001, ANN201
        def boom(i: int, values: dict[str, float]) -> None:
            if on_iteration is not None:
                on_iteration(i, values)
            if i == 5:
                raise RuntimeError("boom at iteration 5")

        return super().fit(train, valid, on_iteration=boom)


@pytest.fixture
def exploding_model(monkeypatch):
    """Register the exploding model for one test only (the registry is process-wide)."""
    from ltr.models import registry

    monkeypatch.setitem(registry._REGISTRY, "exploding_lambdamart", f"{__name__}:ExplodingLambdaMART")


def test_exception_mid_fit_ends_run_failed_with_traceback_and_keeps_what_was_logged(
    tmp_path, exploding_model
):
    cfg = compose_config(
        ["+model=lambdamart", "model.name=exploding_lambdamart", *TINY, f"paths.root={tmp_path}"]
    )
    with pytest.raises(RuntimeError, match="boom at iteration 5"):
        run(cfg)
    client = store_client(tmp_path)
    (r,) = client.search_runs([client.get_experiment_by_name("ltr").experiment_id])
    assert r.info.status == "FAILED"
    assert "boom at iteration 5" in r.data.tags["error"]
    local = client.download_artifacts(r.info.run_id, "error/traceback.txt", str(tmp_path / "dl"))
    text = Path(local).read_text()
    assert "Traceback" in text and "RuntimeError: boom at iteration 5" in text
    # logged before the failure: params, resolved config, the curve up to the failing iteration
    assert r.data.params["model.name"] == "exploding_lambdamart"
    assert client.list_artifacts(r.info.run_id, "config")
    steps = [m.step for m in client.get_metric_history(r.info.run_id, "curve/valid/ndcg_at_10")]
    assert steps == [0, 1, 2, 3, 4, 5]


def test_unreachable_tracking_server_fails_fast_before_training(tmp_path):
    port = free_port()
    cfg = compose_config(
        ["+model=lambdamart", *TINY, f"paths.root={tmp_path}", f"tracking.uri=http://127.0.0.1:{port}"]
    )
    t0 = time.monotonic()
    with pytest.raises(
        ConfigError, match=f"tracking.uri=http://127.0.0.1:{port}: the MLflow server is unreachable"
    ):
        run(cfg)
    assert time.monotonic() - t0 < 10
    assert not (tmp_path / "data").exists()  # failed before the data was even generated


# The command-line cases below run ``python -m ltr.train``'s main in-process (train_main_in_process:
# the exit code and the stderr of the same code path); real processes: tests/test_fail_early.py.


def test_unreachable_server_cli_exits_2_with_message(tmp_path, monkeypatch, capsys):
    port = free_port()
    args = ["+model=lambdamart", f"tracking.uri=http://127.0.0.1:{port}"]
    assert train_main_in_process(args, tmp_path, monkeypatch, ci=False) == 2
    out, err = capsys.readouterr()
    assert "unreachable" in err and "tracking=none" in err
    assert "Training" not in out


def test_wrong_type_fails_at_the_command_line(tmp_path, monkeypatch, capsys):
    assert (
        train_main_in_process(["+model=lambdamart", "eval.bootstrap.B=many"], tmp_path, monkeypatch, ci=False)
        != 0
    )
    err = capsys.readouterr().err
    assert "eval.bootstrap.B" in err and "many" in err
    assert not (tmp_path / "mlflow.db").exists()


@pytest.mark.slow
def test_ctrl_c_mid_training_ends_run_killed_and_keeps_what_was_logged(tmp_path):
    """A real `python -m ltr.train` process gets SIGINT while boosting (a curve is already logged)."""
    args = [
        "+model=lambdamart",
        *TINY,
        "model.params.n_trees=100000",
        "model.params.learning_rate=0.0005",
        "model.early_stopping.patience=null",
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "ltr.train", *args],
        cwd=PROJECT_ROOT,
        env={**os.environ, "LTR_ROOT": str(tmp_path), "MLFLOW_DISABLE_TELEMETRY": "true"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=default_sigint,
    )
    client = store_client(tmp_path)
    deadline = time.monotonic() + 240
    run_id = None
    try:
        while time.monotonic() < deadline:  # wait until the live curve has reached the store
            time.sleep(1.0)
            if not (tmp_path / "mlflow.db").exists():
                continue
            exp = client.get_experiment_by_name("ltr")
            runs = client.search_runs([exp.experiment_id]) if exp else []
            if runs and client.get_metric_history(runs[0].info.run_id, "curve/valid/ndcg_at_10"):
                run_id = runs[0].info.run_id
                break
        assert run_id is not None, "training never logged a curve point"
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode != 0
    r = client.get_run(run_id)
    assert r.info.status == "KILLED", out
    assert "interrupted" in r.data.tags["error"]
    assert r.data.params["model.params.n_trees"] == "100000"
    assert client.list_artifacts(run_id, "config")
    assert len(client.get_metric_history(run_id, "curve/valid/ndcg_at_10")) >= 1


@pytest.mark.parametrize(
    ("uri", "says"),
    [
        ("ftp://example.org/runs", "unknown scheme 'ftp'"),
        ("htp://127.0.0.1:5000", "unknown scheme 'htp'"),
        ("localhost:5000", "unknown scheme 'localhost'"),
        ("sqlite:/runs.db", "unknown scheme 'sqlite'"),
        ("sqlite://runs.db", "three or four slashes"),
        ("http://", "names no server host"),
        ("http://ann:s3cr3t@", "names no server host"),
        ("sqlite:////sys/ltr/mlflow.db", "/sys/ltr/mlflow.db is not writable"),
        ("sqlite:////dev/null/mlflow.db", "/dev/null/mlflow.db is not writable"),
    ],
)
def test_bad_tracking_uri_is_one_config_error_naming_it(tmp_path, uri, says):
    from ltr.tracking.writer import make_tracker

    with pytest.raises(ConfigError, match=re.escape(says)) as info:
        make_tracker({"uri": uri}, tmp_path)
    assert str(info.value).startswith("tracking.uri=") and "s3cr3t" not in str(info.value)
    assert "\n" not in str(info.value)


def test_a_sqlite_uri_naming_no_file_is_refused_as_such(tmp_path, monkeypatch):
    """``check_store_uri('sqlite:///')`` names no file: the message says how a SQLite URI is spelled.
    (``make_tracker`` and ``import-fallback`` resolve the URI first, which turns ``sqlite:///`` into the
    current folder; the checker is public and called on its own too.)

    Kills mutant #3 (the ``rest == "/"`` test dropped: the current folder was checked and called unwritable).
    """
    from ltr.tracking.store import check_store_uri

    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=re.escape("sqlite:///: a SQLite store is sqlite:///relative")):
        check_store_uri("sqlite:///")


def test_sqlite_store_that_is_a_folder_is_one_config_error(tmp_path):
    from ltr.tracking.writer import make_tracker

    (tmp_path / "mlflow.db").mkdir()
    with pytest.raises(ConfigError, match=r"tracking.uri=sqlite:///.*mlflow.db is not writable"):
        make_tracker({"uri": f"sqlite:///{tmp_path}/mlflow.db"}, tmp_path)


@pytest.mark.parametrize(
    ("overrides", "says"),
    [
        (
            ["tracking.uri=ftp://example.org/runs"],
            "error: tracking.uri=ftp://example.org/runs: unknown scheme 'ftp'",
        ),
        (["tracking.uri=sqlite:////sys/ltr/mlflow.db"], "error: tracking.uri=sqlite:////sys/ltr/mlflow.db: "),
        (["tracking.uri=null"], "(its artifact folder): "),  # <root>/mlartifacts is a file here
    ],
)
def test_bad_or_read_only_store_cli_exits_2_with_one_line(tmp_path, overrides, says, monkeypatch, capsys):
    (tmp_path / "mlartifacts").write_text("not a folder")
    code = train_main_in_process(["+model=lambdamart", *overrides], tmp_path, monkeypatch, ci=False)
    out, err = capsys.readouterr()
    assert code == 2, err[-2000:]
    assert says in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    assert "Training" not in out


def test_store_that_is_not_an_mlflow_database_is_one_config_error(tmp_path):
    from ltr.tracking.writer import make_tracker

    (tmp_path / "mlflow.db").write_bytes(b"this is not a database\n" * 100)
    with pytest.raises(
        ConfigError, match=r"^tracking.uri=sqlite:///.*mlflow.db: cannot open the MLflow store \("
    ):
        make_tracker({"uri": f"sqlite:///{tmp_path}/mlflow.db"}, tmp_path)
