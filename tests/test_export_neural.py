"""``ltr.export`` of the neural rankers: the MLP scorer to ONNX, everything else refused with the reason.

The truth is the fitted ranker's own ``predict`` (JAX); the exported file is scored by onnxruntime
itself. The composition of ``data.features`` and ``data.normalize`` with the network is checked
against ``predict`` on columns cut and normalised by hand here (numpy), not by ltr's code. Each model
is a real fit (two epochs on 60 synthetic queries, hidden units [8, 4]), fitted once per module.
"""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import command_in_process

from ltr.core.errors import ConfigError
from ltr.data import RankingData
from ltr.data.dataset import FeatureSelection
from ltr.data.normalize import Normalizer
from ltr.data.svmlight import write_svmlight
from ltr.data.synthetic import generate
from ltr.export.features import default_names
from ltr.export.formats import FORMATS, export
from ltr.export.parity import check_parity
from ltr.export.reading import export_refusal
from ltr.models import build_ranker
from ltr.models.normalized import predict_raw

F32 = np.float32
NET = {"n_epochs": 2, "hidden_units": [8, 4], "batch_size": 64}  # one batch an epoch: one compiled shape
TRAIN = generate(60, seed=0, max_docs=30)
TEST = generate(15, seed=1)
KEPT_IDS = (1, 2, 3, 5, 8, 13, 21, 34)  # data.features: 8 of the 46 features (1-based)

#: name → (model config, feature selection or not); the fits of :func:`models`
CONFIGS: dict[str, tuple[dict[str, Any], bool]] = {
    "log1p_zscore": ({"name": "neural_softmax", "params": {**NET, "feature_transform": "log1p_zscore"}}, False),
    "zscore": ({"name": "neural_listmle", "params": {**NET, "feature_transform": "zscore"}}, False),
    "none": ({"name": "neural_pairwise", "params": {**NET, "feature_transform": "none"}}, False),
    "selected": ({"name": "neural_lambdaloss", "params": NET}, True),
    "attention": ({"name": "neural_attention", "params": {**NET, "attention_heads": 2}}, False),
}  # fmt: skip
#: models behind a data.normalize method: (fitted model, method) — the network trained on rows normalised so
NORMALISED = {"selected_zscore": ("selected", "zscore"), "selected_log1p": ("selected", "log1p"),
              "query_zscore": ("zscore", "query_zscore")}  # fmt: skip


def selected(data: RankingData) -> RankingData:
    """``data`` cut to :data:`KEPT_IDS` as ``data.features`` cuts it (the kept columns, the selection kept)."""
    selection = FeatureSelection(ids=KEPT_IDS, n_features=data.n_features)
    return RankingData(X=selection.select(data.X), y=data.y, qid=data.qid, name=data.name, features=selection)


def constant_first(data: RankingData) -> RankingData:
    """``data`` with its first column constant (5.0): zscore normalises that feature to 0 (NaN stays NaN)."""
    X = np.array(data.X, dtype=F32)
    X[:, 0] = 5.0
    return RankingData(X=X, y=data.y, qid=data.qid, name=data.name, features=data.features)


@pytest.fixture(scope="module")
def models() -> dict[str, Any]:
    """Every config of :data:`CONFIGS` fitted once, and :data:`NORMALISED`: a fitted network behind a
    normaliser fitted on its training rows, as ``ltr.train`` keeps it (``normalize_``). Which rows the
    network saw does not matter to an export: it must score raw rows as ``predict_raw`` does."""
    fitted = {}
    for key, (cfg, cut) in CONFIGS.items():
        fitted[key] = build_ranker(cfg, seed=3, num_threads=1).fit(selected(TRAIN) if cut else TRAIN)
    for key, (base, method) in NORMALISED.items():
        ranker = copy.copy(fitted[base])
        ranker.normalize_ = Normalizer(method).fit(
            constant_first(selected(TRAIN)) if base == "selected" else TRAIN
        )
        fitted[key] = ranker
    return fitted


def extreme_rows() -> np.ndarray:
    """Rows of :data:`TEST` with one feature NaN, 0, −0, tiny (where Log(1 + x) and log1p part ways),
    large, ±1e30 or ±inf."""
    rng = np.random.default_rng(7)
    values = [np.nan, 0.0, -0.0, 1e-9, -3e-8, 1e-4, 123456.0, -1e30, 1e30, np.inf, -np.inf]
    base = np.asarray(TEST.X, dtype=F32)
    rows = []
    for feature in (0, 1, 4, 12, 45):
        for v in values:
            row = base[rng.integers(0, base.shape[0])].copy()
            row[feature] = v
            rows.append(row)
    return np.asarray(rows, dtype=F32)


