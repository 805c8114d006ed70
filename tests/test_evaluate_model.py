"""``python -m ltr.evaluate --data … --model SOURCE``: score a logged or saved ``ltr`` model and evaluate it.

The logged model comes from a real ``python -m ltr.train`` run into a real SQLite MLflow store; its
scores are checked against LightGBM's own booster (the native model file inside the logged model)
and MLflow's pyfunc loader, its metrics against what the training run logged for the same split.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers import TINY_DATA, quick_model, run_train_cli, store_client, write_letor
from sklearn.datasets import load_svmlight_file

from ltr.evaluate import main
from ltr.tracking.store import process_uris


def run_json(args: list[str], capsys) -> dict:
    assert main([*args, "--json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def booster_scores(model_file: Path, data: Path, n_features: int) -> np.ndarray:
    """LightGBM's own predictions from its native model file, on the file as scikit-learn reads it."""
    import lightgbm as lgb

    X, _, _ = load_svmlight_file(str(data), n_features=n_features, query_id=True)
    return lgb.Booster(model_file=str(model_file)).predict(X.toarray())


# --- a saved model folder (fast) ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    from ltr.data.svmlight import load_svmlight
    from ltr.models import build_ranker

    root = tmp_path_factory.mktemp("saved")
    write_letor(root / "train.txt", 30, 1)
    write_letor(root / "test.txt", 8, 500)
    ranker = build_ranker({"name": "lambdamart", "params": {"n_trees": 8}}, seed=1, num_threads=1)
    ranker.fit(load_svmlight(root / "train.txt"), None)
    ranker.save(root / "model")
    return root


def test_saved_model_folder_scores_like_its_lightgbm_booster(saved, capsys):
    out = run_json(["--data", str(saved / "test.txt"), "--model", str(saved / "model"), "--write-scores",
                    str(saved / "s.txt"), "--write-run", str(saved / "r.run"), "-m", "ndcg@5"], capsys)  # fmt: skip
    want = booster_scores(saved / "model" / "model.txt", saved / "test.txt", 10)
    np.testing.assert_allclose(np.loadtxt(saved / "s.txt"), want, rtol=0, atol=1e-12)
    rows = [line.split() for line in (saved / "r.run").read_text().splitlines()]
    assert {r[5] for r in rows} == {"lambdamart"} and len(rows) == 40  # run tag = the model's name
    assert rows[0][0] == "500" and sorted(int(r[2]) for r in rows[:5]) == [1, 2, 3, 4, 5]  # row numbers
    # evaluated on the model's scores: the same numbers as the written scores given as --scores
    again = run_json(
        ["--data", str(saved / "test.txt"), "--scores", str(saved / "s.txt"), "-m", "ndcg@5"], capsys
    )
    assert out["per_query"] == again["per_query"] and out["n_queries"] == 8


