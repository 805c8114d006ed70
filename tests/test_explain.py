"""``python -m ltr.explain``: exact contributions for every explainable family (they sum to the model's score),
agreement with shap's own TreeSHAP, pairs, refusals, bad input, and the rank-aware global importance."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ltr.attribution.contributions import explain_ranker
from ltr.attribution.importance import global_importance, query_mean_replaced
from ltr.data import RankingData
from ltr.data.svmlight import load_svmlight, write_svmlight
from ltr.explain import main
from ltr.metrics import evaluate
from ltr.models import build_ranker, load_ranker

N_FEATURES = 6


def _data(n_queries: int, seed: int, first_qid: int) -> RankingData:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(4, 12, n_queries)
    qid = np.repeat(np.arange(first_qid, first_qid + n_queries), sizes)
    X = rng.normal(size=(qid.size, N_FEATURES)).astype(np.float32)
    X[:, 5] = np.repeat(rng.normal(size=n_queries), sizes)  # a query-level feature
    y = np.clip(np.round(X[:, 0] + 0.5 * X[:, 1] ** 2 + rng.normal(scale=0.3, size=qid.size)), 0, 3)
    docid = np.array([f"D{i}" for i in range(qid.size)])
    return RankingData(X=X, y=y, qid=qid, docid=docid, name=f"seed{seed}")


FAMILIES = {
    "lambdamart": {"name": "lambdamart", "params": {"n_trees": 15, "num_leaves": 7}},
    "regression": {"name": "regression", "params": {"n_trees": 15, "num_leaves": 7}},
    "classification": {"name": "classification", "params": {"n_trees": 8, "num_leaves": 7}},
    "lambdamart_xgb": {"name": "lambdamart_xgb", "params": {"n_trees": 15}},
    "catboost": {"name": "catboost", "params": {"n_trees": 15}},
    "linear": {"name": "linear", "params": {}},
    "feature": {"name": "feature", "params": {"feature": 2, "direction": "asc"}},
    "ensemble_blend": {
        "name": "ensemble_blend",
        "members": [{"model": "lambdamart", "params": {"n_trees": 10}}, "linear"],
        "params": {"normalization": "zscore"},
    },
    "ensemble_mean": {
        "name": "ensemble_mean",
        "members": [{"model": "lambdamart_xgb", "params": {"n_trees": 10}}, "linear"],
        "params": {"normalization": "minmax", "weights": [2.0, 1.0]},
    },
    "random_forest": {"name": "random_forest", "params": {"n_trees": 5}},
    "ensemble_rrf": {"name": "ensemble_rrf", "members": ["linear", "linear"]},
}
REFUSED = {"random_forest": "random forest", "ensemble_rrf": "reciprocal rank fusion"}


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Train/valid data, a test FILE with a comment and blank lines (so line ≠ row + 1), one saved model per family."""
    root = tmp_path_factory.mktemp("explain")
    train, valid, test = _data(40, 0, 1), _data(15, 1, 100), _data(12, 2, 200)
    plain = root / "plain.txt"
    write_svmlight(test, plain)
    body = plain.read_text().splitlines()
    file = root / "test.txt"
    file.write_text("# a comment line\n" + "\n".join(body[:5]) + "\n\n   \n" + "\n".join(body[5:]) + "\n")
    lines = [2, 3, 4, 5, 6] + list(range(9, 9 + len(body) - 5))
    models = {}
    for name, cfg in FAMILIES.items():
        ranker = build_ranker(cfg, seed=0, num_threads=1).fit(train, valid)
        ranker.save(root / name)
        models[name] = root / name
    return {
        "root": root,
        "file": file,
        "lines": lines,
        "test": load_svmlight(file, docid=True),
        "models": models,
    }


def _run(capsys: pytest.CaptureFixture, *args: str) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


EXPLAINED = [name for name in FAMILIES if name not in REFUSED]


