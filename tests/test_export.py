"""``ltr.export``: every format scored by an evaluator written HERE from the target's documented semantics.

The truth is always the fitted model's own ``predict`` (LightGBM / XGBoost / the ridge weights). The
exported files are scored by independent evaluators below, each following its engine's source:

* ONNX — onnxruntime itself;
* Elasticsearch/OpenSearch ``model/xgboost+json`` — ``NaiveAdditiveDecisionTree.Split.eval``: NaN →
  the ``missing`` child, else ``threshold > value`` → left; floats parsed as Java floats, float sums;
* RankLib (``model/ranklib``) — the DOM walk of RankLib's ``Ensemble`` (``getFirstChild`` etc., so
  whitespace between tags would break it as it breaks RankLib), ``value <= threshold``, float sums;
  ``## Linear Regression`` — ``0:bias j:w_j`` in double;
* Solr ``MultipleAdditiveTreesModel`` — ``Float.parseFloat(threshold) + 1e-6f`` in float32, ``<=``;
* Vespa — the expressions its importers build: ``!(x >= t)`` when missing goes left, else ``x < t``
  (``(float)split_condition`` for XGBoost), in double;
* native files — the engines themselves.

Held-out rows include feature values exactly at every split threshold of the *native* model (read
from LightGBM's / XGBoost's own dumps, not from ltr's export code), one float32 step above and
below, NaN and ±1e30. Targets without missing values (Solr, RankLib) are compared on NaN → 0.
"""

from __future__ import annotations

import json
import subprocess
import sys
import xml.dom.minidom
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import command_in_process

from ltr.core.errors import ConfigError
from ltr.data import RankingData
from ltr.data.svmlight import write_svmlight
from ltr.export.features import default_names, read_feature_map
from ltr.export.formats import FORMATS, export
from ltr.export.parity import check_parity
from ltr.models import build_ranker

F32 = np.float32
N_FEATURES = 6
TOL = 1e-5

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


# --- data and models --------------------------------------------------------------------------------
def make_data(seed: int, n_queries: int, nan_share: float = 0.1) -> RankingData:
    rng = np.random.default_rng(seed)
    n = n_queries * 12
    X = rng.normal(size=(n, N_FEATURES)).astype(F32)
    X[:, 2] = np.round(X[:, 2])  # a feature with ties and many exact zeros
    X[:, 3] = np.abs(X[:, 3]) * (rng.random(n) < 0.5)  # zeros and positives (LightGBM's zero split)
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] + X[:, 2] > 0.5) + (X[:, 3] > 0.6)
    X[rng.random(X.shape) < nan_share] = np.nan
    return RankingData(X=X, y=y, qid=np.repeat(np.arange(n_queries), 12), name=f"data{seed}")


TRAIN = make_data(1, 40)
VALID = make_data(2, 10)
TREE_PARAMS = {"n_trees": 25, "min_data_in_leaf": 3}

MODEL_CONFIGS: dict[str, dict[str, Any]] = {
    "lambdamart": {"name": "lambdamart", "params": TREE_PARAMS},
    "xendcg": {"name": "xendcg", "params": TREE_PARAMS},
    "regression": {"name": "regression", "params": TREE_PARAMS},
    "lambdamart_xgb": {"name": "lambdamart_xgb", "params": {"n_trees": 25}},
    "linear": {"name": "linear"},
    "classification": {"name": "classification", "params": {"n_trees": 15, "min_data_in_leaf": 3}},
    "ensemble_mean": {
        "name": "ensemble_mean",
        "members": [
            {"model": "lambdamart", "params": TREE_PARAMS},
            {"model": "lambdamart_xgb", "params": {"n_trees": 10}},
        ],
        "params": {"normalization": "none", "weights": [1.0, 3.0]},
    },
    "ensemble_blend": {
        "name": "ensemble_blend",
        "members": [
            {"model": "regression", "params": TREE_PARAMS},
            {"model": "xendcg", "params": TREE_PARAMS},
        ],
        "params": {"normalization": "none"},
    },
}


@pytest.fixture(scope="module")
def models() -> dict[str, Any]:
    fitted = {}
    for name, cfg in MODEL_CONFIGS.items():
        train, valid = TRAIN, VALID
        if name == "linear":  # ridge needs finite features
            train = RankingData(X=np.nan_to_num(TRAIN.X), y=TRAIN.y, qid=TRAIN.qid)
            valid = RankingData(X=np.nan_to_num(VALID.X), y=VALID.y, qid=VALID.qid)
        fitted[name] = build_ranker(cfg, seed=3, num_threads=1).fit(train, valid)
    return fitted


# --- held-out rows from the engines' own dumps ----------------------------------------------------
def native_thresholds(ranker: Any) -> dict[int, list[float]]:
    """feature column → thresholds, read from LightGBM's / XGBoost's own model dumps."""
    found: dict[int, list[float]] = {}
    for member in getattr(ranker, "rankers_", [ranker]):
        if member.engine == "lightgbm":

            def walk(node: dict[str, Any]) -> None:
                if "split_feature" in node:
                    found.setdefault(node["split_feature"], []).append(float(node["threshold"]))
                    walk(node["left_child"])
                    walk(node["right_child"])

            for info in member.booster_.dump_model()["tree_info"]:
                walk(info["tree_structure"])
        elif member.engine == "xgboost":
            frame = member.booster_.trees_to_dataframe()
            for feature, split in zip(frame["Feature"], frame["Split"], strict=True):
                if feature != "Leaf":
                    found.setdefault(int(feature[1:]), []).append(float(split))
    return found