def onnx_scores(path: Path, X: np.ndarray) -> np.ndarray:
    """The written file scored by onnxruntime (input ``features``, output ``[N, 1]``)."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (inp,) = session.get_inputs()
    assert inp.name == "features" and inp.shape[-1] == X.shape[1]
    return np.asarray(session.run(None, {"features": np.asarray(X, dtype=F32)})[0], dtype=np.float64)[:, 0]


def write_onnx(ranker: Any, path: Path) -> Any:
    names = default_names(int(ranker.input_width_))
    written = export(ranker, FORMATS["onnx"], path, names)
    return written, names


# --- ONNX: onnxruntime scores equal predict -------------------------------------------------------
@pytest.mark.parametrize("key", ["log1p_zscore", "zscore", "none"])
def test_onnx_scores_equal_predict(models: dict[str, Any], key: str, tmp_path: Path) -> None:
    ranker = models[key]
    out = tmp_path / "model.onnx"
    written, names = write_onnx(ranker, out)
    X = np.asarray(TEST.X, dtype=F32)
    np.testing.assert_allclose(onnx_scores(out, X), ranker.predict(X), rtol=1e-5, atol=1e-6)
    # the shipped parity check agrees (its probe rows included: NaN, ±1e30, ±inf per feature)
    report = check_parity(ranker, FORMATS["onnx"], out, names, written, TEST)
    assert report.ok and report.worst <= 1e-5 and report.inversions == 0, report.summary()
    assert any(f"feature_transform={key}" in line for line in written.how_to_load)


@pytest.mark.parametrize("key", ["log1p_zscore", "zscore", "none"])
def test_onnx_scores_equal_predict_on_missing_tiny_and_far_values(
    models: dict[str, Any], key: str, tmp_path: Path
) -> None:
    """NaN gives NaN both ways; tiny values keep log1p's digits; ±1e30 and ±inf as JAX computes them."""
    ranker = models[key]
    out = tmp_path / "model.onnx"
    write_onnx(ranker, out)
    X = extreme_rows()
    expected = ranker.predict(X)
    got = onnx_scores(out, X)
    assert np.isnan(expected).any() and np.array_equal(np.isnan(got), np.isnan(expected))
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize(("key", "method"), [("selected_zscore", "zscore"), ("selected_log1p", "log1p")])
def test_onnx_of_a_selection_with_data_normalize_takes_raw_full_rows(
    models: dict[str, Any], key: str, method: str, tmp_path: Path
) -> None:
    """The file takes the file's 46 raw features; the peer: predict on the kept columns normalised by hand
    (feature 1, constant when the zscore normaliser was fitted, normalises to 0 whatever its value)."""
    ranker = models[key]
    out = tmp_path / "model.onnx"
    written, names = write_onnx(ranker, out)
    full = np.asarray(TEST.X, dtype=F32).copy()
    full[:4, 0] = [np.inf, -np.inf, 1e30, -7.0]
    kept = np.asarray(constant_first(selected(TRAIN)).X, dtype=np.float64)
    cut = full[:, np.array(KEPT_IDS) - 1].astype(np.float64)
    if method == "zscore":
        mean, std = kept.mean(axis=0), kept.std(axis=0)
        assert std[0] == 0 and (std[1:] > 0).all()
        with np.errstate(invalid="ignore"):
            by_hand = np.where(std > 0, (cut - mean) / np.where(std > 0, std, 1.0), 0.0)
    else:
        by_hand = np.sign(cut) * np.log1p(np.abs(cut))
    expected = ranker.predict(by_hand.astype(F32))  # the network alone, on rows normalised here
    got = onnx_scores(out, full)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    rows = RankingData(X=full, y=TEST.y, qid=TEST.qid, name="test")
    np.testing.assert_allclose(got, predict_raw(ranker, rows), rtol=1e-5, atol=1e-5)
    assert any(f"data.normalize={method} is computed in the graph" in line for line in written.how_to_load)
    report = check_parity(ranker, FORMATS["onnx"], out, names, written, TEST)
    assert report.ok, report.summary()


