"""``python -m ltr.train`` trains the model the engine trains on the same file with its own text loader.

The files hold values with ten significant digits and offsets that float32 cannot keep apart
(``100000.0123`` and ``100000.0131`` are one float32), so a float32 parse gives LightGBM other bin
edges than its own float64 loader: the float32 control below must give another model, or these
tests would pass without checking anything. Each engine is checked against its own loader:
LightGBM's text ``Dataset`` (with a ``.query`` sidecar) and ``Booster.predict`` on the file,
XGBoost's ``DMatrix("…?format=libsvm")``, CatBoost's ``Pool("libsvm://…")`` and scikit-learn's
``load_svmlight_file``.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from helpers import compose_config

from ltr.data import load_svmlight

SCALES = np.array([1.0, 10.0, 100.0, 1e3, 1.0, 1.0, 1e-3, 1.0])
OFFSETS = np.array([0.0, 0.0, 0.0, 0.0, 1e5, 0.0, 0.0, 3.0])
SPLITS = {"train": (160, 1), "valid": (40, 2), "test": (50, 3)}


def write_split(folder: Path, name: str, n_queries: int, seed: int) -> dict[str, Path]:
    """A LETOR file ``name.txt`` (with ``qid:``), and LightGBM's form of it: ``name.lgb`` without
    ``qid:`` plus ``name.lgb.query`` (one query size per line)."""
    rng = np.random.default_rng(seed)
    letor, plain, sizes = [], [], []
    for q in range(n_queries):
        n = int(rng.integers(5, 30))
        sizes.append(n)
        for _ in range(n):
            x = rng.normal(size=SCALES.size) * SCALES + OFFSETS
            y = int(np.clip(np.round(x[0] + x[1] / 10 + (x[4] - 1e5) + rng.normal()), 0, 4))
            feats = " ".join(f"{j + 1}:{v:.10g}" for j, v in enumerate(x))
            letor.append(f"{y} qid:{seed * 1000 + q} {feats}")  # distinct queries per split
            plain.append(f"{y} {feats}")
    paths = {"letor": folder / f"{name}.txt", "lgb": folder / f"{name}.lgb"}
    paths["letor"].write_text("\n".join(letor) + "\n")
    paths["lgb"].write_text("\n".join(plain) + "\n")
    (folder / f"{name}.lgb.query").write_text("\n".join(map(str, sizes)) + "\n")
    return paths


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, dict[str, Path]]:
    folder = tmp_path_factory.mktemp("fine")
    return {split: write_split(folder, split, n, seed) for split, (n, seed) in SPLITS.items()}


def trained(files, tmp_path, model: str, *extra: str):
    """An in-process ``python -m ltr.train +model=MODEL data=svmlight …`` run (tracking off): its config
    after the run and the fitted ranker."""
    from rich.console import Console

    from ltr.train import execute

    cfg = compose_config(
        [
            f"+model={model}",
            "data=svmlight",
            *(f"data.{s}={files[s]['letor']}" for s in SPLITS),
            "tracking=none",
            "num_threads=1",
            f"paths.root={tmp_path}",
            "eval.bootstrap.B=0",
            *extra,
        ]
    )
    recorded = execute(cfg, console=Console(file=io.StringIO()))
    return cfg, recorded.outcome.ranker


def lightgbm_on_its_own_loader(files, ranker) -> np.ndarray:
    """LightGBM's own model on the text files with ``ranker``'s parameters and rounds: its test scores."""
    import lightgbm as lgb

    params = dict(ranker.engine_params_)
    booster = lgb.train(
        params,
        lgb.Dataset(str(files["train"]["lgb"]), params=params),
        num_boost_round=int(params["num_iterations"]),
    )
    return booster.predict(str(files["test"]["lgb"]), num_iteration=ranker.booster_.current_iteration())


def test_lightgbm_runs_train_the_model_lightgbm_trains_on_the_file(files, tmp_path) -> None:
    cfg, ranker = trained(files, tmp_path, "lambdamart", "model.params.n_trees=25")
    assert cfg.data.parse.dtype == "float64"  # chosen from the model: the run config logs it
    ours = ranker.predict(load_svmlight(files["test"]["letor"], dtype="float64"))
    np.testing.assert_array_equal(ours, lightgbm_on_its_own_loader(files, ranker))


def test_a_float32_parse_would_give_lightgbm_another_model(files, tmp_path) -> None:
    """The control: the files are such that the dtype matters (else the test above proves nothing)."""
    cfg, ranker = trained(
        files, tmp_path, "lambdamart", "model.params.n_trees=25", "data.parse.dtype=float32"
    )
    assert cfg.data.parse.dtype == "float32"  # a dtype the user sets is kept
    ours = ranker.predict(load_svmlight(files["test"]["letor"], dtype="float32"))
    assert not np.array_equal(ours, lightgbm_on_its_own_loader(files, ranker))


@pytest.mark.slow  # a run and XGBoost's own training: ~3 s
def test_xgboost_runs_read_float32_and_train_xgboosts_model(files, tmp_path) -> None:
    import xgboost as xgb

    cfg, ranker = trained(files, tmp_path, "lambdamart_xgb", "model.params.n_trees=25")
    assert cfg.data.parse.dtype == "float32"  # XGBoost keeps float32: float64 would buy nothing
    params = dict(ranker.engine_params_)
    rounds = int(params.pop("num_boost_round"))
    booster = xgb.train(
        params, xgb.DMatrix(f"{files['train']['letor']}?format=libsvm"), num_boost_round=rounds
    )
    theirs = booster.predict(
        xgb.DMatrix(f"{files['test']['letor']}?format=libsvm"),
        iteration_range=(0, ranker.booster_.num_boosted_rounds()),
    )
    ours = ranker.predict(load_svmlight(files["test"]["letor"], dtype="float32"))
    np.testing.assert_array_equal(ours.astype(np.float32), theirs)


def test_catboost_reads_the_float32_values_ltr_parses(files) -> None:
    catboost = pytest.importorskip("catboost", reason="the catboost extra is not installed")
    from ltr.models import build_ranker

    assert build_ranker({"name": "catboost"}).input_dtype == "float32"
    pool = catboost.Pool(f"libsvm://{files['train']['letor']}")
    theirs = np.asarray(pool.get_features(), dtype=np.float32)
    np.testing.assert_array_equal(
        np.asarray(load_svmlight(files["train"]["letor"], dtype="float32").X), theirs
    )


@pytest.mark.parametrize("model", ["linear", "random_forest"])
def test_scikit_learn_models_read_what_load_svmlight_file_reads(files, model) -> None:
    from sklearn.datasets import load_svmlight_file

    from ltr.models import build_ranker

    dtype = build_ranker({"name": model}).input_dtype
    assert dtype == "float64"
    X, y, qid = load_svmlight_file(str(files["train"]["letor"]), query_id=True)
    ours = load_svmlight(files["train"]["letor"], dtype=dtype)
    np.testing.assert_array_equal(np.asarray(ours.X), X.toarray())


def test_an_ensemble_reads_float64_when_any_member_does(files, tmp_path) -> None:
    from ltr.models import build_ranker

    mixed = build_ranker({"name": "ensemble_mean", "members": ["lambdamart_xgb", "lambdamart"]})
    narrow = build_ranker({"name": "ensemble_mean", "members": ["lambdamart_xgb", "neural_softmax"]})
    assert (mixed.input_dtype, narrow.input_dtype) == ("float64", "float32")


def test_a_dtype_given_at_the_top_level_of_an_svmlight_config_is_kept() -> None:
    from ltr.experiment.pipeline import follow_engine_dtype

    cfg = compose_config(["+model=lambdamart", "data=svmlight", "data.train=a.txt", "+data.dtype=float32"])
    assert follow_engine_dtype([cfg], "float64") is None and cfg.data.parse.dtype is None


def test_synthetic_runs_keep_their_float32_values() -> None:
    from ltr.experiment.pipeline import follow_engine_dtype

    cfg = compose_config(["+model=lambdamart"])
    assert follow_engine_dtype([cfg], "float64") is None and "parse" not in cfg.data


@pytest.mark.parametrize(
    "command",
    ["ltr.evaluate", pytest.param("ltr.explain", marks=pytest.mark.slow)],  # explain: 10 queries, ~3 s
)
def test_scoring_a_file_reads_it_as_the_model_was_trained(files, tmp_path, capsys, command) -> None:
    """``ltr.evaluate --model`` / ``ltr.explain`` parse the file into the model's dtype (LightGBM: float64,
    as its thresholds are), so their scores are LightGBM's own on that file."""
    from helpers import completed_in_process

    from ltr.io.predictions import read_scores

    _, ranker = trained(files, tmp_path, "lambdamart", "model.params.n_trees=25")
    ranker.save(tmp_path / "model")
    theirs = lightgbm_on_its_own_loader(files, ranker)
    if command == "ltr.evaluate":
        out = tmp_path / "scores.txt"
        args = [
            "--model",
            str(tmp_path / "model"),
            "--data",
            str(files["test"]["letor"]),
            "--write-scores",
            str(out),
        ]
        done = completed_in_process(command, args, capsys)
        assert done.returncode == 0, done.stderr
        np.testing.assert_array_equal(read_scores(out, n_rows=theirs.size), theirs)
    else:
        import json

        for qid in range(3000, 3010):  # ten queries' documents, each with its file line
            args = [
                str(tmp_path / "model"),
                "--data",
                str(files["test"]["letor"]),
                "--query",
                str(qid),
                "--json",
            ]
            done = completed_in_process(command, args, capsys)
            assert done.returncode == 0, done.stderr
            for doc in json.loads(done.stdout):
                assert doc["score"] == pytest.approx(theirs[doc["line"] - 1], rel=1e-12, abs=1e-12), (
                    qid,
                    doc["line"],
                )
