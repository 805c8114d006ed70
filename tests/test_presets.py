"""Each metric preset reproduces its tool: the REAL tool runs here on the same random queries.

The queries (300, seeded) have coarse scores (many ties), ~10% without any relevant document,
single-document lists, and lists shorter than some cutoffs (k = 50). Tools reporting float64
per-query values are matched to 1e-12; tools reporting means are matched on the mean; gdeval prints
5 decimals and is matched to that precision.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from ltr.metrics import evaluate, mean

N_QUERIES = 300


def make_queries(seed: int, max_len: int = 40, n_grades: int = 5):
    """Labels, scores (multiples of 1/4: many ties, exact in float32), offsets, docnos."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, max_len + 1, N_QUERIES)
    sizes[:6] = 1
    offsets = np.r_[0, np.cumsum(sizes)]
    n = int(offsets[-1])
    labels = rng.integers(0, n_grades, n)
    labels[np.repeat(rng.random(N_QUERIES) < 0.1, sizes)] = 0
    scores = rng.integers(0, 12, n) / 4.0
    docno = np.array([f"D{rng.integers(0, 10**6):06d}-{j}" for j in range(n)])
    return labels, scores, offsets, docno


@pytest.fixture(scope="module")
def queries():
    return make_queries(2024)


def mean_of(name, labels, scores, offsets, **kw):
    return mean(evaluate(name, labels, scores, offsets, **kw)[name]).value


def assert_convention_matters(name, labels, scores, offsets, tool_value, **kw):
    """The test data must be able to fail: the default `ltr` preset gives a different mean."""
    other = mean(evaluate(name, labels, scores, offsets, preset="ltr", no_relevant="zero", **kw)[name]).value
    assert abs(other - tool_value) > 1e-4, f"{name}: data does not distinguish the preset from ltr"


# ----------------------------------------------------------------------------- trec_eval


def test_trec_preset_matches_pytrec_eval(queries):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    labels, scores, offsets, docno = queries
    rng = np.random.default_rng(5)
    judged = rng.random(labels.shape[0]) < 0.8
    run, qrels, ideal, ideal_off = {}, {}, [], [0]
    for q in range(N_QUERIES):
        rows = range(offsets[q], offsets[q + 1])
        run[f"q{q}"] = {docno[j]: float(scores[j]) for j in rows}
        judgments = {docno[j]: int(labels[j]) for j in rows if judged[j] or labels[j] > 0}
        for e in range(rng.integers(0, 4)):  # judged documents the run did not retrieve
            judgments[f"X{q}_{e}"] = int(rng.integers(0, 3))
        judgments = judgments or {f"X{q}_z": 0}
        qrels[f"q{q}"] = judgments
        ideal += judgments.values()
        ideal_off.append(len(ideal))
    measures = {
        "ndcg",
        "ndcg_cut.1,5,10,50",
        "map",
        "map_cut.5,10,50",
        "P.1,5,10,50",
        "recall.5,50",
        "recip_rank",
    }
    result = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    ours_by_trec = {
        "ndcg": "ndcg", "ndcg_cut_1": "ndcg@1", "ndcg_cut_5": "ndcg@5", "ndcg_cut_10": "ndcg@10",
        "ndcg_cut_50": "ndcg@50", "map": "map", "map_cut_5": "map@5", "map_cut_10": "map@10",
        "map_cut_50": "map@50", "P_1": "p@1", "P_5": "p@5", "P_10": "p@10", "P_50": "p@50",
        "recall_5": "r@5", "recall_50": "r@50", "recip_rank": "mrr",
    }  # fmt: skip
    ours = evaluate(list(ours_by_trec.values()), labels, scores, offsets, preset="trec", docno=docno,
                    ideal_labels=ideal, ideal_offsets=ideal_off)  # fmt: skip
    for trec_name, name in ours_by_trec.items():
        theirs = np.array([result[f"q{q}"][trec_name] for q in range(N_QUERIES)])
        np.testing.assert_allclose(ours[name], theirs, rtol=0, atol=1e-12, err_msg=trec_name)
    stable = evaluate("ndcg@5", labels, scores, offsets, preset="trec", ties="stable", docno=docno,
                      ideal_labels=ideal, ideal_offsets=ideal_off)["ndcg@5"]  # fmt: skip
    assert np.abs(stable - ours["ndcg@5"]).max() > 1e-3, "ties must matter in this data"


