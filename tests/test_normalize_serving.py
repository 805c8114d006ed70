"""``data.normalize`` end to end: fitted on train, kept with the model, applied to raw rows everywhere.

Peers: numpy by hand for every method's fitted transform and for the normalised rows the model must
see; onnxruntime for the exported ONNX file (raw rows in, the ltr model's scores on hand-normalised
rows out); the local fit for the Dask per-shard statistics.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers import command_in_process, compose_config, in_process_dask_client

from ltr.core.errors import ConfigError, DataError
from ltr.data import RankingData
from ltr.data.normalize import METHODS, Normalizer
from ltr.data.svmlight import load_svmlight, write_svmlight
from ltr.experiment.pipeline import fit_and_evaluate
from ltr.models import load_ranker
from ltr.models.normalized import predict_raw
from ltr.models.pyfunc import as_frame, input_matrix, input_qid, score_by_query

F32 = np.float32


def _split(rng: np.random.Generator, n_queries: int, name: str, first_qid: int = 1) -> RankingData:
    """Queries of 4..9 documents, 5 features on very different scales (so normalising matters)."""
    sizes = rng.integers(4, 10, size=n_queries)
    n = int(sizes.sum())
    scales = np.array([1.0, 1e3, 1e-3, 50.0, 7.0])
    X = (rng.normal(size=(n, 5)) * scales + np.array([0.0, 5e3, 1.0, -20.0, 3.0])).astype(F32)
    X[:, 4] = np.abs(X[:, 4])  # log1p of a non-negative count-like feature
    y = np.clip(np.round(X[:, 0] + 0.002 * (X[:, 1] - 5e3) + rng.normal(size=n) * 0.5 + 1), 0, 4)
    qid = np.repeat(np.arange(first_qid, first_qid + n_queries), sizes)
    return RankingData(X=X, y=y, qid=qid, name=name)


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("norm")
    rng = np.random.default_rng(7)
    for name, n, first in (("train", 40, 1), ("vali", 12, 100), ("test", 15, 200)):
        write_svmlight(_split(rng, n, name, first), root / f"{name}.txt")
    return root


def _config(root: Path, method: str, model: str = "lambdamart", *extra: str):
    return compose_config(
        [
            f"+model={model}",
            "data=svmlight",
            f"data.train={root / 'train.txt'}",
            f"data.valid={root / 'vali.txt'}",
            f"data.test={root / 'test.txt'}",
            "data.cache_dir=null",
            f"data.normalize={method}",
            *(
                ["model.params.n_trees=12", "model.early_stopping.patience=5"]
                if model == "lambdamart"
                else []
            ),
            "eval.metrics=[ndcg@5]",
            "eval.bootstrap.B=50",
            "seed=3",
            "num_threads=1",
            "tracking=none",
            f"paths.root={root}",
            *extra,
        ]
    )


def _splits(root: Path) -> dict[str, RankingData]:
    return {s: load_svmlight(root / f"{f}.txt", n_features=5) for s, f in (("train", "train"), ("valid", "vali"), ("test", "test"))}  # fmt: skip


def one_query(X: np.ndarray) -> RankingData:
    return RankingData(X=X, y=np.zeros(len(X)), qid=np.zeros(len(X), np.int64))


# --- numpy by hand ---------------------------------------------------------------------------------


def by_hand(method: str, train: np.ndarray, X: np.ndarray, qid: np.ndarray) -> np.ndarray:
    """Each method written out with numpy, one query / column at a time."""
    X = X.astype(np.float64)
    if method == "none":
        return X
    if method == "log1p":
        return np.sign(X) * np.log1p(np.abs(X))
    if method == "zscore":
        mean = train.astype(np.float64).sum(axis=0) / train.shape[0]
        std = np.sqrt(((train.astype(np.float64) - mean) ** 2).sum(axis=0) / train.shape[0])
        return np.where(std > 0, (X - mean) / np.where(std > 0, std, 1.0), 0.0)
    out = np.empty_like(X)
    for q in np.unique(qid):
        rows = qid == q
        block = X[rows]
        if method == "query_minmax":
            lo, hi = block.min(axis=0), block.max(axis=0)
            out[rows] = np.where(hi > lo, (block - lo) / np.where(hi > lo, hi - lo, 1.0), 0.0)
        else:
            mu, sd = block.mean(axis=0), block.std(axis=0)
            out[rows] = np.where(sd > 0, (block - mu) / np.where(sd > 0, sd, 1.0), 0.0)
    return out


@pytest.mark.parametrize("method", METHODS)
def test_each_fitted_method_equals_numpy_by_hand(method):
    rng = np.random.default_rng(1)
    train, test = _split(rng, 6, "train"), _split(rng, 4, "test", 50)
    train.X[:, 2] = 4.0  # a feature constant in training: zscore maps it to 0
    norm = Normalizer(method).fit(train)
    got = norm.transform(test).X
    want = by_hand(method, np.asarray(train.X), np.asarray(test.X), test.qid)
    np.testing.assert_allclose(got, want.astype(F32), rtol=2e-6, atol=2e-6)
    # the manifest entry is plain JSON and rebuilds the same transform
    entry = json.loads(json.dumps(norm.to_manifest()))
    again = Normalizer.from_manifest(entry, "m")
    assert (again is None) == (method == "none")
    if again is not None:
        np.testing.assert_array_equal(again.transform(test).X, got)


def test_a_bad_normalize_value_names_the_key_and_the_choices(tmp_path):
    from ltr.data.config import check_data_block

    with pytest.raises(
        ConfigError, match=r"data.normalize: expected one of .*'zscore', 'log1p'.*got 'global_zscore'"
    ):
        check_data_block({"kind": "svmlight", "train": "t.txt", "normalize": "global_zscore"})
    from ltr.experiment.schemas import validate_config

    cfg = compose_config(["+model=lambdamart", "data=svmlight", "data.train=t.txt", "data.normalize=minmax"])
    with pytest.raises(ConfigError, match="data.normalize: expected one of"):  # before any data is read
        validate_config(cfg)


# --- train → saved model → raw rows ------------------------------------------------------------------


@pytest.fixture(scope="module")
def trained(files, tmp_path_factory):
    """One run per method (fit_and_evaluate, in process), its ranker saved and loaded back."""
    out = {}
    for method in METHODS:
        outcome = fit_and_evaluate(_config(files, method), _splits(files))
        folder = tmp_path_factory.mktemp(f"model_{method}")
        outcome.ranker.save(folder)
        out[method] = (outcome, load_ranker(folder), folder)
    return out


@pytest.mark.parametrize("method", METHODS)
def test_evaluate_model_on_the_raw_test_file_gives_the_ndcg_the_run_reported(trained, files, method, capsys):
    outcome, _, folder = trained[method]
    args = ["--data", str(files / "test.txt"), "--model", str(folder), "-m", "ndcg@5", "--json"]
    assert command_in_process("ltr.evaluate", args, run_cli=False) == 0
    report = json.loads(capsys.readouterr().out)
    qids = [str(q) for q in outcome.query_ids["test"]]
    per_query = np.array([report["per_query"][q]["ndcg@5"] for q in qids], dtype=float)  # None -> NaN
    np.testing.assert_array_equal(per_query, outcome.results["test"].per_query["ndcg@5"])
    assert report["mean"]["ndcg@5"] == pytest.approx(outcome.results["test"].mean("ndcg@5"), rel=1e-12)


@pytest.mark.parametrize("method", METHODS)
def test_the_saved_manifest_keeps_the_fitted_transform(trained, files, method):
    _, loaded, folder = trained[method]
    manifest = json.loads((folder / "manifest.json").read_text())
    if method == "none":
        assert "normalize" not in manifest and loaded.normalize_ is None
        return
    assert manifest["normalize"]["method"] == method
    if method == "zscore":  # the training split's statistics, by hand
        train = load_svmlight(files / "train.txt", n_features=5).X.astype(np.float64)
        np.testing.assert_allclose(manifest["normalize"]["mean"], train.mean(axis=0), rtol=1e-12)
        np.testing.assert_allclose(manifest["normalize"]["std"], train.std(axis=0), rtol=1e-12)


@pytest.mark.parametrize("method", METHODS)
def test_pyfunc_on_raw_rows_equals_predict_on_hand_normalised_rows(trained, files, method):
    _, loaded, _ = trained[method]
    train = load_svmlight(files / "train.txt", n_features=5)
    test = load_svmlight(files / "test.txt", n_features=5)
    hand = by_hand(method, np.asarray(train.X), np.asarray(test.X), test.qid).astype(F32)
    want = loaded.predict(RankingData(X=hand, y=test.y, qid=test.qid))
    rng = np.random.default_rng(0)
    order = rng.permutation(test.n_docs)  # rows of a query need not be adjacent
    frame = as_frame(np.asarray(test.X)[order], qid=test.qid[order])
    got = score_by_query(loaded, input_matrix(frame, 5), input_qid(frame))
    np.testing.assert_allclose(got, want[order], rtol=1e-6, atol=1e-6)
    rows = np.asarray(test.X)[:7]
    if method in ("query_minmax", "query_zscore"):  # without qid: which rows form a query is unknown
        with pytest.raises(DataError, match=f"pyfunc input: this model was trained with data.normalize={method}.*'qid' column"):  # fmt: skip
            score_by_query(loaded, rows, None)
    else:  # per value: rows score alone exactly as within their query
        np.testing.assert_allclose(score_by_query(loaded, rows, None), want[:7], rtol=1e-6, atol=1e-6)


@pytest.mark.slow  # logs a real MLflow model into a SQLite store and loads it back (~6 s)
def test_the_logged_mlflow_model_normalises_raw_rows(trained, files, tmp_path):
    import mlflow

    from ltr.models.pyfunc import log_pyfunc_model

    _, loaded, _ = trained["zscore"]
    test = load_svmlight(files / "test.txt", n_features=5)
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path}/mlflow.db")
    with mlflow.start_run():
        info = log_pyfunc_model(loaded, input_example=(np.asarray(test.X)[:5], test.qid[:5]))
    model = mlflow.pyfunc.load_model(info.model_uri)
    frame = as_frame(np.asarray(test.X), qid=test.qid)
    np.testing.assert_allclose(model.predict(frame), predict_raw(loaded, test), rtol=1e-12)
    train = load_svmlight(files / "train.txt", n_features=5)
    hand = by_hand("zscore", np.asarray(train.X), np.asarray(test.X), test.qid).astype(F32)
    np.testing.assert_allclose(model.predict(frame), loaded.predict(hand), rtol=1e-6, atol=1e-6)


def test_an_ensemble_trains_its_members_on_normalised_rows(files, tmp_path):
    outcome = fit_and_evaluate(_config(files, "zscore", "ensemble_mean"), _splits(files))
    ranker = outcome.ranker
    ranker.save(tmp_path / "m")
    loaded = load_ranker(tmp_path / "m")
    test = load_svmlight(files / "test.txt", n_features=5)
    train = load_svmlight(files / "train.txt", n_features=5)
    hand = by_hand("zscore", np.asarray(train.X), np.asarray(test.X), test.qid).astype(F32)
    want = ranker.predict(RankingData(X=hand, y=test.y, qid=test.qid))
    np.testing.assert_allclose(predict_raw(loaded, test), want, rtol=1e-6, atol=1e-6)
    # the members saw normalised rows: their training data's feature 2 (scale 1e3) is now O(1)
    assert loaded.normalize_ is not None and all(m.normalize_ is None for m in loaded.rankers_)


def test_explain_says_contributions_are_in_normalised_features(trained, files, capsys):
    _, _, folder = trained["zscore"]
    assert command_in_process("ltr.explain", [str(folder), "--data", str(files / "test.txt"), "--query", "200"], run_cli=False) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert out.startswith("note: the model was trained on features normalised with data.normalize=zscore")


# --- export: the transform folded into the model --------------------------------------------------------


def onnx_scores(path: Path, X: np.ndarray) -> np.ndarray:
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {"features": np.asarray(X, dtype=F32)})[0][:, 0].astype(np.float64)


@pytest.mark.parametrize("method", ["zscore", "log1p"])
def test_onnx_on_raw_rows_equals_the_model_on_normalised_rows(trained, files, method, tmp_path, capsys):
    pytest.importorskip("onnxruntime")
    from ltr.export.reading import raw_feature_model

    _, loaded, folder = trained[method]
    out = tmp_path / "m.onnx"
    args = [str(folder), "--format", "onnx", "--out", str(out), "--check", str(files / "test.txt")]
    assert command_in_process("ltr.export", args, run_cli=False) == 0, capsys.readouterr().err
    assert ": OK" in capsys.readouterr().out  # the parity check, on raw rows and threshold probes
    test = load_svmlight(files / "test.txt", n_features=5)
    train = load_svmlight(files / "train.txt", n_features=5)
    hand = by_hand(method, np.asarray(train.X), np.asarray(test.X), test.qid).astype(F32)
    np.testing.assert_allclose(onnx_scores(out, test.X), loaded.predict(hand), rtol=1e-5, atol=1e-5)
    # a row exactly at each folded threshold and one float32 above it: the same leaf as the model's
    folded = raw_feature_model(loaded)
    rows = []
    for feature, thresholds in folded.thresholds().items():
        for t in thresholds[:20]:
            for v in (t, np.nextafter(t, F32(np.inf))):
                row = np.asarray(test.X[0], dtype=F32).copy()
                row[feature] = v
                rows.append(row)
    rows = np.array(rows, dtype=F32)
    norm_rows = loaded.normalize_.transform(one_query(rows)).X
    np.testing.assert_allclose(onnx_scores(out, rows), loaded.predict(norm_rows), rtol=1e-5, atol=1e-5)


def _stump(feature: int, t: float, nan_left: bool):
    from ltr.export.trees import Tree, TreeEnsemble

    tree = Tree(
        feature=np.array([feature, -1, -1]), threshold=np.array([t, 0, 0], F32),
        left=np.array([1, -1, -1]), right=np.array([2, -1, -1]),
        nan_left=np.array([nan_left, False, False]), value=np.array([0.0, -1.0, 2.0]),
    )  # fmt: skip
    return TreeEnsemble((tree,), 0.0, 2)


@pytest.mark.parametrize("t", [-0.5, 0.0, 0.25])
@pytest.mark.parametrize("nan_left", [True, False])
def test_a_split_on_a_feature_constant_in_training_folds_to_where_zero_goes(t, nan_left):
    from ltr.export.normalize import fold_normalization

    norm = Normalizer.from_manifest({"method": "zscore", "mean": [3.0, 1.0], "std": [0.0, 2.0]}, "m")
    model = _stump(0, t, nan_left)
    folded = fold_normalization(model, norm, "model")
    raw = np.array([[-1e30, 0], [-1.0, 0], [3.0, 0], [3.5, 0], [1e30, 0], [np.inf, 0], [-np.inf, 0], [np.nan, 0]], F32)  # fmt: skip
    normalised = norm.transform(one_query(raw)).X
    # by hand: every non-missing value is 0 after normalising, so it goes left iff 0 <= t; NaN as before
    want = np.where(np.isnan(raw[:, 0]), 2.0 - 3.0 * nan_left, np.where(t >= 0, -1.0, 2.0))
    np.testing.assert_array_equal(model.predict(normalised), want)
    np.testing.assert_array_equal(folded.predict(raw), want)


def test_log1p_folds_for_negative_values_and_keeps_missing_direction():
    from ltr.export.normalize import fold_normalization

    norm = Normalizer("log1p")
    values = np.array([-1e6, -3.0, -1.0, -0.0, 0.0, 1e-8, 0.5, 1.0, 7.0, 1e6, np.nan], F32)
    for t in (-2.0, -0.3, 0.0, 0.4054651, 1.0, 5.0):
        model = _stump(1, t, nan_left=True)
        folded = fold_normalization(model, norm, "model")
        raw = np.column_stack([np.zeros_like(values), values]).astype(F32)
        hand = np.sign(raw) * np.log1p(np.abs(raw))  # numpy by hand (NaN stays NaN)
        np.testing.assert_array_equal(folded.predict(raw), model.predict(hand.astype(F32)))
        T = folded.trees[0].threshold[0]  # at most expm1(t) rounded: the exact float32 boundary
        assert np.log1p(np.abs(T)) * np.sign(T) <= F32(t) < np.sign(up := np.nextafter(T, F32(np.inf))) * np.log1p(np.abs(up))  # fmt: skip


def test_a_linear_model_folds_zscore_into_its_weights_and_refuses_log1p():
    from ltr.export.normalize import fold_normalization
    from ltr.export.trees import LinearScorer

    norm = Normalizer.from_manifest({"method": "zscore", "mean": [2.0, 5.0], "std": [4.0, 0.0]}, "m")
    model = LinearScorer(np.array([3.0, 7.0]), 1.0)
    folded = fold_normalization(model, norm, "model")
    X = np.array([[6.0, 9.0], [-2.0, 5.0]])
    # by hand: 1 + 3·(x1 − 2)/4 + 7·0
    np.testing.assert_allclose(folded.predict(X), 1 + 3 * (X[:, 0] - 2) / 4, rtol=1e-15)
    with pytest.raises(
        ConfigError, match="not linear in the raw features; the engine would need a log1p transform"
    ):
        fold_normalization(model, Normalizer("log1p"), "--format onnx")


@pytest.mark.parametrize("method", ["query_minmax", "query_zscore"])
@pytest.mark.parametrize("fmt", ["onnx", "elasticsearch", "solr"])
def test_per_query_methods_are_refused_naming_what_the_engine_would_need(
    trained, method, fmt, tmp_path, capsys
):
    _, _, folder = trained[method]
    out = tmp_path / "m.out"
    assert (
        command_in_process("ltr.export", [str(folder), "--format", fmt, "--out", str(out)], run_cli=False)
        == 2
    )
    err = capsys.readouterr().err
    stats = "min and max" if method == "query_minmax" else "mean and standard deviation"
    assert f"error: --format {fmt}: the model was trained with data.normalize={method}" in err
    assert f"query-level feature normaliser (each feature's per-query {stats}" in err
    assert "feature_normalizers (min_max: minimum/maximum, standard: mean/standard_deviation)" in err
    assert "MinMaxNormalizer (min, max) / StandardNormalizer (avg, std)" in err
    assert not out.exists() and err.count("\n") == 1


def test_native_formats_refuse_a_normalised_model(trained, tmp_path, capsys):
    _, _, folder = trained["zscore"]
    args = [str(folder), "--format", "lightgbm", "--out", str(tmp_path / "m.txt")]
    assert command_in_process("ltr.export", args, run_cli=False) == 2
    assert "error: --format lightgbm: writes the booster's own file, which takes features normalised with data.normalize=zscore" in capsys.readouterr().err  # fmt: skip


# --- Dask: statistics from the training shards --------------------------------------------------------------


def test_dask_statistics_from_partial_moments_equal_the_local_fit(files):
    from ltr.distributed.normalize import fit_sharded, transform_sharded
    from ltr.distributed.shards import gather_split, scatter_split

    train = load_svmlight(files / "train.txt", n_features=5)
    train.X[:5, 3] = np.nan  # missing values are left out of the statistics, on each shard
    local = Normalizer("zscore").fit(train)
    with in_process_dask_client() as client:
        workers = list(client.nthreads())
        sharded = scatter_split(client, train, 3, workers)
        fitted = fit_sharded(sharded, "zscore")
        np.testing.assert_allclose(fitted.mean_, local.mean_, rtol=1e-9)
        np.testing.assert_allclose(fitted.scale_, local.scale_, rtol=1e-9)
        for method in ("zscore", "query_minmax", "log1p"):  # per shard on the workers == locally
            norm = fit_sharded(sharded, method)
            back = gather_split(client, transform_sharded(sharded, norm))
            want = (local if method == "zscore" else Normalizer(method)).transform(train).X
            np.testing.assert_allclose(back.X, want, rtol=1e-6, atol=1e-6)


def test_partial_moments_stay_exact_for_a_large_mean():
    from ltr.data.normalize import column_moments, combine_moments

    rng = np.random.default_rng(3)
    X = 1e9 + rng.normal(size=(3000, 1))  # Σx² − n·mean² would lose every digit of the variance here
    parts = [column_moments(X[a:b]) for a, b in ((0, 1000), (1000, 1700), (1700, 3000))]
    m = combine_moments(parts)
    np.testing.assert_allclose(m.mean, X.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(m.m2 / 3000, X.var(axis=0), rtol=1e-7)


def test_a_dask_run_fits_on_the_training_shards_and_its_model_scores_raw_rows_as_reported(files, tmp_path):
    """backend=dask end to end: the ranker's statistics are the local fit's, and the saved model scores the
    raw test file to the per-query values the run computed on its workers."""
    from ltr.experiment.conventions import EvalConventions
    from ltr.experiment.splits import load_splits

    cfg = _config(files, "zscore", "lambdamart", "backend=dask")
    with in_process_dask_client() as client:
        outcome = fit_and_evaluate(cfg, load_splits(cfg, client))
    local = Normalizer("zscore").fit(load_svmlight(files / "train.txt", n_features=5))
    np.testing.assert_allclose(outcome.ranker.normalize_.mean_, local.mean_, rtol=1e-9)
    np.testing.assert_allclose(outcome.ranker.normalize_.scale_, local.scale_, rtol=1e-9)
    outcome.ranker.save(tmp_path / "m")
    loaded = load_ranker(tmp_path / "m")
    test = load_svmlight(files / "test.txt", n_features=5)
    values = EvalConventions.from_config(cfg.eval).evaluate(["ndcg@5"], test, predict_raw(loaded, test))
    np.testing.assert_allclose(values["ndcg@5"], outcome.results["test"].per_query["ndcg@5"], rtol=1e-12)


@pytest.mark.parametrize("fmt", ["elasticsearch", "opensearch", "solr", "vespa"])
def test_search_engine_formats_pass_their_parity_check_on_raw_rows(trained, files, fmt, tmp_path, capsys):
    _, _, folder = trained["zscore"]
    args = [
        str(folder),
        "--format",
        fmt,
        "--out",
        str(tmp_path / f"m.{fmt}"),
        "--check",
        str(files / "test.txt"),
    ]
    assert command_in_process("ltr.export", args, run_cli=False) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert ": OK" in out and "data.normalize=zscore is folded into the split thresholds" in out


def test_a_linear_model_with_zscore_exports_to_onnx_over_raw_rows(files, tmp_path, capsys):
    pytest.importorskip("onnxruntime")
    outcome = fit_and_evaluate(_config(files, "zscore", "linear"), _splits(files))
    outcome.ranker.save(tmp_path / "m")
    out = tmp_path / "m.onnx"
    args = [str(tmp_path / "m"), "--format", "onnx", "--out", str(out), "--check", str(files / "test.txt")]
    assert command_in_process("ltr.export", args, run_cli=False) == 0, capsys.readouterr().err
    assert "folded into the weights and bias" in capsys.readouterr().out
    test = load_svmlight(files / "test.txt", n_features=5)
    train = load_svmlight(files / "train.txt", n_features=5)
    hand = by_hand("zscore", np.asarray(train.X), np.asarray(test.X), test.qid).astype(F32)
    np.testing.assert_allclose(onnx_scores(out, test.X), outcome.ranker.predict(hand), rtol=1e-5, atol=1e-5)


@pytest.mark.slow  # a real `python -m ltr.train` process (~15 s) and its MLflow store
def test_a_cli_run_with_data_normalize_is_reproduced_by_evaluate_model_on_the_raw_file(
    files, tmp_path, capsys
):
    from helpers import run_train_cli, store_client

    args = ["+model=lambdamart", "data=svmlight", f"data.train={files / 'train.txt'}", f"data.valid={files / 'vali.txt'}",
            f"data.test={files / 'test.txt'}", "data.normalize=zscore", "model.params.n_trees=12", "eval.metrics=[ndcg@5]"]  # fmt: skip
    result = run_train_cli(args, tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (
        "features normalised: data.normalize=zscore (statistics of train); the model keeps it"
        in result.stdout
    )
    client = store_client(tmp_path)
    (run,) = client.search_runs([e.experiment_id for e in client.search_experiments() if e.name == "ltr"])
    logged = run.data.metrics["test/ndcg_at_5"]
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    code = command_in_process(
        "ltr.evaluate",
        ["--data", str(files / "test.txt"), "--model", f"runs:/{run.info.run_id}/model", "--tracking-uri", uri,
         "-m", "ndcg@5", "--json"],
        run_cli=False,
    )  # fmt: skip
    assert code == 0
    assert json.loads(capsys.readouterr().out)["mean"]["ndcg@5"] == pytest.approx(logged, rel=1e-12)


def test_label_next_reads_class_probabilities_of_raw_rows(files, tmp_path):
    from ltr.labelnext import model_label_probs

    outcome = fit_and_evaluate(
        _config(files, "zscore", "classification", "model.params.n_trees=5"), _splits(files)
    )
    outcome.ranker.save(tmp_path / "m")
    test = load_svmlight(files / "test.txt", n_features=5)
    train = load_svmlight(files / "train.txt", n_features=5)
    hand = by_hand("zscore", np.asarray(train.X), np.asarray(test.X), test.qid).astype(F32)
    want = outcome.ranker.predict_proba(RankingData(X=hand, y=test.y, qid=test.qid))
    got = model_label_probs(str(tmp_path / "m"), test, f"sqlite:///{tmp_path}/mlflow.db")
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_a_bagged_ensemble_exports_with_zscore_folded_into_every_member(files, tmp_path, capsys):
    pytest.importorskip("onnxruntime")
    cfg = _config(files, "zscore", "ensemble_bagging", "model.members.0.bags=2")
    outcome = fit_and_evaluate(cfg, _splits(files))
    outcome.ranker.save(tmp_path / "m")
    out = tmp_path / "m.onnx"
    args = [str(tmp_path / "m"), "--format", "onnx", "--out", str(out), "--check", str(files / "test.txt")]
    assert command_in_process("ltr.export", args, run_cli=False) == 0, capsys.readouterr().err
    test = load_svmlight(files / "test.txt", n_features=5)
    train = load_svmlight(files / "train.txt", n_features=5)
    hand = by_hand("zscore", np.asarray(train.X), np.asarray(test.X), test.qid).astype(F32)
    want = outcome.ranker.predict(RankingData(X=hand, y=test.y, qid=test.qid))
    np.testing.assert_allclose(onnx_scores(out, test.X), want, rtol=1e-5, atol=1e-5)


def test_compare_ranks_the_raw_test_split_through_the_model_normaliser(trained, files):
    from ltr.analysis.segments import ranked_labels
    from ltr.experiment.leaderboard import ranked_labels_of

    _, loaded, _ = trained["query_zscore"]
    test = load_svmlight(files / "test.txt", n_features=5)
    hand = by_hand("query_zscore", np.asarray(test.X), np.asarray(test.X), test.qid).astype(F32)
    want = ranked_labels(
        test.y, loaded.predict(RankingData(X=hand, y=test.y, qid=test.qid)), test.offsets, test.query_ids
    )
    got = ranked_labels_of(loaded, test)
    assert got.keys() == want.keys()
    for q in want:
        np.testing.assert_array_equal(got[q][0], want[q][0])