def test_a_per_query_normalised_model_is_refused(models: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "model.onnx"
    with pytest.raises(
        ConfigError, match=r"^--format onnx: the model was trained with data.normalize=query_zscore"
    ):
        write_onnx(models["query_zscore"], out)
    assert not out.exists()


def test_compare_sees_mlp_models_as_exportable_and_attention_not(models: dict[str, Any]) -> None:
    assert export_refusal(models["zscore"]) is None
    assert export_refusal(models["attention"]).startswith(
        "model: a neural_attention model (scorer: attention)"
    )


# --- refusals: one error line, exit status 2, no file -----------------------------------------------
ATTENTION = (
    "error: --format {fmt}: a neural_attention model (scorer: attention) scores each document with "
    "self-attention over the other documents of its list, so a document's score depends on the whole list; "
    "an exported file scores one document at a time and cannot reproduce that. Export a model with scorer: "
    "mlp (neural_softmax, neural_listmle, neural_approxndcg, neural_pairwise, neural_lambdaloss) with "
    "--format onnx, or serve this one through ltr (its logged MLflow model with a qid column)\n"
)
HOLDS = {
    "lightgbm": "a LightGBM booster's own file (its trees)",
    "xgboost": "an XGBoost booster's own JSON (its trees)",
    "opensearch": "the OpenSearch LTR plugin's models (tree ensembles and linear models)",
    "elasticsearch": "the Elasticsearch LTR plugin's models (tree ensembles and linear models)",
    "solr": "Solr LTR's models (tree ensembles and linear models)",
    "c": "C code of tree ensembles and linear models",
    "vespa": "Vespa rank expressions of tree ensembles and linear models (Vespa serves an ONNX file itself: "
    "a rank profile's onnx-model)",
}


@pytest.fixture(scope="module")
def saved(models: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The MLP (log1p_zscore) and attention models saved as ``ltr.train`` saves them."""
    root = tmp_path_factory.mktemp("neural")
    folders = {}
    for key in ("log1p_zscore", "attention"):
        folders[key] = root / key
        models[key].save(folders[key])
    return folders


def test_every_format_but_onnx_is_listed() -> None:
    assert sorted(HOLDS) == sorted(set(FORMATS) - {"onnx"})


@pytest.mark.parametrize("fmt", sorted(HOLDS))
def test_an_mlp_model_is_refused_by_every_format_but_onnx(
    saved: dict[str, Path], fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / f"model.{fmt}"
    code = command_in_process(
        "ltr.export", [str(saved["log1p_zscore"]), "--format", fmt, "--out", str(out)], run_cli=False
    )
    err = capsys.readouterr().err
    assert code == 2, err
    assert err == (
        f"error: --format {fmt}: a neural_softmax model is a neural network (ReLU layers over transformed "
        f"features); {HOLDS[fmt]} cannot express it. Use --format onnx, which writes the network itself "
        "(docs/export.md, 'Neural rankers')\n"
    )
    assert list(tmp_path.iterdir()) == []  # nothing written, no staging folder left


@pytest.mark.parametrize("fmt", ["onnx", "solr", "lightgbm"])
def test_an_attention_model_is_refused_by_every_format(
    saved: dict[str, Path], fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "model.out"
    code = command_in_process(
        "ltr.export", [str(saved["attention"]), "--format", fmt, "--out", str(out)], run_cli=False
    )
    assert code == 2
    assert capsys.readouterr().err == ATTENTION.format(fmt=fmt)
    assert list(tmp_path.iterdir()) == []


def test_cli_exports_an_mlp_model_and_checks_it(
    saved: dict[str, Path], models: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "test.txt"
    write_svmlight(TEST, data)
    out = tmp_path / "model.onnx"
    argv = [str(saved["log1p_zscore"]), "--format", "onnx", "--out", str(out), "--check", str(data)]
    code = command_in_process("ltr.export", argv, run_cli=False)
    stdout = capsys.readouterr().out
    assert code == 0, stdout
    assert f"wrote {out} (onnx; missing values: NaN)" in stdout and ": OK" in stdout
    X = np.asarray(TEST.X, dtype=F32)
    np.testing.assert_allclose(onnx_scores(out, X), models["log1p_zscore"].predict(X), rtol=1e-5, atol=1e-6)


@pytest.mark.slow  # a real process (JAX's start-up): ~3 s; the in-process refusals are fast tests
def test_a_real_process_refuses_an_attention_model(saved: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "model.onnx"
    args = [str(saved["attention"]), "--format", "onnx", "--out", str(out)]
    result = subprocess.run(
        [sys.executable, "-m", "ltr.export", *args], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr == ATTENTION.format(fmt="onnx") and result.stdout == ""
    assert not out.exists()


def test_an_ensemble_with_a_neural_member_says_to_export_the_network_alone(models: dict[str, Any]) -> None:
    from ltr.export.reading import from_ranker

    ensemble = build_ranker(
        {"name": "ensemble_mean", "members": [{"model": "lambdamart", "params": {"n_trees": 3}},
                                              {"model": "neural_softmax", "params": NET}],
         "params": {"normalization": "none"}, "n_jobs": 1},
        seed=0, num_threads=1,
    ).fit(TRAIN)  # fmt: skip
    with pytest.raises(
        ConfigError,
        match=r"member neural_softmax: a neural_softmax network does not fold into one tree or linear model with the other members; export the network alone with --format onnx",
    ):
        from_ranker(ensemble, "MODEL")