# ----------------------------------------------------------------------------- ranx


@pytest.mark.slow  # ranx's numba functions take ~25 s to load even from their cache (minutes cold)
def test_ranx_presets_match_ranx():
    ranx = pytest.importorskip("ranx")
    # ranx orders by numba's quicksort (np.argsort(-scores)): it keeps input order among ties only for
    # lists of <= 15 documents (insertion sort); longer lists here get distinct scores.
    labels, scores, offsets, _ = make_queries(7)
    rng = np.random.default_rng(8)
    for q in np.flatnonzero(np.diff(offsets) > 15):
        a, b = offsets[q], offsets[q + 1]
        scores[a:b] = rng.permutation(b - a) / 4.0
    qid = [f"q{q:04d}" for q in range(N_QUERIES)]  # ranx reports queries in sorted id order
    qrels, run, ideal, ideal_off = {}, {}, [], [0]
    for q in range(N_QUERIES):
        rows = range(offsets[q], offsets[q + 1])
        run[qid[q]] = {f"d{j}": float(scores[j]) for j in rows}
        judgments = {f"d{j}": int(labels[j]) for j in rows}
        judgments.update({f"x{q}_{e}": int(rng.integers(0, 4)) for e in range(rng.integers(0, 3))})
        qrels[qid[q]] = judgments
        ideal += judgments.values()
        ideal_off.append(len(ideal))
    names = {
        "ndcg@5": ("ranx", "ndcg@5"), "ndcg": ("ranx", "ndcg"), "ndcg@50": ("ranx", "ndcg@50"),
        "ndcg_burges@5": ("ranx_burges", "ndcg@5"), "ndcg_burges": ("ranx_burges", "ndcg"),
        "map@5": ("ranx", "map@5"), "map": ("ranx", "map"), "precision@5": ("ranx", "p@5"),
        "precision@50": ("ranx", "p@50"), "recall@5": ("ranx", "r@5"), "mrr": ("ranx", "mrr"),
        "mrr@3": ("ranx", "mrr@3"),
    }  # fmt: skip
    result = ranx.evaluate(
        ranx.Qrels(qrels), ranx.Run(run), list(names), return_mean=False, make_comparable=False
    )
    for ranx_name, (preset, name) in names.items():
        ours = evaluate(
            name, labels, scores, offsets, preset=preset, ideal_labels=ideal, ideal_offsets=ideal_off
        )
        np.testing.assert_allclose(
            ours[name], np.asarray(result[ranx_name]), rtol=0, atol=1e-12, err_msg=ranx_name
        )
    assert_convention_matters("ndcg@5", labels, scores, offsets, float(np.mean(result["ndcg@5"])),
                              ideal_labels=ideal, ideal_offsets=ideal_off)  # fmt: skip


# ----------------------------------------------------------------------------- scikit-learn


def test_sklearn_preset_matches_ndcg_score_with_ties(queries):
    from sklearn.metrics import dcg_score, ndcg_score

    labels, scores, offsets, _ = queries
    sizes = np.diff(offsets)
    ks = [1, 3, 10, 50, None]
    names = [f"{f}@{k}" if k else f for f in ("ndcg", "dcg") for k in ks]
    ours = evaluate(names, labels, scores, offsets, preset="sklearn")
    # scikit-learn takes equal-length lists as rows of a 2-d array and averages over rows: check the
    # mean of every group of equal-length queries (it refuses single-document lists).
    for size in np.unique(sizes[sizes >= 2]):
        qs = np.flatnonzero(sizes == size)
        rows = offsets[qs][:, None] + np.arange(size)
        for k in ks:
            suffix = f"@{k}" if k else ""
            t = ndcg_score(labels[rows], scores[rows], k=k, ignore_ties=False)
            d = dcg_score(labels[rows], scores[rows], k=k, ignore_ties=False)
            assert ours["ndcg" + suffix][qs].mean() == pytest.approx(t, rel=1e-12, abs=1e-14), (size, k)
            assert ours["dcg" + suffix][qs].mean() == pytest.approx(d, rel=1e-12, abs=1e-14), (size, k)
    for q in np.flatnonzero(sizes >= 2)[:40]:  # and query by query for some
        a, b = offsets[q], offsets[q + 1]
        assert ours["ndcg@3"][q] == pytest.approx(
            ndcg_score([labels[a:b]], [scores[a:b]], k=3), rel=1e-12, abs=1e-14
        )
    stable = evaluate("ndcg@3", labels, scores, offsets, preset="sklearn", ties="stable")["ndcg@3"]
    assert np.abs(stable - ours["ndcg@3"]).max() > 1e-3