@pytest.mark.parametrize("family", EXPLAINED)
def test_json_contributions_sum_to_the_model_score(
    setup: dict, capsys: pytest.CaptureFixture, family: str
) -> None:
    code, out, err = _run(capsys, setup["models"][family], "--data", setup["file"], "--json")
    assert code == 0, err
    docs = json.loads(out)
    ranker = load_ranker(setup["models"][family])
    test = load_svmlight(setup["file"], docid=True, dtype=ranker.input_dtype)  # as ltr.explain reads it
    if family == "classification":  # McRank: the raw score of the highest grade, LightGBM's own raw output
        raw = ranker.booster_.predict(test.X, raw_score=True).reshape(-1, ranker.num_classes_)
        score = raw[:, -1]
    else:
        score = ranker.predict(test)
    assert len(docs) == test.n_docs
    assert [d["line"] for d in docs] == setup["lines"]
    assert [d["qid"] for d in docs] == test.qid.tolist()
    for d, s in zip(docs, score, strict=True):
        assert set(d) == {"qid", "line", "score", "bias", "contributions"}
        assert sorted(d["contributions"], key=int) == [str(j) for j in range(1, N_FEATURES + 1)]
        assert abs(d["score"] - s) <= 1e-9 * max(1.0, abs(s))
        assert abs(d["bias"] + sum(d["contributions"].values()) - d["score"]) <= 1e-6


def test_linear_and_feature_contributions_by_hand(setup: dict) -> None:
    test = setup["test"]
    lin = load_ranker(setup["models"]["linear"])
    c = explain_ranker(lin, test)
    np.testing.assert_allclose(c.values, test.X.astype(np.float64) * lin.weights_, rtol=0, atol=1e-12)
    assert np.all(c.bias == lin.bias_)
    feat = explain_ranker(load_ranker(setup["models"]["feature"]), test)
    expected = np.zeros_like(feat.values)
    expected[:, 1] = -test.X[:, 1]  # feature 2, direction asc
    np.testing.assert_array_equal(feat.values, expected)


def _shap_own_treeshap(booster: object, X: np.ndarray) -> np.ndarray:
    """shap's own C++ TreeSHAP over shap's own parse of the trees (not the engine's pred_contrib shortcut)."""
    shap = pytest.importorskip("shap")
    explainer = shap.TreeExplainer(booster)
    explainer.model.model_type = "internal"  # shap otherwise hands LightGBM/XGBoost models to the engine
    return np.asarray(explainer.shap_values(X, check_additivity=False), dtype=np.float64)


@pytest.mark.parametrize("family", ["lambdamart", "regression", "lambdamart_xgb"])
def test_tree_contributions_agree_with_shap(setup: dict, family: str) -> None:
    test = setup["test"]
    ranker = load_ranker(setup["models"][family])
    ours = explain_ranker(ranker, test)
    peer = _shap_own_treeshap(ranker.booster_, np.asarray(test.X, dtype=np.float64))
    tol = 1e-9 if family != "lambdamart_xgb" else 2e-6  # XGBoost's and shap's parse of it work in float32
    np.testing.assert_allclose(ours.values, peer, rtol=0, atol=tol)


def test_catboost_contributions_agree_with_shap(setup: dict) -> None:
    """shap has no TreeSHAP of its own for CatBoost's oblivious trees: it calls CatBoost's (the same numbers)."""
    shap = pytest.importorskip("shap")
    test = setup["test"]
    ranker = load_ranker(setup["models"]["catboost"])
    peer = shap.TreeExplainer(ranker.model_).shap_values(np.asarray(test.X))
    np.testing.assert_allclose(explain_ranker(ranker, test).values, peer, rtol=0, atol=1e-9)


@pytest.mark.parametrize("family", sorted(REFUSED))
def test_a_model_that_cannot_be_explained_is_refused(
    setup: dict, capsys: pytest.CaptureFixture, family: str
) -> None:
    code, out, err = _run(capsys, setup["models"][family], "--data", setup["file"], "--json")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: MODEL ")
    assert "cannot be explained exactly" in err and REFUSED[family] in err


def test_rank_normalised_blend_is_refused(setup: dict) -> None:
    ranker = load_ranker(setup["models"]["ensemble_blend"])
    ranker.params_ = {**ranker.params_, "normalization": "rank"}
    with pytest.raises(Exception, match="normalization=rank"):
        explain_ranker(ranker, setup["test"])