def test_model_and_scores_files_compare_together(saved, capsys):
    np.savetxt(saved / "random.txt", np.random.default_rng(0).random(40))
    args = ["--data", str(saved / "test.txt"), "--model", str(saved / "model"), "--scores", str(saved / "random.txt"),
            "-m", "ndcg@5", "--compare", "--B", "500", "--baseline", "random.txt"]  # fmt: skip
    out = run_json(args, capsys)
    assert list(out["systems"]) == ["random.txt", "lambdamart"]  # --scores files first, then --model sources
    base = [r for r in out["comparison"] if r["is_baseline"]]
    assert {r["system"] for r in base} == {"random.txt"}


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("absent", "--model absent: no such file or folder"),
        ("FILE", "a model is a folder"),
        ("DIR", "not an ltr model (no manifest.json"),
        (
            "ftp://host/model",
            "expected runs:/<run id>/model, models:/<name>/<version>, an MLflow artifact URI",
        ),
        ("s3://bucket/model", "--model s3://bucket/model: cannot load it from "),  # boto3 is not installed
    ],
)
def test_bad_model_sources(saved, tmp_path, monkeypatch, source, message, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "FILE").write_text("x")
    (tmp_path / "DIR").mkdir()
    assert main(["--data", str(saved / "test.txt"), "--model", source]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_model_uri_without_a_store_is_refused(saved, tmp_path, capsys):
    args = ["--data", str(saved / "test.txt"), "--model", "runs:/0123/model"]
    assert main([*args, "--tracking-uri", f"sqlite:///{tmp_path}/none.db"]) == 2
    assert f"no MLflow store at {tmp_path}/none.db" in capsys.readouterr().err
    assert not (tmp_path / "none.db").exists()  # nothing was created


# --- a model logged by `python -m ltr.train` (slow: a real training run) ------------------------------------


@pytest.fixture(scope="module")
def logged(tmp_path_factory):
    root = tmp_path_factory.mktemp("logged")
    proc = run_train_cli(["+model=lambdamart", *TINY_DATA, *quick_model(20), "num_threads=1"], root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    client = store_client(root)
    (run,) = client.search_runs([client.get_experiment_by_name("ltr").experiment_id])
    return root, run, f"sqlite:///{root.resolve()}/mlflow.db"


@pytest.mark.slow
def test_logged_model_reproduces_the_runs_test_metrics_and_engine_scores(logged, tmp_path, capsys):
    import mlflow

    from ltr.models.pyfunc import as_frame

    root, run, uri = logged
    test_file = root / "data" / "synthetic" / "test.txt"
    source = f"runs:/{run.info.run_id}/model"
    args = ["--data", str(test_file), "--model", source, "--tracking-uri", uri]
    out = run_json(
        [*args, "-m", "ndcg@10", "-m", "err@10", "--write-scores", str(tmp_path / "s.txt")], capsys
    )
    # the run logged test/ndcg_at_10 and test/err_at_10 under the same (ltr) conventions
    assert out["mean"]["ndcg@10"] == pytest.approx(run.data.metrics["test/ndcg_at_10"], abs=1e-12)
    assert out["mean"]["err@10"] == pytest.approx(run.data.metrics["test/err_at_10"], abs=1e-12)
    scores = np.loadtxt(tmp_path / "s.txt")
    # MLflow's own loader of the logged pyfunc model, fed the documented input (features f1… + qid)
    with process_uris(uri):  # MLflow resolves runs:/ through its process-wide tracking URI
        local = Path(mlflow.artifacts.download_artifacts(artifact_uri=source, dst_path=str(tmp_path / "m")))
    X, _, qid = load_svmlight_file(str(test_file), n_features=46, query_id=True)
    pyfunc = mlflow.pyfunc.load_model(str(local))
    np.testing.assert_allclose(
        scores, pyfunc.predict(as_frame(X.toarray(), qid=qid.astype(np.int64))), atol=1e-6
    )
    # LightGBM's booster on the native model file inside the logged model
    np.testing.assert_allclose(
        scores, booster_scores(local / "artifacts" / "ranker" / "model.txt", test_file, 46), atol=1e-12
    )
    # the downloaded copy of the logged model is a source too
    assert run_json(["--data", str(test_file), "--model", str(local), "-m", "ndcg@10"], capsys)["mean"] == {
        "ndcg@10": out["mean"]["ndcg@10"]
    }


@pytest.mark.slow
def test_registered_model_version_writes_a_run_tagged_with_its_name(logged, tmp_path, capsys):
    import mlflow
    from mlflow.tracking import MlflowClient

    root, run, uri = logged
    with process_uris(uri, uri):  # what a user does: register the run's model
        assert mlflow.register_model(f"runs:/{run.info.run_id}/model", "my-ranker").version in (1, "1")
    test_file = root / "data" / "synthetic" / "test.txt"
    args = ["--data", str(test_file), "--tracking-uri", uri, "-m", "map"]
    by_version = run_json(
        [*args, "--model", "models:/my-ranker/1", "--write-run", str(tmp_path / "r.run")], capsys
    )
    by_run = run_json([*args, "--model", f"runs:/{run.info.run_id}/model"], capsys)
    assert by_version["per_query"] == by_run["per_query"]
    assert {line.split()[5] for line in (tmp_path / "r.run").read_text().splitlines()} == {"my-ranker"}
    MlflowClient(tracking_uri=uri, registry_uri=uri).set_registered_model_alias("my-ranker", "champion", 1)
    by_alias = run_json([*args, "--model", "models:/my-ranker@champion"], capsys)
    assert by_alias["per_query"] == by_run["per_query"]
    assert main([*args, "--model", "models:/my-ranker/7"]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith("error: --model models:/my-ranker/7: cannot find it in sqlite:///")
        and "Traceback" not in err
    )
    assert main([*args, "--model", f"runs:/{run.info.run_id}/plots"]) == 2  # an artifact folder, not a model
    assert (
        "/plots: not an ltr model (no manifest.json, nor artifacts/ranker/manifest.json of a logged model, "
        "among its artifacts)" in capsys.readouterr().err
    )
    assert main([*args, "--model", "runs:/0123456789abcdef/model"]) == 2
    assert "error: --model runs:/0123456789abcdef/model: cannot find it" in capsys.readouterr().err
