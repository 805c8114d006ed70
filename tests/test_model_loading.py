"""The one model loader (``ltr.tracking.loading``) as ``ltr.export`` and ``ltr.evaluate --model`` meet it
(issue 25, cases 3–5): deleted runs refused, unreachable servers fail in seconds, no credential is ever
printed, and a read never creates a store.

Stores are real SQLite stores with a model logged by ltr's own tracker; servers are real sockets on
127.0.0.1 (a closed port, a listening socket that never answers).
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import completed_in_process, free_port

from ltr.core.errors import ConfigError
from ltr.data.svmlight import write_svmlight
from ltr.data.synthetic import generate
from ltr.models import build_ranker
from ltr.tracking.loading import load_model
from ltr.tracking.store import mask_secrets

TRAIN = generate(30, seed=1, max_docs=15)
VALID = generate(10, seed=2, max_docs=15, qid_start=500)


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> dict[str, Any]:
    """A SQLite store with two logged lambdamart runs (one of them registered) and a test file."""
    from mlflow.tracking import MlflowClient

    from ltr.tracking.writer import Tracker

    root = tmp_path_factory.mktemp("store")
    uri = f"sqlite:///{root}/mlflow.db"
    tracker = Tracker(uri, "loading", artifact_root=root / "artifacts")
    cfg = {"name": "lambdamart", "params": {"n_trees": 3}, "early_stopping": {"patience": None}}
    runs = []
    for name in ("kept", "deleted", "registered"):
        ranker = build_ranker(cfg, seed=0, num_threads=1).fit(TRAIN, VALID)
        with tracker.start(run_name=name):
            tracker.log_ranker(ranker)
        runs.append(tracker.run_id)
    client = MlflowClient(tracking_uri=uri, registry_uri=uri)
    logged = {
        m.source_run_id: m
        for m in client.search_logged_models(
            experiment_ids=[client.get_experiment_by_name("loading").experiment_id]
        )
    }
    client.create_registered_model("loading-test")
    version = client.create_model_version(
        "loading-test", logged[runs[2]].artifact_location, run_id=runs[2], model_id=logged[runs[2]].model_id
    )
    client.delete_run(runs[1])
    client.delete_run(runs[2])
    data = root / "test.txt"
    write_svmlight(VALID, data)
    return {"uri": uri, "kept": runs[0], "deleted": runs[1], "registered": runs[2], "version": version.version,
            "data": data, "root": root, "client": client}  # fmt: skip


# --- case 3: a deleted run is not used --------------------------------------------------------------
def test_a_live_run_loads(store: dict[str, Any]) -> None:
    loaded = load_model(f"runs:/{store['kept']}/model", tracking_uri=store["uri"])
    assert loaded.ranker.name == "lambdamart"


@pytest.mark.parametrize(
    ("command", "source"),
    [
        ("ltr.export", "runs:/{deleted}/model"),
        ("ltr.evaluate", "runs:/{deleted}/model"),
        ("ltr.export", "models:/loading-test/{version}"),
        ("ltr.evaluate", "models:/loading-test/{version}"),
    ],
)
def test_a_deleted_run_is_refused_naming_it_and_how_to_restore_it(
    command: str, source: str, store: dict[str, Any], tmp_path: Path, capsys: Any
) -> None:
    source = source.format(**store)
    run_id = store["deleted"] if source.startswith("runs:/") else store["registered"]
    if command == "ltr.export":
        argv = [source, "--format", "onnx", "--out", str(tmp_path / "m.onnx")]
    else:
        argv = ["--data", str(store["data"]), "--model", source]
    proc = completed_in_process(command, [*argv, "--tracking-uri", store["uri"]], capsys)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    option = "MODEL" if command == "ltr.export" else "--model"
    assert proc.stderr.startswith(f"error: {option} {source}: run {run_id} is deleted")
    assert f"mlflow runs restore --run-id {run_id}" in proc.stderr
    assert not (tmp_path / "m.onnx").exists()


def test_a_run_of_a_deleted_experiment_is_refused(store: dict[str, Any], tmp_path: Path) -> None:
    from ltr.tracking.writer import Tracker

    client = store["client"]
    tracker = Tracker(store["uri"], "doomed", artifact_root=tmp_path / "artifacts")
    ranker = build_ranker({"name": "linear"}, seed=0, num_threads=1).fit(TRAIN, VALID)
    with tracker.start(run_name="in-doomed"):
        tracker.log_ranker(ranker)
    experiment = client.get_experiment_by_name("doomed")
    client.delete_experiment(experiment.experiment_id)
    with pytest.raises(ConfigError, match=r"which is deleted; restore it with .*mlflow experiments restore"):
        load_model(f"runs:/{tracker.run_id}/model", tracking_uri=store["uri"])


def test_a_restored_run_loads_again(store: dict[str, Any]) -> None:
    client = store["client"]
    client.restore_run(store["deleted"])
    try:
        assert (
            load_model(f"runs:/{store['deleted']}/model", tracking_uri=store["uri"]).ranker.name
            == "lambdamart"
        )
    finally:
        client.delete_run(store["deleted"])


# --- case 4: a server that does not answer fails in seconds -----------------------------------------
@pytest.fixture
def silent_server() -> Iterator[int]:
    """A socket on 127.0.0.1 that accepts connections (backlog) and never answers: its port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        yield s.getsockname()[1]