def test_pair_differences_sum_to_the_score_difference(setup: dict, capsys: pytest.CaptureFixture) -> None:
    test, lines = setup["test"], setup["lines"]
    a, b = 2, 4  # rows of the first query
    code, out, err = _run(
        capsys,
        setup["models"]["lambdamart"],
        "--data",
        setup["file"],
        "--pair",
        test.docid[a],
        str(lines[b]),
        "--json",
    )
    assert code == 0, err
    pair = json.loads(out)
    scores = load_ranker(setup["models"]["lambdamart"]).predict(test)
    assert pair["a"]["line"] == lines[a] and pair["b"]["line"] == lines[b]
    assert abs(pair["score_difference"] - (scores[a] - scores[b])) <= 1e-9
    diffs = [d["difference"] for d in pair["differences"]]
    assert abs(sum(diffs) + pair["bias_difference"] - pair["score_difference"]) <= 1e-9
    assert [abs(d) for d in diffs] == sorted((abs(d) for d in diffs), reverse=True)
    code, out, _ = _run(
        capsys, setup["models"]["lambdamart"], "--data", setup["file"], "--pair", test.docid[a], test.docid[b]
    )
    assert code == 0 and "c(A) − c(B)" in out and f"line {lines[a]}" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--query", "999"], "--query 999: no such query in"),
        (["--pair", "D0", "nope"], "--pair nope: no document"),
        (["--query", "200", "--pair", "D0", "D40"], "--pair D40: no document of query 200"),
        (["--pair", "2", "40"], "a pair is two documents of one query"),
        (["--pair", "D0", "D0"], "two different documents"),
        (["--global", "--query", "200"], "--global explains the whole of --data"),
        (["--global", "--metric", "nope@3"], "nope"),
        (["--out", "x"], "--out belongs to --global"),
        (["--grade", "1"], "--grade picks one grade"),
        (["--top", "0"], "--top 0"),
    ],
)
def test_bad_input_is_one_error_line(
    setup: dict, capsys: pytest.CaptureFixture, args: list[str], message: str
) -> None:
    code, out, err = _run(capsys, setup["models"]["lambdamart"], "--data", setup["file"], *args)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: ") and message in err


def test_feature_count_that_does_not_match_the_model(
    setup: dict, capsys: pytest.CaptureFixture, tmp_path: Path
) -> None:
    wide = tmp_path / "wide.txt"
    wide.write_text("1 qid:1 1:0.5 9:1.0\n0 qid:1 2:0.1\n")
    code, out, err = _run(capsys, setup["models"]["lambdamart"], "--data", wide, "--json")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert str(wide) in err and "9" in err


def test_grade_of_a_classification_model(setup: dict, capsys: pytest.CaptureFixture) -> None:
    code, out, err = _run(capsys, setup["models"]["classification"], "--data", setup["file"], "--grade", "9")
    assert code == 2 and "--grade 9: the model's grades are 0-" in err
    code, out, err = _run(
        capsys, setup["models"]["classification"], "--data", setup["file"], "--grade", "0", "--json"
    )
    ranker = load_ranker(setup["models"]["classification"])
    raw = ranker.booster_.predict(setup["test"].X, raw_score=True).reshape(-1, ranker.num_classes_)[:, 0]
    np.testing.assert_allclose([d["score"] for d in json.loads(out)], raw, rtol=0, atol=1e-12)


def test_query_mean_replacement_is_exact() -> None:
    X = np.array([[1.0, 5.0], [3.0, np.nan], [2.0, 7.0], [10.0, 8.0]])
    offsets = np.array([0, 3, 4])
    out = query_mean_replaced(X, offsets, 0)
    assert out[:, 0].tolist() == [2.0, 2.0, 2.0, 10.0] and np.array_equal(out[:, 1], X[:, 1], equal_nan=True)
    out = query_mean_replaced(X, offsets, 1)
    assert out[:, 1].tolist() == [6.0, 6.0, 6.0, 8.0]  # the missing value left out of the mean


def test_delta_ndcg_of_a_one_feature_model_by_hand(setup: dict) -> None:
    """The feature model uses feature 2 only: ΔNDCG is 0 for every other feature, and for feature 2 it is
    NDCG(model) − NDCG(all ties) (a query mean gives every document of a query one score)."""
    test = setup["test"]
    ranker = load_ranker(setup["models"]["feature"])
    result = global_importance(ranker, test, explain_ranker(ranker, test), metric="ndcg@5", B=200, seed=1)
    others = [j for j in range(N_FEATURES) if j != 1]
    assert np.all(result.per_query_delta[:, others] == 0.0)
    assert np.all(result.abs_ci[others] == 0.0)
    base = evaluate("ndcg@5", test.y, -test.X[:, 1].astype(np.float64), test.offsets)["ndcg@5"]
    tied = evaluate("ndcg@5", test.y, np.zeros(test.n_docs), test.offsets)["ndcg@5"]
    np.testing.assert_allclose(result.per_query_delta[:, 1], base - tied, rtol=0, atol=1e-12)
    assert result.delta_ci[1, 1] <= result.delta_ci[1, 0] <= result.delta_ci[1, 2]
    per_query = np.array(
        [np.abs(test.X[lo:hi, 1]).mean() for lo, hi in zip(test.offsets[:-1], test.offsets[1:], strict=True)]
    )
    np.testing.assert_allclose(result.per_query_abs[:, 1], per_query, rtol=1e-6)
    assert result.abs_ci[1, 0] == pytest.approx(per_query.mean(), rel=1e-6)


