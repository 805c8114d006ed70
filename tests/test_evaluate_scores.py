"""``python -m ltr.evaluate --data FILE --scores PRED``: prediction files of other tools against LETOR data.

Truth comes from the tools themselves: LightGBM's and XGBoost's own evaluation of the model that wrote
the predictions, scikit-learn's ``ndcg_score``; the file's labels are read with scikit-learn's
``load_svmlight_file``, not with ``ltr``'s parser.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_svmlight_file

from ltr.core.errors import DataError
from ltr.evaluate import main
from ltr.io.predictions import detect_format, read_scores, write_scores
from ltr.io.trec import docnos

LIGHTGBM_AT = (1, 3, 5, 10)


def run_json(args: list[str], capsys) -> dict:
    assert main([*args, "--json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def letor_text(rng: np.random.Generator, sizes: list[int], n_features: int = 4, docid: bool = False) -> str:
    """LETOR lines: query q has sizes[q] documents, labels 0..2, random features."""
    lines = []
    for q, n in enumerate(sizes):
        for d in range(n):
            feats = " ".join(f"{j + 1}:{rng.random():.4f}" for j in range(n_features))
            comment = f" #docid = doc-{q}-{d} inc = 1" if docid else ""
            lines.append(f"{rng.integers(0, 3)} qid:{100 + q} {feats}{comment}")
    return "\n".join(lines) + "\n"


@pytest.fixture
def small(tmp_path: Path) -> Path:
    """4 queries of 3-6 documents with docid comments, and labels that give every query a relevant one."""
    rng = np.random.default_rng(3)
    text = letor_text(rng, [3, 5, 6, 4], docid=True)
    lines = text.splitlines()
    lines[0] = "2" + lines[0][1:]
    lines[3] = "1" + lines[3][1:]
    lines[8] = "2" + lines[8][1:]
    lines[14] = "1" + lines[14][1:]
    (tmp_path / "data.txt").write_text("\n".join(lines) + "\n")
    return tmp_path / "data.txt"


# --- truth from the engines -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mq2008(shared_data):
    path = shared_data / "mq2008" / "vali.txt"
    X, y, qid = load_svmlight_file(str(path), query_id=True)
    sizes = np.diff(np.flatnonzero(np.r_[True, qid[1:] != qid[:-1], True]))
    return path, X, y, qid, sizes


@pytest.mark.shared_data
def test_lightgbm_predictions_reproduce_lightgbm_ndcg_and_map(mq2008, tmp_path, capsys):
    lgb = pytest.importorskip("lightgbm")
    path, X, y, _qid, sizes = mq2008
    half = int(np.cumsum(sizes)[len(sizes) // 2 - 1])
    model = lgb.LGBMRanker(n_estimators=15, num_leaves=7, min_child_samples=5, verbose=-1, n_jobs=1)
    model.fit(
        X[:half], y[:half], group=sizes[: len(sizes) // 2],
        eval_set=[(X, y)], eval_group=[sizes], eval_at=list(LIGHTGBM_AT), eval_metric=["ndcg", "map"],
    )  # fmt: skip
    reported = {m: v[-1] for m, v in model.evals_result_["valid_0"].items()}
    write_scores(tmp_path / "lgb.pred", model.predict(X))
    measures = [a for k in LIGHTGBM_AT for a in ("-m", f"ndcg@{k}", "-m", f"map@{k}")]
    out = run_json(
        ["--data", str(path), "--scores", str(tmp_path / "lgb.pred"), "--preset", "lightgbm", *measures],
        capsys,
    )
    assert out["n_queries"] == len(sizes) and out["n_skipped"] == 0
    assert set(out["mean"]) == {f"{m}@{k}" for k in LIGHTGBM_AT for m in ("ndcg", "map")}
    for name, value in out["mean"].items():
        assert value == pytest.approx(reported[name], abs=1e-6), name
    # the default preset (ltr) skips queries without a relevant document: MQ2008 has such queries
    ltr = run_json(["--data", str(path), "--scores", str(tmp_path / "lgb.pred"), "-m", "ndcg@10"], capsys)
    empty = sum(
        1 for a, b in zip(np.r_[0, np.cumsum(sizes)[:-1]], np.cumsum(sizes), strict=True) if y[a:b].max() == 0
    )
    assert empty > 0 and ltr["n_skipped"] == empty and ltr["n_queries"] == len(sizes) - empty
    assert ltr["conventions"]["preset"] == "ltr" and out["conventions"]["no_relevant"] == "one"


@pytest.mark.shared_data
def test_xgboost_predictions_reproduce_xgboost_ndcg(mq2008, tmp_path, capsys):
    xgb = pytest.importorskip("xgboost")
    path, X, y, qid, _sizes = mq2008
    model = xgb.XGBRanker(n_estimators=10, max_depth=3, eval_metric=["ndcg@5", "ndcg@10"], n_jobs=1)
    model.fit(X, y, qid=qid, eval_set=[(X, y)], eval_qid=[qid], verbose=False)
    reported = {m: v[-1] for m, v in model.evals_result()["validation_0"].items()}
    np.savetxt(tmp_path / "xgb.pred", model.predict(X), fmt="%.9g")  # as the XGBoost CLI writes them
    args = ["--data", str(path), "--scores", str(tmp_path / "xgb.pred"), "--preset", "xgboost"]
    out = run_json([*args, "-m", "ndcg@5", "-m", "ndcg@10"], capsys)
    for name in ("ndcg@5", "ndcg@10"):
        assert out["mean"][name] == pytest.approx(reported[name], abs=2e-6), name


def test_sklearn_ndcg_score_per_query(tmp_path, capsys):
    rng = np.random.default_rng(11)
    sizes = [int(s) for s in rng.integers(2, 12, 25)]
    (tmp_path / "d.txt").write_text(letor_text(rng, sizes))
    scores = rng.normal(size=sum(sizes))
    write_scores(tmp_path / "s.txt", scores)
    from sklearn.metrics import ndcg_score

    _, y, qid = load_svmlight_file(str(tmp_path / "d.txt"), query_id=True)
    out = run_json(["--data", str(tmp_path / "d.txt"), "--scores", str(tmp_path / "s.txt"), "--preset", "sklearn",
                    "-m", "ndcg@5", "-m", "ndcg"], capsys)  # fmt: skip
    starts = np.r_[0, np.cumsum(sizes)]
    for q, (a, b) in enumerate(zip(starts[:-1], starts[1:], strict=True)):
        got = out["per_query"][str(100 + q)]
        assert str(int(qid[a])) == str(100 + q)
        for k, name in ((5, "ndcg@5"), (None, "ndcg")):
            want = ndcg_score([y[a:b]], [scores[a:b]], k=k)
            assert got[name] == pytest.approx(want, abs=1e-12), (q, name)
    assert out["n_queries"] == len(sizes)


# --- formats and their errors ---------------------------------------------------------------------------


def test_ranklib_format_is_detected_and_equals_the_lines_format(small, capsys):
    d = small.parent
    _, _, qid = load_svmlight_file(str(small), query_id=True)
    scores = np.random.default_rng(0).normal(size=qid.shape[0])
    write_scores(d / "lines.txt", scores)
    position = np.concatenate([np.arange(n) for n in np.unique(qid, return_counts=True)[1]])
    (d / "ranklib.txt").write_text(
        "".join(f"{int(q)}\t{i}\t{float(s)!r}\n" for q, i, s in zip(qid, position, scores, strict=True))
    )
    assert detect_format(d / "ranklib.txt") == "ranklib" and detect_format(d / "lines.txt") == "lines"
    a = run_json(
        ["--data", str(small), "--scores", str(d / "lines.txt"), "-m", "ndcg@3", "-m", "P_2"], capsys
    )
    b = run_json(
        ["--data", str(small), "--scores", str(d / "ranklib.txt"), "-m", "ndcg@3", "-m", "P_2"], capsys
    )
    assert a["per_query"] == b["per_query"] and set(a["mean"]) == {"ndcg@3", "P_2"}
    # forcing the wrong format is an error naming the first line
    assert main(["--data", str(small), "--scores", str(d / "ranklib.txt"), "--scores-format", "lines"]) == 2
    assert "ranklib.txt:1: expected 1 field (one score per line), got 3" in capsys.readouterr().err


BAD_SCORES = [
    ("0.1\n0.2\n", r"s.txt:2: the file ends after 2 scores but the data has 18 rows"),
    ("0.5\n" * 19, r"s.txt:19: more scores than data rows \(the data has 18 rows\)"),
    ("0.5\n" * 5 + "high\n" + "0.5\n" * 12, r"s.txt:6: score must be a number, got 'high'"),
    ("0.5\n" * 7 + "nan\n" + "0.5\n" * 10, r"s.txt:8: score must be finite, got 'nan'"),
    ("0.5\n" * 3 + "\n" + "0.5\n" * 15, r"s.txt:4: a blank line among the scores"),
    # a run of blank lines is named by its first line (mutant #24 named the last, line 6)
    ("0.5\n" * 3 + "\n\n\n" + "0.5\n" * 15, r"s.txt:4: a blank line among the scores"),
    ("0.5\n" * 3 + "1 0.5\n", r"s.txt:4: expected 1 field \(one score per line\), got 2"),
    ("1 2\n", r"s.txt:1: cannot tell the score format from 2 fields"),
    ("", r"s.txt: no scores \(the file is empty\)"),
    ("100\t0\t1\n100\t1\t1\n101\t2\t1\n", r"s.txt:3: qid 101 but row 3 of the data belongs to qid 100"),
    (
        "100\t0\t1\n100\t2\t1\n",
        r"s.txt:2: index 2 but row 2 of the data is document 1 \(0-based\) of qid 100",
    ),
    ("0.5\r0.5\n", r"s.txt:1: a carriage return"),
]


@pytest.mark.parametrize(("text", "match"), BAD_SCORES)
def test_bad_score_files_name_file_and_line(small, text, match, capsys):
    (small.parent / "s.txt").write_text(text, newline="")
    assert main(["--data", str(small), "--scores", str(small.parent / "s.txt")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err
    import re

    assert re.search(match, err), err


def test_trailing_blank_lines_and_crlf_are_accepted(small, capsys):
    write_scores(small.parent / "ref.txt", np.arange(18.0))
    (small.parent / "s.txt").write_bytes(
        "".join(f"{float(v)!r}\r\n" for v in np.arange(18.0)).encode() + b"\r\n\n"
    )
    a = run_json(["--data", str(small), "--scores", str(small.parent / "ref.txt"), "-m", "map"], capsys)
    b = run_json(["--data", str(small), "--scores", str(small.parent / "s.txt"), "-m", "map"], capsys)
    assert a["per_query"] == b["per_query"]


def test_error_exits_2_without_traceback_in_a_real_process(small):
    (small.parent / "s.txt").write_text("0.1\n")
    proc = subprocess.run(
        [sys.executable, "-m", "ltr.evaluate", "--data", str(small), "--scores", str(small.parent / "s.txt")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"{small.parent / 's.txt'}:1: the file ends after 1 scores but the data has 18 rows" in proc.stderr


def test_read_scores_ranklib_needs_qids(tmp_path):
    (tmp_path / "r.txt").write_text("1\t0\t0.5\n")
    with pytest.raises(DataError, match="RankLib format needs the data's query ids"):
        read_scores(tmp_path / "r.txt", n_rows=1, fmt="ranklib")


# --- output: json shape, per-query text, several systems --------------------------------------------------


def test_json_shape_and_names_follow_dash_m(small, capsys):
    scores = np.random.default_rng(5).normal(size=18)
    write_scores(small.parent / "s.txt", scores)
    out = run_json(["--data", str(small), "--scores", str(small.parent / "s.txt"),
                    "-m", "ndcg@10", "-m", "NDCG@3", "-m", "P.1,2", "-m", "recip_rank"], capsys)  # fmt: skip
    assert list(out) == ["mean", "per_query", "n_queries", "n_skipped", "conventions"]
    assert list(out["mean"]) == ["ndcg@10", "ndcg@3", "P_1", "P_2", "recip_rank"]
    assert list(out["per_query"]) == ["100", "101", "102", "103"]
    _, y, _ = load_svmlight_file(str(small), query_id=True)
    starts = [0, 3, 8, 14, 18]
    for q in range(4):  # P@1 / RR by hand: the label of the best-scored document of each query
        a, b = starts[q], starts[q + 1]
        order = a + np.argsort(-scores[a:b])
        first_rel = next(i for i, r in enumerate(order, 1) if y[r] >= 1)
        assert out["per_query"][str(100 + q)]["P_1"] == float(y[order[0]] >= 1)
        assert out["per_query"][str(100 + q)]["recip_rank"] == pytest.approx(1 / first_rel)
    assert out["mean"]["P_1"] == pytest.approx(np.mean([v["P_1"] for v in out["per_query"].values()]))


def test_per_query_text_and_every_scores_file_is_printed(small, capsys):
    for name, seed in (("a.pred", 1), ("b.pred", 2)):
        write_scores(small.parent / name, np.random.default_rng(seed).normal(size=18))
    args = [
        "--data",
        str(small),
        "--scores",
        str(small.parent / "a.pred"),
        "--scores",
        str(small.parent / "b.pred"),
    ]
    assert main([*args, "-m", "map", "-q"]) == 0
    lines = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    runids = [v.strip() for m, t, v in lines if m.strip() == "runid"]
    assert runids == ["a.pred", "b.pred"]
    assert sum(1 for m, t, _ in lines if m.strip() == "map" and t != "all") == 8
    both = run_json(args + ["-m", "map"], capsys)
    assert list(both) == ["systems"] and list(both["systems"]) == ["a.pred", "b.pred"]
    for name in ("a.pred", "b.pred"):
        single = run_json(["--data", str(small), "--scores", str(small.parent / name), "-m", "map"], capsys)
        assert both["systems"][name] == single


def test_same_file_name_in_two_folders_keeps_the_paths_apart(small, capsys):
    (small.parent / "x").mkdir()
    (small.parent / "y").mkdir()
    write_scores(small.parent / "x" / "pred.txt", np.arange(18.0))
    write_scores(small.parent / "y" / "pred.txt", -np.arange(18.0))
    out = run_json(["--data", str(small), "--scores", str(small.parent / "x" / "pred.txt"),
                    "--scores", str(small.parent / "y" / "pred.txt"), "-m", "map"], capsys)  # fmt: skip
    assert list(out["systems"]) == [
        str(small.parent / "x" / "pred.txt"),
        str(small.parent / "y" / "pred.txt"),
    ]


def test_write_run_uses_docid_comments_and_pytrec_eval_agrees(small, capsys):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    d = small.parent
    scores = np.random.default_rng(9).normal(size=18)
    write_scores(d / "s.txt", scores)
    assert main(["--data", str(small), "--scores", str(d / "s.txt"), "--write-run", str(d / "out.run"),
                 "--write-scores", str(d / "copy.txt"), "-m", "map"]) == 0  # fmt: skip
    capsys.readouterr()
    assert np.array_equal(np.loadtxt(d / "copy.txt"), scores)
    rows = [line.split() for line in (d / "out.run").read_text().splitlines()]
    assert rows[0][1] == "Q0" and rows[0][2].startswith("doc-0-") and {r[5] for r in rows} == {"s.txt"}
    assert [r[3] for r in rows[:3]] == ["1", "2", "3"]
    # qrels from the labels (scikit-learn's reader) and docids from the comments
    _, y, qid = load_svmlight_file(str(small), query_id=True)
    ids = [line.split("docid = ")[1].split()[0] for line in small.read_text().splitlines()]
    qrels: dict[str, dict[str, int]] = {}
    for q, doc, label in zip(qid, ids, y, strict=True):
        qrels.setdefault(str(int(q)), {})[doc] = int(label)
    with (d / "out.run").open() as f:
        run = pytrec_eval.parse_run(f)
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_3", "map", "P_2"}).evaluate(run)
    ours = run_json(["--data", str(small), "--scores", str(d / "s.txt"), "--preset", "trec",
                     "-m", "ndcg_cut_3", "-m", "map", "-m", "P_2"], capsys)  # fmt: skip
    for q, values in theirs.items():
        for name, value in values.items():
            assert ours["per_query"][q][name] == pytest.approx(value, abs=1e-12), (q, name)


def test_docnos_fall_back_to_row_numbers(tmp_path, capsys):
    (tmp_path / "d.txt").write_text("1 qid:5 1:0.1\n0 qid:5 1:0.2 # a comment without docid\n1 qid:6 1:0.3\n")
    write_scores(tmp_path / "s.txt", np.array([0.1, 0.2, 0.3]))
    assert main(["--data", str(tmp_path / "d.txt"), "--scores", str(tmp_path / "s.txt"),
                 "--write-run", str(tmp_path / "r.run")]) == 0  # fmt: skip
    capsys.readouterr()
    rows = [line.split() for line in (tmp_path / "r.run").read_text().splitlines()]
    # row 2's comment is free text, not an id: its row number stands in, as for rows without a comment
    assert [r[:4] for r in rows] == [["5", "Q0", "2", "1"], ["5", "Q0", "1", "2"], ["6", "Q0", "3", "1"]]
    assert docnos(np.array(["", "x"]), 2).tolist() == ["1", "x"]


def test_docnos_with_surrounding_whitespace_are_not_ids(tmp_path):
    """A docid with a leading or trailing space or tab holds whitespace (the docstring's rule): its row
    number stands in, so the run written with these docnos is valid (a docno with whitespace is refused).

    Kills mutant #25 (``docnos`` without the ``d == d.strip()`` test: ' d1' and 'd2<tab>' kept as ids). Data
    read from a file never has such ids (the reader strips comments); data built in memory can.
    """
    ids = docnos(np.array([" d1", "d2\t", "d3"]), 3)
    assert ids.tolist() == ["1", "2", "d3"]
    from ltr.io.trec import write_trec_run

    write_trec_run(
        tmp_path / "r.run", np.array([7, 7, 7]), np.array([0, 3]), ids, np.array([0.5, 1.0, 0.0]), "t"
    )
    assert [line.split()[2] for line in (tmp_path / "r.run").read_text().splitlines()] == ["2", "1", "d3"]


def test_usage_errors_name_the_options(small, capsys):
    write_scores(small.parent / "s.txt", np.zeros(18))
    cases = [
        (["--data", str(small)], "--data needs at least one --scores"),
        (["--data", str(small), "--scores", str(small.parent / "s.txt"), "--compare"], "--compare needs at least 2 systems"),
        (["--data", str(small), "--scores", str(small.parent / "s.txt"), "--scores", str(small.parent / "s.txt"),
          "--write-run", "x"], "--write-run / --write-scores write one system's scores; 2 systems"),
        (["--data", str(small), "--scores", str(small.parent / "s.txt"), "--fold", "2"], "--fold applies to a registry dataset"),
        ([], "give --qrels and --run"),
        (["--run", "r"], "--run needs --qrels"),
        (["--qrels", "q", "--run", "r", "--scores", "s"], "--scores needs --data"),
    ]  # fmt: skip
    for args, message in cases:
        assert main(args) == 2, args
        assert message in capsys.readouterr().err, args


def test_preset_choices_come_from_presets(monkeypatch):
    from ltr.evaluate import build_parser
    from ltr.metrics.conventions import PRESETS

    monkeypatch.setitem(PRESETS, "newtool", PRESETS["ltr"])
    action = next(a for a in build_parser()._actions if a.dest == "preset")
    assert "newtool" in action.choices and set(action.choices) == set(PRESETS)


@pytest.mark.shared_data
def test_lightgbm_example_with_query_sidecar(shared_data, tmp_path, capsys):
    """LightGBM's own lambdarank example: rank.train has no qid, its groups come from rank.train.query."""
    lgb = pytest.importorskip("lightgbm")
    path = shared_data / "lightgbm_lambdarank" / "rank.train"
    X, y = load_svmlight_file(str(path))
    group = np.loadtxt(str(path) + ".query", dtype=np.int64)
    model = lgb.LGBMRanker(n_estimators=10, num_leaves=15, verbose=-1, n_jobs=1)
    model.fit(X, y, group=group, eval_set=[(X, y)], eval_group=[group], eval_at=[3, 5])
    (history,) = model.evals_result_.values()  # LightGBM calls the training set given as eval set "training"
    reported = {m: v[-1] for m, v in history.items()}
    np.savetxt(tmp_path / "LightGBM_predict_result.txt", model.predict(X), fmt="%.17g")
    out = run_json(["--data", str(path), "--scores", str(tmp_path / "LightGBM_predict_result.txt"),
                    "--preset", "lightgbm", "-m", "ndcg@3", "-m", "ndcg@5"], capsys)  # fmt: skip
    assert out["n_queries"] == group.shape[0]
    for name in ("ndcg@3", "ndcg@5"):
        assert out["mean"][name] == pytest.approx(reported[name], abs=1e-6), name


def test_registry_dataset_split(tmp_path, capsys):
    """``--data mq2008 --fold 2 --split valid``: the registry's layout (Fold2/vali.txt) under --dir."""
    rng = np.random.default_rng(4)
    (tmp_path / "Fold2").mkdir()
    text = letor_text(rng, [4, 6, 5], n_features=46).splitlines()
    text = [
        ("1" + line[1:]) if i % 4 == 0 else line for i, line in enumerate(text)
    ]  # a relevant doc per query
    (tmp_path / "Fold2" / "vali.txt").write_text("\n".join(text) + "\n")
    scores = rng.normal(size=15)
    write_scores(tmp_path / "s.txt", scores)
    args = ["--scores", str(tmp_path / "s.txt"), "-m", "ndcg@3"]
    out = run_json(
        ["--data", "mq2008", "--dir", str(tmp_path), "--fold", "2", "--split", "valid", *args], capsys
    )
    direct = run_json(["--data", str(tmp_path / "Fold2" / "vali.txt"), *args], capsys)
    assert out["per_query"] == direct["per_query"] and list(out["per_query"]) == ["100", "101", "102"]
    # the test split of that fold is not there: the registry's message says where it looked
    assert main(["--data", "mq2008", "--dir", str(tmp_path), "--fold", "2", *args]) == 2
    assert f"expected file(s) not found: {tmp_path / 'Fold2' / 'test.txt'}" in capsys.readouterr().err


def test_ranklib_keeps_qid_spelling(tmp_path, capsys):
    """RankLib writes the qid as spelt in the data file (``qid:007`` → ``007``); ltr reads it as 7."""
    (tmp_path / "d.txt").write_text("1 qid:007 1:0.1\n0 qid:007 1:0.2\n2 qid:010 1:0.3\n0 qid:010 1:0.1\n")
    (tmp_path / "s.txt").write_text("007\t0\t0.5\n007\t1\t0.25\n010\t0\t-1.0E-4\n010\t1\t2.5E3\n")
    out = run_json(
        ["--data", str(tmp_path / "d.txt"), "--scores", str(tmp_path / "s.txt"), "-m", "P_1"], capsys
    )
    assert out["per_query"] == {
        "7": {"P_1": 1.0},
        "10": {"P_1": 0.0},
    }  # Java's 2.5E3 ranks the label-0 row first
    (tmp_path / "s.txt").write_text("007\t0\t0.5\n008\t1\t0.25\n")
    assert main(["--data", str(tmp_path / "d.txt"), "--scores", str(tmp_path / "s.txt")]) == 2
    assert "s.txt:2: qid 008 but row 2 of the data belongs to qid 7" in capsys.readouterr().err


BOM = b"\xef\xbb\xbf"  # spelled out: the test must not trust the code's constant


@pytest.mark.parametrize(
    "encoded",
    [
        BOM + b"0.5\n-1\n2\n",  # a UTF-8 byte order mark (Windows editors)
        b"0.5\r\n-1\r\n2\r\n",  # CRLF
        BOM + b"0.5\r\n-1\r\n2\r\n",
        BOM + b"\n0.5\n-1\n2\n",  # a first line holding only the byte order mark
        b"0.5\n-1\n2\n\n\n",  # blank lines after the last score
    ],
)
def test_score_files_follow_the_text_policy(tmp_path, encoded):
    (tmp_path / "s.txt").write_bytes(encoded)
    assert read_scores(tmp_path / "s.txt", n_rows=3).tolist() == [0.5, -1.0, 2.0]


@pytest.mark.parametrize(
    ("encoded", "match"),
    [
        (b"0.5\r-1\r2\r", r"s.txt:1: a carriage return \(\\r\) not followed by a line feed"),
        ("0.5\n-1\n2\n".encode("utf-16"), r"s.txt:1: the file is UTF-16 text"),
        (b"0.5\n\xff1\n2\n", r"s.txt:2: not UTF-8 text"),
        (b"0.5\n" + BOM + b"-1\n2\n", r"s.txt:2: a byte order mark \(U\+FEFF\) inside the file"),
    ],
)
def test_score_files_badly_encoded_name_file_and_line(tmp_path, encoded, match):
    (tmp_path / "s.txt").write_bytes(encoded)
    with pytest.raises(DataError, match=match):
        read_scores(tmp_path / "s.txt", n_rows=3)


# --- the official MSLR evaluation script on the same prediction file (a real peer tool) ------------------

MSLR_P = [f"p@{k}" for k in range(1, 11)] + ["map"]
MSLR_NDCG = [f"ndcg@{k}" for k in range(1, 11)] + ["meanndcg"]


@pytest.mark.shared_data
def test_mslr_preset_agrees_with_eval_score_mslr_on_the_same_prediction_file(mq2008, tmp_path, capsys):
    """``Eval-Score-MSLR.pl FEATURES PREDICTIONS OUT 1`` and ``--data FEATURES --scores PREDICTIONS
    --preset mslr`` read the same two files; every printed value (per query and Average) agrees."""
    from conftest import real_data_dir

    from ltr.metrics.conventions import PRESETS

    if "mslr" not in PRESETS:
        pytest.skip("the mslr preset (Eval-Score-MSLR.pl's conventions) is not in this checkout")
    script = real_data_dir().parent / "tools" / "letor" / "Eval-Score-MSLR.pl"
    perl = shutil.which("perl")
    if perl is None or not script.is_file():
        pytest.skip(f"perl or {script} is absent: the official MSLR script cannot run")
    path, X, _y, _qid, _sizes = mq2008
    rng = np.random.default_rng(2)
    scores = X[:, 38].toarray().ravel() + rng.normal(0, 0.05, X.shape[0])  # a noisy single feature
    scores = np.round(scores, 2)  # coarse: many ties, which both must keep in file order
    np.savetxt(tmp_path / "pred.txt", scores, fmt="%.2f")
    done = subprocess.run([perl, str(script), str(path), str(tmp_path / "pred.txt"), str(tmp_path / "out.txt"), "1"],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    printed: dict[str, dict[str, str]] = {}
    blocks = (tmp_path / "out.txt").read_text().strip().split("\n\n")
    for block, names in zip(blocks, (MSLR_P, MSLR_NDCG), strict=True):
        for row in block.strip().splitlines()[1:]:
            qid, *values = row.rstrip("\t").split("\t")
            printed.setdefault(qid, {}).update(zip(names, values, strict=True))
    measures = [a for name in MSLR_P + MSLR_NDCG for a in ("-m", name)]
    out = run_json(
        ["--data", str(path), "--scores", str(tmp_path / "pred.txt"), "--preset", "mslr", *measures], capsys
    )
    assert set(printed) == {*out["per_query"], "Average"}
    ours = {**out["per_query"], "Average": out["mean"]}
    differ = [
        (q, name, text, ours[q][name])
        for q, row in printed.items()
        for name, text in row.items()
        if f"{ours[q][name]:.4f}" != text
    ]
    assert not differ, differ[:10]
    assert sum(len(row) for row in printed.values()) == 22 * (len(out["per_query"]) + 1)


def test_the_registry_name_synthetic_reads_the_files_train_generated_as_they_are(tmp_path, capsys):
    """``ltr.data list`` shows ``synthetic``; ``--data synthetic`` evaluates its ``--split`` from the folder
    ``python -m ltr.train`` wrote (not "no such file"), without regenerating files made with other settings."""
    from ltr.core.config_check import check_block
    from ltr.data.config import SyntheticDataSchema
    from ltr.data.synthetic import load_synthetic

    folder = tmp_path / "data" / "synthetic"
    cfg = {"dir": str(folder), "n_queries": {"train": 12, "valid": 6, "test": 8}, "max_docs": 10}
    test = load_synthetic(check_block(SyntheticDataSchema, cfg, "data"))["test"]
    stamp = (folder / "test.txt").stat().st_mtime_ns
    scores = tmp_path / "s.txt"
    scores.write_text("\n".join(repr(float(v)) for v in np.random.default_rng(0).random(test.n_docs)) + "\n")
    common = ["--scores", str(scores), "-m", "ndcg@10", "--json"]
    by_name = run_json(["--data", "synthetic", "--data-dir", str(tmp_path / "data"), *common], capsys)
    by_file = run_json(["--data", str(folder / "test.txt"), *common], capsys)
    assert by_name["per_query"] == by_file["per_query"] and len(by_name["per_query"]) > 0
    assert (folder / "test.txt").stat().st_mtime_ns == stamp  # read as it is