def _run(
    command: str, argv: list[str], cwd: Path, timeout: float = 60
) -> tuple[subprocess.CompletedProcess, float]:
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", command, *argv], cwd=cwd, capture_output=True, text=True, timeout=timeout
    )
    return proc, time.monotonic() - start


@pytest.mark.parametrize("command", ["ltr.export", "ltr.evaluate"])
@pytest.mark.parametrize("kind", ["closed", pytest.param("silent", marks=pytest.mark.slow)])
@pytest.mark.parametrize(
    "source",
    [
        "runs:/0123456789abcdef0123456789abcdef/model",
        "mlflow-artifacts:/1/0123456789abcdef0123456789abcdef/artifacts/model",
    ],
)
def test_an_unreachable_server_fails_within_seconds(
    command: str, kind: str, source: str, silent_server: int, store: dict[str, Any], tmp_path: Path
) -> None:
    """Real processes (on main ``mlflow-artifacts:/`` against a silent server hung for minutes)."""
    port = silent_server if kind == "silent" else free_port()
    uri = f"http://alice:S3cret@127.0.0.1:{port}"
    if command == "ltr.export":
        argv = [source, "--format", "onnx", "--out", "m.onnx", "--tracking-uri", uri]
    else:
        argv = ["--data", str(store["data"]), "--model", source, "--tracking-uri", uri]
    proc, took = _run(command, argv, tmp_path)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.startswith(
        f"error: --tracking-uri=http://127.0.0.1:{port}: the MLflow server is unreachable"
    )
    assert proc.stderr.count("\n") == 1 and "S3cret" not in proc.stderr and "tracking=none" not in proc.stderr
    assert took < 20, took  # the reachability check's own bound is 5 s; the rest is start-up


@pytest.mark.slow
def test_an_artifact_server_named_in_the_source_is_checked_too(silent_server: int, tmp_path: Path) -> None:
    """A real process: on main it waited for the silent server for minutes."""
    source = f"mlflow-artifacts://bob:S3cret@127.0.0.1:{silent_server}/1/abc/artifacts/model"
    proc, took = _run("ltr.export", [source, "--format", "onnx", "--out", "m.onnx"], tmp_path, timeout=60)
    assert took < 20, took
    assert proc.returncode == 2 and "its artifact server" in proc.stderr and "unreachable" in proc.stderr
    assert "S3cret" not in proc.stderr and proc.stderr.count("\n") == 1