def test_global_writes_files_and_prints_the_table(
    setup: dict, capsys: pytest.CaptureFixture, tmp_path: Path
) -> None:
    out_dir = tmp_path / "imp"
    code, out, err = _run(
        capsys,
        setup["models"]["lambdamart"],
        "--data",
        setup["file"],
        "--global",
        "--out",
        out_dir,
        "--B",
        "200",
    )
    assert code == 0, err
    assert "mean |c|" in out and "Δndcg@10" in out
    for name in ("importance.csv", "importance.json", "per_query.csv", "importance.png", "per_query.png"):
        assert (out_dir / name).stat().st_size > 0
    rows = json.loads((out_dir / "importance.json").read_text())
    assert {r["feature"] for r in rows} == set(range(1, N_FEATURES + 1))
    query_level = next(r for r in rows if r["feature"] == 6)  # constant within each query: no Δ
    assert query_level["delta_ndcg@10"] == 0.0


@pytest.mark.slow
def test_cli_json_and_global_logged_into_a_run(setup: dict, tmp_path: Path) -> None:
    """The real command: --json on a file, and --global logged into an MLflow run (--log-to)."""
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    run_id = client.create_run(
        client.create_experiment("e", artifact_location=str(tmp_path / "art"))
    ).info.run_id
    client.set_terminated(run_id)
    cmd = [
        sys.executable,
        "-m",
        "ltr.explain",
        str(setup["models"]["lambdamart"]),
        "--data",
        str(setup["file"]),
    ]
    done = subprocess.run([*cmd, "--json"], capture_output=True, text=True, check=False, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)) == setup["test"].n_docs
    done = subprocess.run(
        [
            *cmd,
            "--global",
            "--B",
            "100",
            "--tracking-uri",
            uri,
            "--log-to",
            run_id,
            "--out",
            str(tmp_path / "o"),
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert f"logged to run {run_id}" in done.stdout
    logged = {Path(f.path).name for f in client.list_artifacts(run_id, "explain")}
    assert {"importance.csv", "importance.png", "per_query.png"} <= logged
    assert client.get_run(run_id).info.status == "FINISHED"
    done = subprocess.run(
        [*cmd, "--global", "--tracking-uri", uri, "--log-to", "0" * 32, "--out", str(tmp_path / "p")],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 2 and done.stderr.startswith(f"error: --log-to {'0' * 32}: no such run")


@pytest.mark.shared_data
def test_real_letor_file_lines_and_sums(
    shared_data: Path, capsys: pytest.CaptureFixture, tmp_path: Path
) -> None:
    """LETOR 4.0 MQ2008 (``shared/data/mq2008/vali.txt``): a model fit on its first queries explains a later
    query; lines point at the file's own lines, contributions sum to the score."""
    file = shared_data / "mq2008" / "vali.txt"
    if not file.is_file():
        pytest.skip(f"{file} not found")
    data = load_svmlight(file, docid=True)
    ranker = build_ranker({"name": "lambdamart", "params": {"n_trees": 20}}, seed=0, num_threads=1)
    ranker.fit(data.subset(np.arange(data.n_queries - 20)))
    ranker.save(tmp_path / "m")
    qid = str(data.query_ids[-1])
    code, out, err = _run(capsys, tmp_path / "m", "--data", file, "--query", qid, "--json")
    assert code == 0, err
    docs = json.loads(out)
    text = file.read_text().splitlines()
    for d in docs:
        assert text[d["line"] - 1].split()[1] == f"qid:{qid}"
        assert abs(d["bias"] + sum(d["contributions"].values()) - d["score"]) <= 1e-6