# ----------------------------------------------------------------------------- LightGBM


def test_lightgbm_preset_matches_lightgbm_eval(queries):
    lgb = pytest.importorskip("lightgbm")
    labels, scores, offsets, _ = queries
    X = np.random.default_rng(1).random((labels.shape[0], 2))
    ks = [1, 3, 5, 10, 50]
    data = lgb.Dataset(X, labels, group=np.diff(offsets), init_score=scores, free_raw_data=False)
    params = dict(objective="lambdarank", metric=["ndcg", "map"], eval_at=ks, verbose=-1, num_threads=1)
    booster = lgb.Booster(params, data)  # no trees: the evaluated scores are exactly init_score
    result = {name: value for _, name, value, _ in booster.eval_train()}
    assert set(result) == {f"{m}@{k}" for m in ("ndcg", "map") for k in ks}
    for name, value in result.items():
        assert mean_of(name, labels, scores, offsets, preset="lightgbm") == pytest.approx(
            value, rel=0, abs=1e-12
        )
    assert_convention_matters("ndcg@10", labels, scores, offsets, result["ndcg@10"])
    assert_convention_matters("map@10", labels, scores, offsets, result["map@10"])


# ----------------------------------------------------------------------------- XGBoost


def _xgb_eval(xgb, labels, scores, offsets, metrics):
    X = np.random.default_rng(1).random((labels.shape[0], 2))
    qid = np.repeat(np.arange(offsets.shape[0] - 1), np.diff(offsets))
    data = xgb.DMatrix(X, label=labels, qid=qid, base_margin=scores)
    booster = xgb.train(dict(objective="rank:ndcg", eval_metric=metrics, nthread=1), data, num_boost_round=0)
    text = booster.eval(data, "e")  # "[0]\te-ndcg@5:0.51982746851708705\t..." (17 significant digits)
    return {kv.split(":")[0][2:]: float(kv.split(":")[1]) for kv in text.split("\t")[1:]}


def _ours_for_xgb(xgb_name, labels, scores, offsets):
    preset = "xgboost_minus" if xgb_name.endswith("-") else "xgboost"
    name = xgb_name.rstrip("-").replace("pre", "p")
    return mean_of(name, labels, scores, offsets, preset=preset)


def test_xgboost_presets_match_xgboost_eval(queries):
    xgb = pytest.importorskip("xgboost")
    labels, scores, offsets, _ = queries
    graded = ["ndcg@1", "ndcg@5", "ndcg@10", "ndcg@50", "ndcg", "ndcg-", "ndcg@5-"]
    result = _xgb_eval(xgb, labels, scores, offsets, graded)
    binary = (labels >= 2).astype(float)  # XGBoost's map / pre refuse graded labels
    binary_metrics = ["map@1", "map@5", "map@50", "map", "map-", "map@5-", "pre@1", "pre@5", "pre@50", "pre"]
    binary_result = _xgb_eval(xgb, binary, scores, offsets, binary_metrics)
    assert set(result) == set(graded) and set(binary_result) == set(binary_metrics)
    for name, value in result.items():
        assert _ours_for_xgb(name, labels, scores, offsets) == pytest.approx(value, rel=0, abs=1e-12), name
    for name, value in binary_result.items():
        assert _ours_for_xgb(name, binary, scores, offsets) == pytest.approx(value, rel=0, abs=1e-12), name
    # a bare "ndcg" is ndcg@32, not the whole list (lists here reach 40 documents)
    whole = mean_of("ndcg", labels, scores, offsets, preset="xgboost", default_k=None)
    assert abs(whole - result["ndcg"]) > 1e-4
    assert abs(result["ndcg"] - result["ndcg-"]) > 1e-3