# --- case 5: no credential printed; a read creates no store -----------------------------------------
@pytest.mark.parametrize(
    ("uri", "secret"),
    [
        ("http://alice:PW1234@127.0.0.1:{port}", "PW1234"),
        ("http://alice:p/w0rd@127.0.0.1:{port}", "w0rd"),  # an unencoded '/' in the password
        ("http://alice:pa?ss#w0rd@127.0.0.1:{port}", "w0rd"),
        ("http://127.0.0.1:{port}/?token=T0KEN", "T0KEN"),
        ("https://127.0.0.1:{port}/mlflow?api_key=K3Y&x=1", "K3Y"),
    ],
)
def test_credentials_in_the_tracking_uri_are_never_printed(
    uri: str, secret: str, tmp_path: Path, capsys: Any
) -> None:
    argv = ["runs:/abc/model", "--format", "onnx", "--out", str(tmp_path / "m.onnx")]
    proc = completed_in_process("ltr.export", [*argv, "--tracking-uri", uri.format(port=free_port())], capsys)
    assert proc.returncode == 2 and proc.stderr.startswith("error: --tracking-uri=")
    assert proc.stderr.count("\n") == 1 and secret not in proc.stderr + proc.stdout


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("http://ann:s3cr3t@h:5000", "http://ann:***@h:5000"),
        ("https://:s3cr3t@h", "https://:***@h"),
        ("http://ann:a/b?c#d@h:1/p", "http://ann:***@h:1/p"),
        ("postgresql://u:p%40ss@db/optuna", "postgresql://u:***@db/optuna"),
        ("http://h/x?token=abc&n=1", "http://h/x?token=***&n=1"),
        (
            "s3://b/k?X-Amz-Credential=AKIA&X-Amz-Signature=f00",
            "s3://b/k?X-Amz-Credential=***&X-Amz-Signature=***",
        ),
        (
            "https://a.blob.core.windows.net/c?sv=1&sig=abc%2F",
            "https://a.blob.core.windows.net/c?sv=1&sig=***",
        ),
        ("http://h:5000/?access_token=x;password=y", "http://h:5000/?access_token=***;password=***"),
        ("runs:/abc/model and http://h:5000", "runs:/abc/model and http://h:5000"),
    ],
)
def test_mask_secrets(text: str, shown: str) -> None:
    assert mask_secrets(text) == shown


@pytest.mark.parametrize("source", ["runs:/abc/model", "models:/ranker/1"])
def test_a_lookup_without_a_store_creates_none(
    source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LTR_ROOT", raising=False)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    proc = completed_in_process("ltr.export", [source, "--format", "onnx", "--out", "m.onnx"], capsys)
    assert proc.returncode == 2
    assert f"no MLflow store at {tmp_path.resolve() / 'mlflow.db'} (a read never creates one)" in proc.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("uri", "message"), [
    ("sqlite:///{tmp}/mlflow.db", "is an empty file, not an MLflow store"),
    ("sqlite:///{tmp}/notes.db", "is not an SQLite database"),
    ("{tmp}/mlruns", "no MLflow file store at"),
    ("file://{tmp}/mlruns", "no MLflow file store at"),
])  # fmt: skip
def test_an_empty_or_foreign_store_file_is_left_alone(
    uri: str, message: str, tmp_path: Path, capsys: Any
) -> None:
    (tmp_path / "mlflow.db").write_bytes(b"")
    (tmp_path / "notes.db").write_text("my notes\n")
    (tmp_path / "x.txt").write_text("1 qid:1 1:0.5\n0 qid:1 1:0.1\n")  # --data is checked first: a real file
    before = sorted((p.name, p.read_bytes()) for p in tmp_path.iterdir())
    argv = [
        "--data",
        str(tmp_path / "x.txt"),
        "--model",
        "runs:/abc/model",
        "--tracking-uri",
        uri.format(tmp=tmp_path),
    ]
    proc = completed_in_process("ltr.evaluate", argv, capsys)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert sorted((p.name, p.read_bytes()) for p in tmp_path.iterdir()) == before