def held_out_rows(ranker: Any) -> RankingData:
    """Fresh rows + rows at/around every native threshold, NaN and ±1e30, as queries of 10 rows."""
    rng = np.random.default_rng(7)
    base = make_data(5, 8).X
    rows = [base]
    probes = []
    for feature, thresholds in native_thresholds(ranker).items():
        for t in thresholds:
            with np.errstate(over="ignore"):  # LightGBM's 1e300 split: +inf
                t32 = F32(t)
            for v in (t32, np.nextafter(t32, F32(np.inf)), np.nextafter(t32, F32(-np.inf))):
                probes.append((feature, float(v)))
    for feature in range(N_FEATURES):
        probes += [(feature, np.nan), (feature, 1e30), (feature, -1e30)]
    extra = base[rng.integers(0, base.shape[0], len(probes))].copy()
    for r, (feature, value) in enumerate(probes):
        extra[r, feature] = value
    rows.append(extra)
    X = np.vstack(rows).astype(F32)
    if ranker.name == "linear":
        X = np.where(np.isnan(X), F32(0.0), X)
    X = X[: (X.shape[0] // 10) * 10]
    return RankingData(
        X=X, y=np.zeros(X.shape[0]), qid=np.repeat(np.arange(X.shape[0] // 10), 10), name="held out"
    )


# --- independent evaluators -----------------------------------------------------------------------
def es_xgboost_json(definition: list[dict[str, Any]], names: list[str], X: np.ndarray) -> np.ndarray:
    col = {n: j for j, n in enumerate(names)}

    def walk(node: dict[str, Any], row: np.ndarray) -> F32:
        while "leaf" not in node:
            value = row[col[node["split"]]]
            by_id = {c["nodeid"]: c for c in node["children"]}
            if np.isnan(value):
                node = by_id[node.get("missing", node["no"])]
            elif F32(node["split_condition"]) > value:
                node = by_id[node["yes"]]
            else:
                node = by_id[node["no"]]
        return F32(node["leaf"])

    out = np.zeros(X.shape[0])
    for r, row in enumerate(X):
        total = F32(0)
        for tree in definition:
            total = F32(total + walk(tree, row))
        out[r] = total
    return out


def ranklib(text: str, X: np.ndarray) -> np.ndarray:
    lines = text.splitlines()
    if lines[0] == "## Linear Regression":
        pairs = [item.split(":") for item in lines[-1].split()]
        bias = float(next(v for k, v in pairs if k == "0"))
        return np.array(
            [bias + sum(float(v) * float(row[int(k) - 1]) for k, v in pairs if k != "0") for row in X]
        )
    assert lines[0] == "## LambdaMART"
    doc = xml.dom.minidom.parseString("".join(line for line in lines if not line.startswith("##")))

    def walk(split: Any, row: np.ndarray) -> F32:
        while split.firstChild.nodeName == "feature":
            kids = split.childNodes
            fid = int(kids[0].firstChild.nodeValue.strip())
            threshold = F32(kids[1].firstChild.nodeValue.strip())
            split = kids[2] if row[fid - 1] <= threshold else kids[3]
        return F32(split.firstChild.firstChild.nodeValue.strip())

    trees = doc.getElementsByTagName("tree")
    out = np.zeros(X.shape[0])
    for r, row in enumerate(X):
        total = F32(0)
        for tree in trees:
            total = F32(total + walk(tree.firstChild, row) * F32(tree.getAttribute("weight")))
        out[r] = total
    return out


def solr(body: dict[str, Any], X: np.ndarray) -> np.ndarray:
    assert body["class"] == "org.apache.solr.ltr.model.MultipleAdditiveTreesModel"
    col = {f["name"]: j for j, f in enumerate(body["features"])}

    def walk(node: dict[str, Any], row: np.ndarray) -> F32:
        while "feature" in node:
            threshold = F32(F32(node["threshold"]) + F32(1e-6))
            node = node["left"] if row[col[node["feature"]]] <= threshold else node["right"]
        return F32(node["value"])

    out = np.zeros(X.shape[0])
    for r, row in enumerate(X):
        total = F32(0)
        for tree in body["params"]["trees"]:
            total = F32(total + F32(tree["weight"]) * walk(tree["root"], row))
        out[r] = total
    return out


def vespa_condition(x: float, threshold: float, missing_left: bool) -> bool:
    return not (x >= threshold) if missing_left else x < threshold


def vespa_lightgbm(body: dict[str, Any], names: list[str], X: np.ndarray) -> np.ndarray:
    col = [names.index(n) for n in body["feature_names"]]

    def walk(node: dict[str, Any], row: np.ndarray) -> float:
        while "leaf_value" not in node:
            x = float(row[col[node["split_feature"]]])
            go = vespa_condition(x, float(node["threshold"]), node["default_left"])
            node = node["left_child"] if go else node["right_child"]
        return float(node["leaf_value"])

    return np.array([sum(walk(i["tree_structure"], row) for i in body["tree_info"]) for row in X])


def vespa_xgboost(trees: list[dict[str, Any]], names: list[str], X: np.ndarray) -> np.ndarray:
    def walk(node: dict[str, Any], row: np.ndarray) -> float:
        while "leaf" not in node:
            by_id = {c["nodeid"]: c for c in node["children"]}
            x = float(row[names.index(node["split"])])
            go = vespa_condition(x, float(F32(node["split_condition"])), node["missing"] == node["yes"])
            node = by_id[node["yes"]] if go else by_id[node["no"]]
        return float(node["leaf"])

    return np.array([sum(walk(t, row) for t in trees) for row in X])


def vespa_linear(profile: str, names: list[str], X: np.ndarray) -> np.ndarray:
    expression = profile.split("expression {")[1].split("}")[0].split()
    bias = float(expression[0])
    terms = [(float(expression[i + 1].strip("()")), expression[i + 3]) for i in range(1, len(expression), 4)]
    return np.array([bias + sum(w * float(row[names.index(n)]) for w, n in terms) for row in X])


def independent_scores(fmt: str, out: Path, names: list[str], X: np.ndarray) -> np.ndarray:
    if fmt == "onnx":
        import onnxruntime as ort

        session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
        assert [i.name for i in session.get_inputs()] == ["features"]
        return session.run(None, {"features": X.astype(F32)})[0][:, 0].astype(np.float64)
    if fmt in ("opensearch", "elasticsearch"):
        model = json.loads(out.read_text())["model"]["model"]
        if model["type"] == "model/xgboost+json":
            return es_xgboost_json(json.loads(model["definition"]), names, X)
        assert model["type"] == "model/ranklib"
        return ranklib(model["definition"], X)
    if fmt == "solr":
        return solr(json.loads(out.read_text()), X)
    if fmt == "vespa":
        text = out.read_text()
        if text.startswith("rank-profile"):
            return vespa_linear(text, names, X)
        body = json.loads(text)
        return vespa_xgboost(body, names, X) if isinstance(body, list) else vespa_lightgbm(body, names, X)
    if fmt == "lightgbm":
        import lightgbm as lgb

        return lgb.Booster(model_file=str(out)).predict(X)
    if fmt == "c":
        return compiled_c_scores(out, X)
    import xgboost as xgb

    return xgb.Booster(model_file=str(out)).inplace_predict(X).astype(np.float64)


def compiled_c_scores(source: Path, X: np.ndarray) -> np.ndarray:
    """``--format c``: the source compiled here by the test (``cc -O1``, not the export's library) and
    called through ctypes as a C caller would."""
    import ctypes

    library = source.with_name(source.stem + "_test.so")
    subprocess.run(["cc", "-O1", "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    predict = ctypes.CDLL(str(library)).ltr_predict
    predict.argtypes, predict.restype = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p], None
    rows = np.ascontiguousarray(X, dtype=F32)
    out = np.empty(rows.shape[0])
    predict(rows.ctypes.data, rows.shape[0], out.ctypes.data)
    return out


MISSING_AS_ZERO = {"solr"}  # and RankLib definitions (checked from the written type)


def engine_view(fmt: str, out: Path, X: np.ndarray) -> np.ndarray:
    """The rows the engine scores: NaN → 0 where the format has no missing values."""
    ranklib_file = fmt in ("opensearch", "elasticsearch") and '"model/ranklib"' in out.read_text()
    return np.where(np.isnan(X), F32(0), X) if fmt in MISSING_AS_ZERO or ranklib_file else X


def assert_parity(exported: np.ndarray, truth: np.ndarray, data: RankingData) -> float:
    rel = np.abs(exported - truth) / np.maximum(1.0, np.abs(truth))
    assert rel.max() <= TOL, f"worst relative difference {rel.max():.2e} at row {int(rel.argmax())}"
    for start, end in zip(data.offsets[:-1], data.offsets[1:], strict=True):
        t, e = truth[start:end], exported[start:end]
        separated = (t[:, None] - t[None, :]) > TOL * np.maximum(1.0, np.abs(t).max())
        assert not np.any(separated & (e[:, None] <= e[None, :])), "ranking differs within a query"
    return float(rel.max())


EXPECTED_REFUSALS = {
    ("lambdamart", "xgboost"),
    ("xendcg", "xgboost"),
    ("regression", "xgboost"),
    ("lambdamart_xgb", "lightgbm"),
    ("linear", "solr"),
    ("linear", "lightgbm"),
    ("linear", "xgboost"),
    ("ensemble_mean", "lightgbm"),
    ("ensemble_mean", "xgboost"),
    ("ensemble_blend", "lightgbm"),
    ("ensemble_blend", "xgboost"),
    *(("classification", fmt) for fmt in FORMATS if fmt != "onnx"),  # McRank: ONNX only
}
#: the cases the fast suite leaves to CI: a blend's members walked row by row by the pure-Python evaluators
#: (4-5 s each; ensemble_mean covers the same members in the fast suite)
CI_ONLY = {("ensemble_blend", "opensearch"), ("ensemble_blend", "elasticsearch"), ("ensemble_blend", "solr")}
CASES = [
    pytest.param(m, f, marks=[pytest.mark.slow] if (m, f) in CI_ONLY else [], id=f"{m}-{f}")
    for m in MODEL_CONFIGS
    for f in FORMATS
    if (m, f) not in EXPECTED_REFUSALS
]


def write(ranker: Any, fmt: str, folder: Path, **options: Any) -> tuple[Path, Any]:
    out = folder / f"{ranker.name}_{fmt}{FORMATS[fmt].suffix}"
    written = export(
        ranker, FORMATS[fmt], out, default_names(N_FEATURES), model_name="m", feature_set="fs", **options
    )
    return out, written


# --- parity per format and model family -----------------------------------------------------------
@pytest.mark.parametrize(("model", "fmt"), CASES)
def test_exported_file_scores_like_the_model(
    models: dict[str, Any], model: str, fmt: str, tmp_path: Path
) -> None:
    ranker = models[model]
    out, written = write(ranker, fmt, tmp_path)
    data = held_out_rows(ranker)
    X = engine_view(fmt, out, data.X)
    truth = ranker.predict(RankingData(X=X, y=data.y, qid=data.qid))
    names = default_names(N_FEATURES)
    exported = independent_scores(fmt, out, names, X)
    # stated deviations (Solr's unreachable thresholds near 0, JSON's missing +inf) are not compared;
    # everywhere else, including one float32 step outside each gap, the file must agree
    if written.gaps:
        in_gap = np.zeros(X.shape[0], dtype=bool)
        for gap in written.gaps:
            in_gap |= (X[:, gap.feature] > gap.low) & (X[:, gap.feature] <= gap.high)
        keep = ~in_gap
        truth, exported = truth[keep], exported[keep]
        data = RankingData(X=X[keep], y=data.y[keep], qid=data.qid[keep])
    assert_parity(exported, truth, data)
    # the shipped checker reads the file the same way as the independent evaluator
    shipped = FORMATS[fmt].score(out, X if not written.gaps else data.X, names)
    assert np.allclose(shipped, exported, rtol=1e-6, atol=1e-6)


# --- LightGBM splits whose missing_type is None or Zero ---------------------------------------------
# Every other model here is trained on data with NaN, so LightGBM writes missing_type NaN for every
# split. Without NaN in training it writes None (NaN is then scored as 0.0, whatever default_left
# says), with zero_as_missing Zero (0, |x| <= 1e-35 and NaN take the default direction).
#: every target that takes LightGBM trees: (format, write options)
LIGHTGBM_TARGETS = [pytest.param(f, {}, id=f) for f in FORMATS if f != "xgboost"] + [
    pytest.param("elasticsearch", {"model_type": "ranklib"}, id="elasticsearch-ranklib")
]
#: LightGBM's kZeroThreshold: its predictor reads every |x| <= this as 0
LIGHTGBM_ZERO = F32(1e-35)


def all_positive(data: RankingData) -> RankingData:
    return RankingData(X=np.abs(data.X) + F32(0.25), y=data.y, qid=data.qid, name=data.name)


NO_NAN = {"train": make_data(1, 40, nan_share=0.0), "valid": make_data(2, 10, nan_share=0.0)}
MISSING_TYPE_MODELS: dict[str, tuple[dict[str, Any], dict[str, RankingData]]] = {
    # no NaN in training: LightGBM writes missing_type None
    "none": ({"name": "lambdamart", "params": TREE_PARAMS}, NO_NAN),
    # zero_as_missing on features that are never 0: missing_type Zero, and (these data, LightGBM 4.7)
    # every split's default direction is the side 0 falls on anyway, so the model is exportable
    "zero": (
        {
            "name": "regression",
            "params": {"n_trees": 20, "min_data_in_leaf": 5, "num_leaves": 4},
            "engine_params": {"zero_as_missing": True},
        },
        {split: all_positive(d) for split, d in NO_NAN.items()},
    ),
    # zero_as_missing with zeros and NaN in training: some splits send 0 against their threshold
    "zero_mixed": (
        {"name": "lambdamart", "params": TREE_PARAMS, "engine_params": {"zero_as_missing": True}},
        {"train": TRAIN, "valid": VALID},
    ),
}


@pytest.fixture(scope="module")
def missing_type_models() -> dict[str, Any]:
    return {
        name: build_ranker(cfg, seed=3, num_threads=1).fit(data["train"], data["valid"])
        for name, (cfg, data) in MISSING_TYPE_MODELS.items()
    }


def native_splits(ranker: Any) -> list[dict[str, Any]]:
    """Every split of the trees the ranker predicts with, as LightGBM's own dump has it."""
    found = []

    def walk(node: dict[str, Any]) -> None:
        if "split_feature" in node:
            found.append(node)
            walk(node["left_child"])
            walk(node["right_child"])

    for info in ranker.booster_.dump_model(num_iteration=ranker.n_iterations_)["tree_info"]:
        walk(info["tree_structure"])
    return found


def zero_goes_left(split: dict[str, Any]) -> bool:
    """Where LightGBM's ``fval <= threshold`` sends 0.0."""
    return float(split["threshold"]) >= 0.0  # LightGBM: 0.0 <= threshold


def edge_rows(ranker: Any, base: np.ndarray, copies: int = 2) -> np.ndarray:
    """``base`` rows with one feature set to: each native threshold's float32 and the float32 just below
    and above it, 0.0, -0.0, NaN, ±1e-35 (LightGBM's zero band) and the float32 beyond it, ±1e-36, ±1e30."""
    values: dict[int, set[float]] = {f: set() for f in range(N_FEATURES)}
    for split in native_splits(ranker):
        with np.errstate(over="ignore"):  # a split at LightGBM's 1e300: +inf
            t = F32(split["threshold"])
        values[split["split_feature"]] |= {float(t), float(np.nextafter(t, F32(-np.inf))),
                                           float(np.nextafter(t, F32(np.inf)))}  # fmt: skip
    specials = [0.0, -0.0, np.nan, 1e-36, -1e-36, 1e30, -1e30]
    for z in (LIGHTGBM_ZERO, -LIGHTGBM_ZERO):
        specials += [float(z), float(np.nextafter(z, F32(np.copysign(np.inf, z))))]
    rng = np.random.default_rng(11)
    rows = [base]
    for feature, found in values.items():
        for value in sorted(found) + specials:
            extra = base[rng.integers(0, base.shape[0], copies)].copy()
            extra[:, feature] = value
            rows.append(extra)
    X = np.vstack(rows).astype(F32)
    assert np.signbit(X[X == 0]).any() and np.isnan(X).any()  # -0.0 and NaN survive the stacking
    return X[: (X.shape[0] // 10) * 10]


@pytest.mark.parametrize("model", list(MISSING_TYPE_MODELS))
@pytest.mark.parametrize(("fmt", "options"), LIGHTGBM_TARGETS)
def test_lightgbm_splits_without_nan_missing_type_score_like_lightgbm(
    missing_type_models: dict[str, Any], model: str, fmt: str, options: dict[str, Any], tmp_path: Path
) -> None:
    """Kills (ltr/export/reading.py, ``_lightgbm_tree``): a missing_type None split sending NaN by
    ``default_left`` or against where 0 goes (``nan = zero_left`` swapped), a Zero split sending NaN against
    its default direction, a Zero split read like a NaN one (the refusal dropped: a split that sends 0
    against its threshold is then exported with the wrong side for 0); and (``lightgbm_threshold``) values
    within LightGBM's ±1e-35 zero band not routed like 0."""
    ranker = missing_type_models[model]
    splits = native_splits(ranker)
    kinds = {s["missing_type"] for s in splits}
    against = [s for s in splits if s["missing_type"] == "Zero" and s["default_left"] != zero_goes_left(s)]
    # the premises, from LightGBM's own dump
    if model == "none":
        assert kinds == {"None"}
        # LightGBM writes default_left for None splits too; where 0 goes right it is not NaN's side
        assert any(s["default_left"] and not zero_goes_left(s) for s in splits)
    else:
        assert kinds == {"Zero"}
        assert bool(against) == (model == "zero_mixed"), len(against)
    refuse = bool(against) and fmt != "lightgbm"  # only the engine's own file keeps such a split
    try:
        out, written = write(ranker, fmt, tmp_path, **options)
    except ConfigError as e:
        assert refuse, e
        assert "zero_as_missing split" in str(e) and "sends 0 against its threshold" in str(e)
        assert not any(tmp_path.iterdir()), "a refused export writes nothing"
        return
    fresh = make_data(5, 8, nan_share=0.0)
    X = engine_view(fmt, out, edge_rows(ranker, (all_positive(fresh) if model == "zero" else fresh).X))
    data = RankingData(X=X, y=np.zeros(X.shape[0]), qid=np.repeat(np.arange(X.shape[0] // 10), 10))
    truth = np.asarray(ranker.booster_.predict(X, num_iteration=ranker.n_iterations_), dtype=np.float64)
    names = default_names(N_FEATURES)
    exported = independent_scores(fmt, out, names, X)
    shipped = np.asarray(FORMATS[fmt].score(out, X, names), dtype=np.float64)
    keep = np.ones(X.shape[0], dtype=bool)  # stated gaps (Solr's (0, 1e-35]) are not compared
    for gap in written.gaps:
        keep &= ~((X[:, gap.feature] > gap.low) & (X[:, gap.feature] <= gap.high))
    assert keep.mean() > 0.9
    kept = RankingData(X=X[keep], y=data.y[keep], qid=data.qid[keep])
    assert_parity(exported[keep], truth[keep], kept)
    assert_parity(shipped[keep], truth[keep], kept)
    assert not refuse, "exported a split that sends 0 against its threshold instead of refusing it"


@pytest.mark.parametrize(("model", "fmt"), sorted(EXPECTED_REFUSALS))
def test_a_model_the_format_cannot_express_is_refused(
    models: dict[str, Any], model: str, fmt: str, tmp_path: Path
) -> None:
    with pytest.raises(ConfigError, match=f"--format {fmt}|solr: a linear model"):
        write(models[model], fmt, tmp_path)
    assert not any(tmp_path.iterdir()), "a refused export writes nothing"


def test_ranklib_trees_for_elasticsearch_score_like_the_model(models: dict[str, Any], tmp_path: Path) -> None:
    ranker = models["lambdamart"]
    out, written = write(ranker, "elasticsearch", tmp_path, model_type="ranklib")
    assert written.missing == "zero"
    data = held_out_rows(ranker)
    X = np.where(np.isnan(data.X), F32(0), data.X)
    truth = ranker.predict(RankingData(X=X, y=data.y, qid=data.qid))
    assert_parity(independent_scores("elasticsearch", out, default_names(N_FEATURES), X), truth, data)


def test_refusals_name_the_reason(tmp_path: Path) -> None:
    classification = build_ranker({"name": "classification", "params": {"n_trees": 5}}, num_threads=1).fit(
        TRAIN
    )
    with pytest.raises(ConfigError, match="McRank.*expected grade.*only --format onnx"):
        write(classification, "vespa", tmp_path)
    zscore = build_ranker(
        {"name": "ensemble_mean", "members": [{"model": "lambdamart", "params": {"n_trees": 5}}] * 2,
         "params": {"normalization": "zscore"}}, num_threads=1,
    ).fit(TRAIN)  # fmt: skip
    with pytest.raises(ConfigError, match="per query.*zscore"):
        write(zscore, "vespa", tmp_path)
    rrf = build_ranker({"name": "ensemble_rrf", "members": [{"model": "lambdamart", "params": {"n_trees": 5}}] * 2},
                       num_threads=1).fit(TRAIN)  # fmt: skip
    with pytest.raises(ConfigError, match="ensemble_rrf"):
        write(rrf, "solr", tmp_path)


def test_zero_as_missing_splits_that_send_zero_against_the_threshold_are_refused(tmp_path: Path) -> None:
    cfg = {"name": "lambdamart", "params": TREE_PARAMS, "engine_params": {"zero_as_missing": True}}
    ranker = build_ranker(cfg, seed=3, num_threads=1).fit(TRAIN, VALID)
    with pytest.raises(
        ConfigError, match="zero_as_missing split on feature .* sends 0 against its threshold"
    ):
        write(ranker, "onnx", tmp_path)


#: every target that takes XGBoost trees: (format, write options)
XGBOOST_TARGETS = [pytest.param(f, {}, id=f) for f in FORMATS if f != "lightgbm"] + [
    pytest.param("elasticsearch", {"model_type": "ranklib"}, id="elasticsearch-ranklib")
]
PATIENCE = 3
EARLY_STOPPED = {
    "lightgbm": {
        "name": "lambdamart",
        "params": {"n_trees": 60, "learning_rate": 0.3, "min_data_in_leaf": 3},
    },
    "xgboost": {"name": "lambdamart_xgb", "params": {"n_trees": 60, "learning_rate": 0.3}},
}


@pytest.fixture(scope="module")
def trees_past_the_best() -> dict[str, Any]:
    """Per engine, an early-stopped ranker whose booster still holds the ``PATIENCE`` rounds trained after its best one.

    ``ltr``'s own fits trim the booster (LightGBM reloads it at the best iteration, the XGBoost adapter
    slices it), but a booster trained to the end is what ``backend=dask`` LambdaMART keeps (it finds the
    best round afterwards). Here: the same fit run to ``best + 1 + PATIENCE`` rounds without early stopping
    (the trees do not depend on when training stops), its booster put into the early-stopped ranker.
    """
    return {engine: _with_trees_past_the_best(cfg) for engine, cfg in EARLY_STOPPED.items()}


def _with_trees_past_the_best(cfg: dict[str, Any]) -> Any:
    stopped = build_ranker({**cfg, "early_stopping": {"patience": PATIENCE}}, seed=3, num_threads=1).fit(
        TRAIN, VALID
    )
    best = stopped.best_iteration_
    assert best is not None and best + 1 + PATIENCE < 60
    rounds = best + 1 + PATIENCE
    full = build_ranker(
        {**cfg, "params": {**cfg["params"], "n_trees": rounds}, "early_stopping": {"patience": 0}},
        seed=3,
        num_threads=1,
    ).fit(TRAIN, VALID)
    X = held_out_rows(stopped).X
    assert np.array_equal(engine_predict(stopped, X), engine_predict(full, X, best + 1))  # the same trees
    stopped.booster_ = full.booster_
    return stopped


def engine_predict(ranker: Any, X: np.ndarray, rounds: int | None = None) -> np.ndarray:
    """The engine's own raw scores of ``ranker.booster_`` over its first ``rounds`` rounds (all when None)."""
    if ranker.engine == "lightgbm":
        return np.asarray(ranker.booster_.predict(X, num_iteration=rounds or -1), dtype=np.float64)
    import xgboost as xgb

    dmatrix = xgb.DMatrix(X, missing=np.nan)
    margin = ranker.booster_.predict(dmatrix, output_margin=True, iteration_range=(0, rounds or 0))
    return np.asarray(margin, dtype=np.float64)


def exported_tree_count(fmt: str, out: Path) -> int:
    """Trees in a written file, counted in the file's own structure."""
    if fmt == "onnx":
        import onnx

        (node,) = onnx.load(str(out)).graph.node[:1]
        treeids = next(a for a in node.attribute if a.name == "nodes_treeids").ints
        return len(set(treeids))
    if fmt in ("opensearch", "elasticsearch"):
        model = json.loads(out.read_text())["model"]["model"]
        if model["type"] == "model/ranklib":
            return model["definition"].count("<tree ")
        return len(json.loads(model["definition"]))
    if fmt == "solr":
        return len(json.loads(out.read_text())["params"]["trees"])
    if fmt == "vespa":
        body = json.loads(out.read_text())
        return len(body) if isinstance(body, list) else len(body["tree_info"])
    if fmt == "lightgbm":
        import lightgbm as lgb

        return lgb.Booster(model_file=str(out)).num_trees()
    if fmt == "c":  # one function per tree in the source
        return out.read_text().count("static inline double tree_")
    import xgboost as xgb

    return xgb.Booster(model_file=str(out)).num_boosted_rounds()


@pytest.mark.parametrize(
    ("engine", "fmt", "options"),
    [pytest.param("lightgbm", *p.values, id="lightgbm-" + p.id) for p in LIGHTGBM_TARGETS]
    + [pytest.param("xgboost", *p.values, id="xgboost-" + p.id) for p in XGBOOST_TARGETS],
)
def test_only_the_best_iteration_is_exported(
    trees_past_the_best: dict[str, Any], engine: str, fmt: str, options: dict[str, Any], tmp_path: Path
) -> None:
    """Kills: every tree of the booster exported instead of the best iteration's (ltr/export/reading.py
    ``from_lightgbm``'s ``num_iteration`` and ``from_xgboost``'s slice; native.py's ``num_iteration`` /
    slice): the file must hold ``best_iteration + 1`` trees and score like the engine's own predict at the best
    round (LightGBM ``num_iteration``, XGBoost ``iteration_range``), not like every tree."""
    ranker = trees_past_the_best[engine]
    best = ranker.best_iteration_
    booster_trees = (
        ranker.booster_.num_trees() if engine == "lightgbm" else ranker.booster_.num_boosted_rounds()
    )
    assert booster_trees == best + 1 + PATIENCE  # the premise: trees past the best round are there
    out, written = write(ranker, fmt, tmp_path, **options)
    assert exported_tree_count(fmt, out) == best + 1
    data = held_out_rows(ranker)
    X = engine_view(fmt, out, data.X)
    at_best = engine_predict(ranker, X, best + 1)
    assert np.abs(engine_predict(ranker, X) - at_best).max() > 1e-2  # the later trees change the scores
    names = default_names(N_FEATURES)
    keep = np.ones(X.shape[0], dtype=bool)  # stated gaps are not compared
    for gap in written.gaps:
        keep &= ~((X[:, gap.feature] > gap.low) & (X[:, gap.feature] <= gap.high))
    kept = RankingData(X=X[keep], y=data.y[keep], qid=data.qid[keep])
    for scores in (independent_scores(fmt, out, names, X), FORMATS[fmt].score(out, X, names)):
        assert_parity(np.asarray(scores, dtype=np.float64)[keep], at_best[keep], kept)


BASE_SCORE = 50.0


@pytest.fixture(scope="module")
def xgboost_with_base_score() -> Any:
    """An XGBoost ranker whose base score (the margin every tree adds to) is far from 0."""
    cfg = {"name": "lambdamart_xgb", "params": {"n_trees": 25}, "engine_params": {"base_score": BASE_SCORE}}
    return build_ranker(cfg, seed=3, num_threads=1).fit(TRAIN, VALID)


@pytest.mark.parametrize(("fmt", "options"), XGBOOST_TARGETS)
def test_xgboost_base_score_is_folded_in(
    xgboost_with_base_score: Any, fmt: str, options: dict[str, Any], tmp_path: Path
) -> None:
    """Kills: the base score dropped (ltr/export/reading.py ``from_xgboost``: ``base = 0.0``; trees.py
    ``base_folded`` not shifting the first tree; onnx.py ``base_values`` of 0) or counted twice (folded
    into the first tree and also kept as ONNX's ``base_values``): every written file must score like
    XGBoost's own margin, which includes the base score of 50."""
    import xgboost as xgb

    ranker = xgboost_with_base_score
    config = json.loads(ranker.booster_.save_config())
    base = float(str(config["learner"]["learner_model_param"]["base_score"]).strip("[]"))
    assert base == BASE_SCORE  # the premise, from XGBoost's own config
    out, written = write(ranker, fmt, tmp_path, **options)
    data = held_out_rows(ranker)
    X = engine_view(fmt, out, data.X)
    margin = ranker.booster_.predict(xgb.DMatrix(X, missing=np.nan), output_margin=True).astype(np.float64)
    trees_only = margin - base
    assert np.abs(trees_only).max() < 10  # the base score, not the trees, puts the scores near 50
    names = default_names(N_FEATURES)
    keep = np.ones(X.shape[0], dtype=bool)  # stated gaps are not compared
    for gap in written.gaps:
        keep &= ~((X[:, gap.feature] > gap.low) & (X[:, gap.feature] <= gap.high))
    kept = RankingData(X=X[keep], y=data.y[keep], qid=data.qid[keep])
    for scores in (independent_scores(fmt, out, names, X), FORMATS[fmt].score(out, X, names)):
        assert_parity(np.asarray(scores, dtype=np.float64)[keep], margin[keep], kept)


def test_feature_map_names_the_features(models: dict[str, Any], tmp_path: Path) -> None:
    names = ["bm25_title", "bm25_body", "clicks", "freshness", "pagerank", "length"]
    fmap = tmp_path / "features.txt"
    fmap.write_text("".join(f"{j} {n} q\n" for j, n in reversed(list(enumerate(names, start=1)))))
    assert read_feature_map(fmap, N_FEATURES) == names
    out = tmp_path / "m.json"
    export(models["lambdamart"], FORMATS["solr"], out, names, model_name="m")
    body = json.loads(out.read_text())
    assert [f["name"] for f in body["features"]] == names
    X = np.where(np.isnan(TRAIN.X), F32(0), TRAIN.X)
    assert np.allclose(solr(body, X), models["lambdamart"].predict(X), rtol=1e-5, atol=1e-5)
    plain = tmp_path / "plain.txt"
    plain.write_text("# one name per line\n" + "\n".join(names) + "\n")
    assert read_feature_map(plain, N_FEATURES) == names


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a\nb\n", "no name for feature"),
        ("1 a\n1 b\n", "named twice"),
        ("1 a\nb\n", "mixes"),
        ("a\nb\nc\nd\ne\na\n", "used twice"),
        ("0 a\n", "1-based"),
    ],
)
def test_bad_feature_maps_are_config_errors(tmp_path: Path, text: str, message: str) -> None:
    fmap = tmp_path / "features.txt"
    fmap.write_text(text)
    with pytest.raises(ConfigError, match=message):
        read_feature_map(fmap, N_FEATURES)


def test_check_detects_a_tampered_file(models: dict[str, Any], tmp_path: Path) -> None:
    ranker = models["lambdamart"]
    out, written = write(ranker, "solr", tmp_path)
    assert check_parity(ranker, FORMATS["solr"], out, default_names(N_FEATURES), written, VALID).ok
    body = json.loads(out.read_text())
    node = next(
        t["root"]
        for t in body["params"]["trees"]
        if 0.01 < abs(F32(t["root"].get("threshold", "inf"))) < 1e30
    )
    node["threshold"] = repr(
        float(F32(node["threshold"]) - F32(1e-3))
    )  # values at the threshold now go right
    out.write_text(json.dumps(body))
    report = check_parity(ranker, FORMATS["solr"], out, default_names(N_FEATURES), written, VALID)
    assert not report.ok and report.worst > TOL


def test_cli_exports_a_saved_model_and_checks_it(models: dict[str, Any], tmp_path: Path, capsys) -> None:
    folder = tmp_path / "ranker"
    models["ensemble_mean"].save(folder)
    data = tmp_path / "test.txt"
    write_svmlight(RankingData(X=np.nan_to_num(VALID.X), y=VALID.y, qid=VALID.qid), data)
    out = tmp_path / "model.onnx"
    result = subprocess.run(
        [sys.executable, "-m", "ltr.export", str(folder), "--format", "onnx", "--out", str(out), "--check", str(data)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "worst relative difference" in result.stdout and ": OK" in result.stdout
    # a refusal: the command's main in-process (the real process above showed how it ends)
    code = command_in_process(
        "ltr.export", [str(folder), "--format", "lightgbm", "--out", str(tmp_path / "x.txt")], run_cli=False
    )
    assert code == 2 and "error: --format lightgbm" in capsys.readouterr().err
    assert not (tmp_path / "x.txt").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["{missing}", "--format", "onnx"], "no such file or folder"),
        (["{folder}", "--format", "solr", "--feature-names", "{fmap}"], "no name for feature"),
        (["{folder}", "--format", "onnx", "--check", "{missing}"], "{missing}"),
        (["{folder}", "--format", "onnx", "--out", "{tmp}"], "error: --out"),
    ],
)
def test_cli_bad_input_is_one_line_error(
    models: dict[str, Any], tmp_path: Path, args: list[str], message: str, capsys
) -> None:
    """``python -m ltr.export``'s main in-process: exit code 2, one ``error:`` line (an exception would
    escape and fail the test; the real process is in :func:`test_cli_exports_a_saved_model_and_checks_it`)."""
    folder = tmp_path / "ranker"
    models["lambdamart"].save(folder)
    fmap = tmp_path / "features.txt"
    fmap.write_text("a\nb\n")
    values = {
        "missing": str(tmp_path / "nope"),
        "folder": str(folder),
        "fmap": str(fmap),
        "tmp": str(tmp_path),
    }
    argv = [a.format(**values) for a in args]
    if "--out" not in argv:
        argv += ["--out", str(tmp_path / "m.out")]
    code = command_in_process("ltr.export", argv, run_cli=False)  # python -m ltr.export ARGV, in-process
    err = capsys.readouterr().err
    assert code == 2, err
    assert message.format(**values) in err and err.startswith("error: ") and err.count("\n") == 1


# --- logged models: the README's synthetic run ------------------------------------------------------
@pytest.mark.slow
def test_cli_exports_the_logged_model_of_a_training_run(tmp_path: Path) -> None:
    from helpers import TINY_DATA, cli_env, quick_model, run_train_cli, store_client

    proc = run_train_cli(["+model=lambdamart", *TINY_DATA, *quick_model(20), "num_threads=1"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    client = store_client(tmp_path)
    (run,) = client.search_runs([client.get_experiment_by_name("ltr").experiment_id])
    (logged,) = client.search_logged_models(experiment_ids=[run.info.experiment_id])
    client.create_registered_model("ltr-export-test")
    version = client.create_model_version(
        "ltr-export-test", logged.artifact_location, run_id=run.info.run_id, model_id=logged.model_id
    )
    env = {k: v for k, v in cli_env(tmp_path).items() if k != "MLFLOW_TRACKING_URI"}  # the default: $LTR_ROOT
    test_file = tmp_path / "data" / "synthetic" / "test.txt"
    assert test_file.is_file()
    for uri, fmt in (
        (f"runs:/{run.info.run_id}/model", "solr"),
        (f"models:/ltr-export-test/{version.version}", "onnx"),
    ):
        out = tmp_path / f"exported.{fmt}"
        result = subprocess.run(
            [sys.executable, "-m", "ltr.export", uri, "--format", fmt, "--out", str(out), "--check", str(test_file)],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr[-2000:]
        assert ": OK" in result.stdout and out.is_file()
        rows = int(result.stdout.split("parity: ")[1].split()[0])
        assert rows > 100  # the test split's rows plus the probes


def test_a_logged_model_folder_loads_from_its_ranker_artifact(models: dict[str, Any], tmp_path: Path) -> None:
    from ltr.models import pyfunc
    from ltr.tracking import loading

    assert loading.ARTIFACT == pyfunc.ARTIFACT  # repeated there so that loading a folder skips MLflow
    models["linear"].save(tmp_path / "model" / "artifacts" / pyfunc.ARTIFACT)
    loaded = loading.load_model(str(tmp_path / "model"), tracking_uri="", option="MODEL").ranker
    assert np.array_equal(loaded.weights_, models["linear"].weights_)


# --- verdicts: infinities, linear trees, objectives with an output transform (issue 25, case 6) -----
@pytest.mark.parametrize("fmt", ["onnx", "opensearch", "elasticsearch", "vespa"])
def test_a_linear_model_passes_its_parity_check(models: dict[str, Any], fmt: str, tmp_path: Path) -> None:
    """±inf probes give the same infinity on both sides (on main inf − inf counted as a mismatch)."""
    ranker = models["linear"]
    out, written = write(ranker, fmt, tmp_path)
    report = check_parity(ranker, FORMATS[fmt], out, default_names(N_FEATURES), written, VALID_FINITE)
    assert report.ok, report.summary()


VALID_FINITE = RankingData(X=np.nan_to_num(VALID.X), y=VALID.y, qid=VALID.qid)


def _fit_lightgbm(engine_params: dict[str, Any], name: str = "regression") -> Any:
    """A LightGBM ``regression`` ranker with ``engine_params`` (labels 0/1 for a probability objective)."""
    cfg = {"name": name, "params": TREE_PARAMS, "engine_params": engine_params}
    binary = engine_params.get("objective") in ("binary", "cross_entropy", "cross_entropy_lambda")
    train, valid = (
        RankingData(X=np.nan_to_num(d.X), y=np.minimum(d.y, 1) if binary else d.y, qid=d.qid)
        for d in (TRAIN, VALID)
    )
    return build_ranker(cfg, seed=3, num_threads=1).fit(train, valid)


@pytest.fixture(scope="module")
def linear_tree_model() -> Any:
    ranker = _fit_lightgbm({"linear_tree": True})
    assert "leaf_coeff" in json.dumps(ranker.booster_.dump_model())  # the leaves are linear
    return ranker


@pytest.mark.parametrize("fmt", ["onnx", "opensearch", "elasticsearch", "solr", "vespa"])
def test_linear_tree_models_are_refused_by_every_format_that_drops_the_coefficients(
    linear_tree_model: Any, fmt: str, tmp_path: Path
) -> None:
    out = tmp_path / f"model{FORMATS[fmt].suffix}"
    with pytest.raises(ConfigError, match=f"--format {fmt}: a LightGBM model trained with linear_tree=true"):
        export(linear_tree_model, FORMATS[fmt], out, default_names(N_FEATURES))
    assert not out.exists()


def test_a_linear_tree_model_exports_to_its_own_lightgbm_file(linear_tree_model: Any, tmp_path: Path) -> None:
    out, written = write(linear_tree_model, "lightgbm", tmp_path)
    report = check_parity(
        linear_tree_model, FORMATS["lightgbm"], out, default_names(N_FEATURES), written, VALID_FINITE
    )
    assert report.ok, report.summary()


@pytest.mark.parametrize("objective", ["poisson", "gamma", "tweedie", "cross_entropy", "binary"])
@pytest.mark.parametrize("fmt", ["onnx", "solr", "vespa", "opensearch"])
def test_lightgbm_objectives_with_an_output_transform_are_refused(
    objective: str, fmt: str, tmp_path: Path
) -> None:
    ranker = _fit_lightgbm({"objective": objective})
    with pytest.raises(ConfigError, match=f"LightGBM objective '{objective}' scores"):
        export(ranker, FORMATS[fmt], tmp_path / "m.out", default_names(N_FEATURES))


def _lightgbm_case(name: str) -> tuple[dict[str, Any], np.ndarray, np.ndarray, list[int] | None]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(240, 4))
    params: dict[str, Any] = {"objective": name, "verbose": -1, "num_leaves": 4, "min_data_in_leaf": 5}
    y, group = np.abs(X[:, 0]) + 0.1, None
    if name in ("binary", "cross_entropy", "cross_entropy_lambda"):
        y = (X[:, 0] > 0).astype(float)
    if name.startswith("multiclass"):
        params["num_class"], y = 3, np.arange(240) % 3
    if name in ("lambdarank", "rank_xendcg"):
        y, group = np.arange(240) % 3, [24] * 10
    return params, X, y, group


@pytest.mark.parametrize("name", sorted(__import__("ltr.export.reading", fromlist=["x"]).LIGHTGBM_OBJECTIVES))
def test_the_lightgbm_objective_table_matches_lightgbm(name: str) -> None:
    """Each entry trained with LightGBM: the name it records, and a transform exactly when predict applies one."""
    import lightgbm as lgb

    from ltr.export.reading import LIGHTGBM_OBJECTIVES

    params, X, y, group = _lightgbm_case(name)
    booster = lgb.train(params, lgb.Dataset(X, y, group=group), num_boost_round=3)
    assert booster.dump_model()["objective"].split()[0] == name
    raw, scored = booster.predict(X, raw_score=True), booster.predict(X)
    assert (LIGHTGBM_OBJECTIVES[name] is None) == (raw.shape == scored.shape and np.allclose(raw, scored))


@pytest.mark.parametrize("name", sorted(__import__("ltr.export.reading", fromlist=["x"]).XGBOOST_OBJECTIVES))
def test_the_xgboost_objective_table_matches_xgboost(name: str) -> None:
    import xgboost as xgb

    from ltr.export.reading import XGBOOST_OBJECTIVES

    rng = np.random.default_rng(0)
    X = rng.normal(size=(240, 4))
    y = np.abs(X[:, 0]) + 0.1
    params: dict[str, Any] = {"objective": name, "max_depth": 2}
    if name.startswith(("binary:", "reg:logistic")) or name == "rank:map":
        y = (X[:, 0] > 0).astype(float)
    if name.startswith("multi:"):
        params["num_class"], y = 3, np.arange(240) % 3
    if name == "reg:quantileerror":
        params["quantile_alpha"] = 0.5
    data = xgb.DMatrix(X, y)
    if name.startswith("rank:"):
        data.set_group([24] * 10)
        if name != "rank:map":
            data.set_label(np.arange(240) % 3)
    if name == "survival:aft":
        data.set_float_info("label_lower_bound", y)
        data.set_float_info("label_upper_bound", y)
    booster = xgb.train(params, data, 3)
    assert json.loads(booster.save_config())["learner"]["objective"]["name"] == name
    raw, scored = booster.predict(data, output_margin=True), booster.predict(data)
    assert (XGBOOST_OBJECTIVES[name] is None) == (raw.shape == scored.shape and np.allclose(raw, scored))


# --- parity in bounded memory (issue 29: a 500-tree, 63-leaf model's 38,084 probe rows were one n² query) ----------


def brute_force_inversions(exported: np.ndarray, expected: np.ndarray, offsets: np.ndarray) -> int:
    """The definition, pair by pair in plain Python (the reference for the blocked numpy count)."""
    from ltr.export.parity import TOLERANCE

    count = 0
    for q in range(len(offsets) - 1):
        rows = range(offsets[q], offsets[q + 1])
        for i in rows:
            for j in rows:
                tol = TOLERANCE * max(1.0, abs(expected[i]), abs(expected[j]))
                if expected[i] - expected[j] > tol and exported[i] <= exported[j]:
                    count += 1
    return count


def test_ranking_inversions_counted_in_blocks_equal_the_definition(monkeypatch):
    import ltr.export.parity as parity

    rng = np.random.default_rng(0)
    expected = np.round(rng.normal(size=300), 1)  # ties within tolerance
    exported = expected + rng.normal(scale=0.05, size=300)  # some pairs reversed
    exported[::17] = expected[::17]
    offsets = np.array([0, 7, 180, 300])
    want = brute_force_inversions(exported, expected, offsets)
    assert want > 0
    assert parity.ranking_inversions(exported, expected, offsets) == want
    monkeypatch.setattr(parity, "PAIR_CELLS", 50)  # blocks of a few rows: the same count
    assert parity.ranking_inversions(exported, expected, offsets) == want


def test_probe_rows_are_checked_in_groups_not_one_quadratic_query(models, tmp_path, monkeypatch):
    """Every probe row is still scored and compared; inversions only within groups of PROBE_GROUP rows."""
    import ltr.export.parity as parity

    seen = []
    real = parity.ranking_inversions

    def spy(exported, expected, offsets):
        seen.append(np.diff(offsets))
        return real(exported, expected, offsets)

    monkeypatch.setattr(parity, "ranking_inversions", spy)
    monkeypatch.setattr(parity, "PROBE_GROUP", 10)
    ranker = models["lambdamart"]
    out, written = write(ranker, "solr", tmp_path)
    report = check_parity(ranker, FORMATS["solr"], out, default_names(N_FEATURES), written)
    (sizes,) = seen
    assert report.ok and report.rows == int(sizes.sum()) and sizes.max() <= 10 and len(sizes) > 1