# ----------------------------------------------------------------------------- CatBoost


def test_catboost_preset_matches_catboost_eval_metric(queries):
    utils = pytest.importorskip("catboost.utils")
    labels, scores, offsets, _ = queries
    qid = np.repeat(np.arange(N_QUERIES), np.diff(offsets))
    y = labels.astype(float)
    cases = [
        ("NDCG:top=10", "ndcg@10", {}),
        ("NDCG", "ndcg", {}),
        ("NDCG:top=5;type=Exp", "ndcg@5", dict(gain="exp2")),
        ("NDCG:top=5;denominator=Position", "ndcg@5", dict(discount="reciprocal")),
        ("DCG:top=10", "dcg@10", {}),
        ("MAP:top=3", "map@3", {}),
        ("MAP:top=50", "map@50", {}),
        ("MAP", "map", {}),
        ("PrecisionAt:top=10", "p@10", {}),
        ("PrecisionAt:top=50", "p@50", {}),
        ("RecallAt:top=10", "r@10", {}),
        ("MRR", "mrr", {}),
        ("MRR:top=3", "mrr@3", {}),
    ]
    for metric, name, kw in cases:
        value = utils.eval_metric(y, scores, metric, group_id=qid)[0]
        assert mean_of(name, labels, scores, offsets, preset="catboost", **kw) == pytest.approx(
            value, abs=1e-12
        ), metric
    ndcg10 = utils.eval_metric(y, scores, "NDCG:top=10", group_id=qid)[0]
    assert abs(mean_of("ndcg@10", labels, scores, offsets, preset="catboost", ties="stable") - ndcg10) > 1e-3
    # CatBoost's ERR takes the label itself as the stop probability: with 0/1 labels it is RR.
    binary = (labels >= 2).astype(float)
    err = utils.eval_metric(binary, scores, "ERR:top=10", group_id=qid)[0]
    assert mean_of("mrr@10", binary, scores, offsets, preset="catboost") == pytest.approx(err, abs=1e-12)


# ----------------------------------------------------------------------------- gdeval


def _gdeval_script() -> Path | None:
    try:
        import ir_measures
    except ImportError:
        return None
    script = Path(ir_measures.__file__).parent / "bin" / "gdeval.pl"
    return script if script.is_file() and shutil.which("perl") else None


def test_gdeval_preset_matches_gdeval_pl(queries, tmp_path):
    script = _gdeval_script()
    if script is None:
        pytest.skip("gdeval.pl (bundled with ir-measures) or perl not available")
    labels, scores, offsets, docno = queries
    qrels, run = tmp_path / "qrels", tmp_path / "run"
    with qrels.open("w") as fq, run.open("w") as fr:
        for q in range(N_QUERIES):
            for rank, j in enumerate(range(offsets[q], offsets[q + 1]), start=1):
                fq.write(f"{q + 1} 0 {docno[j]} {labels[j]}\n")
                fr.write(f"{q + 1} Q0 {docno[j]} {rank} {float(scores[j])!r} run\n")
    for k in (1, 5, 10, 50):
        out = subprocess.run(
            ["perl", str(script), str(qrels), str(run), str(k)], capture_output=True, text=True, check=True
        )
        rows = {
            int(r.split(",")[1]): (float(r.split(",")[2]), float(r.split(",")[3]))
            for r in out.stdout.splitlines()[1:]
        }
        ours = evaluate([f"ndcg@{k}", f"err@{k}"], labels, scores, offsets, preset="gdeval", docno=docno)
        kept = np.flatnonzero(~np.isnan(ours[f"ndcg@{k}"]))
        assert set(rows) == set(kept + 1)  # gdeval skips topics without relevant documents
        assert len(kept) < N_QUERIES
        theirs = np.array([rows[q + 1] for q in kept])
        np.testing.assert_allclose(ours[f"ndcg@{k}"][kept], theirs[:, 0], rtol=0, atol=5e-6 + 1e-12)
        np.testing.assert_allclose(ours[f"err@{k}"][kept], theirs[:, 1], rtol=0, atol=5e-6 + 1e-12)
