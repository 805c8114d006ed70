"""`python -m ltr.data` (info / convert / synth / list), the summary statistics, and the scale generator."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from ltr.data import RankingData, load_svmlight, write_svmlight
from ltr.data.__main__ import main
from ltr.data.info import summarize
from ltr.data.textgen import PRESETS, write_letor_splits, write_letor_text
from ltr.errors import ConfigError


def test_summary_matches_pandas(tmp_path):
    rng = np.random.default_rng(4)
    n = 200
    X = rng.random((n, 9)).astype(np.float32)
    X[:, 3] = 0  # unused
    X[:, 5] = 2.5  # constant
    qid = np.sort(rng.integers(0, 30, n))
    y = rng.integers(0, 3, n)
    d = RankingData(X=X, y=y, qid=qid)
    s = summarize(d)
    df = pd.DataFrame({"q": qid, "y": y})
    g = df.groupby("q", sort=False)
    assert s["queries"] == df.q.nunique() and s["docs"] == n
    assert s["docs_per_query"]["median"] == g.size().median()
    assert s["label_histogram"] == df.y.value_counts().sort_index().to_dict()
    assert s["queries_without_relevant"] == int((g.y.max() == 0).sum())
    assert s["single_doc_queries"] == int((g.size() == 1).sum())
    assert s["features_used"] == 8 and s["constant_features"] == [4, 6]
    sparse = summarize(load_svmlight(write_svmlight(d, tmp_path / "a.txt"), output="csr", n_features=9))
    assert {k: v for k, v in sparse.items() if k not in ("name", "storage")} == {
        k: v for k, v in s.items() if k not in ("name", "storage")
    }


def test_synth_writes_parseable_letor(tmp_path):
    out = write_letor_splits(tmp_path, n_queries={"train": 8, "valid": 3, "test": 3}, docs_per_query=10,
                             n_features=12, seed=7)  # fmt: skip
    assert {p.name for p in out.values()} == {"train.txt", "vali.txt", "test.txt"}
    loaded = {s: load_svmlight(p, n_features=12, label_range=(0, 4)) for s, p in out.items()}
    assert [loaded[s].n_queries for s in ("train", "valid", "test")] == [8, 3, 3]
    qsets = [set(d.query_ids.tolist()) for d in loaded.values()]
    assert not (qsets[0] & qsets[1]) and not (qsets[0] & qsets[2]) and not (qsets[1] & qsets[2])
    sizes = loaded["train"].group_sizes
    assert sizes.min() >= 5 and sizes.max() <= 15
    assert set(np.unique(loaded["train"].y).tolist()) <= {0, 1, 2, 3, 4}
    # the generator is deterministic for a seed, and text is exactly what scikit-learn reads too
    again = write_letor_text(tmp_path / "again.txt", n_queries=8, docs_per_query=10, n_features=12, seed=1)
    same = write_letor_text(tmp_path / "same.txt", n_queries=8, docs_per_query=10, n_features=12, seed=1)
    assert again.read_bytes() == same.read_bytes()
    from sklearn.datasets import load_svmlight_file

    Xs, ys, qs = load_svmlight_file(str(again), query_id=True, n_features=12, dtype=np.float32)
    d = load_svmlight(again, n_features=12)
    np.testing.assert_array_equal(d.X, Xs.toarray())
    np.testing.assert_array_equal(d.qid, qs)
    sparse = write_letor_text(tmp_path / "sp.txt", n_queries=5, docs_per_query=10, n_features=50, density=0.1)
    assert load_svmlight(sparse, n_features=50).is_sparse
    with pytest.raises(ConfigError):
        write_letor_text(tmp_path / "x.txt", n_queries=0)
    with pytest.raises(ConfigError, match=r"^scale: expected one of \[.*\], got "):
        write_letor_splits(tmp_path, scale="huge")
    assert PRESETS["mslr_web30k"] == {"train": 18_919, "valid": 6_306, "test": 6_306}


def test_cli_synth_info_convert(tmp_path, capsys):
    assert main(["synth", str(tmp_path / "s"), "--queries", "12", "--splits", "--docs-per-query", "6",
                 "--features", "7"]) == 0  # fmt: skip
    assert "train.txt" in capsys.readouterr().out
    train = tmp_path / "s" / "train.txt"
    assert main(["info", str(train), "--n-features", "7"]) == 0
    text = capsys.readouterr().out
    assert "queries 8" in text and "docs/query" in text and "labels" in text
    assert main(["info", str(train), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)["file"]
    assert summary["queries"] == 8 and summary["features"] == 7
    assert main(["convert", str(train), "--cache-dir", str(tmp_path / "cache")]) == 0
    assert len(list((tmp_path / "cache").iterdir())) == 1
    assert main(["info", str(tmp_path / "nope.txt")]) == 2  # bad input: 2, as ltr.train, compare, evaluate
    assert "no such file" in capsys.readouterr().err


def test_cli_info_registry_name(tmp_path, capsys):
    rng = np.random.default_rng(0)
    (tmp_path / "MQ2008" / "Fold2").mkdir(parents=True)
    for i, name in enumerate(["train", "vali", "test"]):
        d = RankingData(
            X=rng.random((6, 46)).astype(np.float32), y=rng.integers(0, 3, 6), qid=np.repeat([i, 10 + i], 3)
        )
        write_svmlight(d, tmp_path / "MQ2008" / "Fold2" / f"{name}.txt")
    assert main(["info", "mq2008", "--fold", "2", "--data-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.count("queries 2") == 3 and "mq2008/valid" in out
    bad = RankingData(X=np.ones((2, 46), np.float32), y=[0, 4], qid=[1, 1])
    write_svmlight(bad, tmp_path / "MQ2008" / "Fold2" / "test.txt")
    assert main(["info", "mq2008", "--fold", "2", "--data-dir", str(tmp_path)]) == 2
    assert "Fold2/test.txt:2: label 4 is outside label_range [0, 2]" in capsys.readouterr().err


def test_cli_list_and_module_entry_point():
    out = subprocess.run(
        [sys.executable, "-m", "ltr.data", "list"], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0
    assert "mslr_web30k" in out.stdout and "manual (licence-gated)" in out.stdout
