"""`python -m ltr.data` (info / convert / synth / list), the summary statistics, and the scale generator."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from ltr.core.errors import ConfigError, DataError
from ltr.data import RankingData, load_svmlight, write_svmlight
from ltr.data.__main__ import main
from ltr.data.info import summarize
from ltr.data.textgen import PRESETS, write_letor_splits, write_letor_text


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
    assert s["features_used"] == 8 and s["constant_features"] == 2
    assert s["constant_feature_ranges"] == [[4, 4], [6, 6]] and s["features_all_missing"] == 0
    sparse = summarize(load_svmlight(write_svmlight(d, tmp_path / "a.txt"), output="csr", n_features=9))
    assert {k: v for k, v in sparse.items() if k not in ("name", "storage")} == {
        k: v for k, v in s.items() if k not in ("name", "storage")
    }


def test_summary_counts_all_nan_features_as_missing_like_pandas(tmp_path):
    """A feature that is NaN in every row is missing, not used and not constant; one NaN among
    values leaves a feature's use and constancy to its other values (pandas' skipna semantics)."""
    nan = np.nan
    X = np.array(
        [[nan, 1, nan, 0, 2], [nan, 1, 3, 0, 2], [nan, 1, 4, nan, nan], [nan, 1, nan, 0, 2]], np.float32
    )
    d = RankingData(X=X, y=[0, 1, 0, 1], qid=[1, 1, 2, 2])
    df = pd.DataFrame(X)
    s = summarize(d)
    assert s["features_all_missing"] == int(df.isna().all().sum()) == 1
    assert s["features_used"] == int(((df != 0) & df.notna()).any().sum()) == 3
    constant = [i + 1 for i in df.columns if df[i].notna().any() and df[i].nunique(dropna=True) == 1]
    assert constant == [2, 4, 5]
    assert s["constant_feature_ranges"] == [[2, 2], [4, 5]] and s["constant_features"] == 3
    assert s["nonfinite_values"] == int(df.isna().sum().sum())
    path = tmp_path / "nan.txt"
    rows = ["0 qid:1 1:nan 2:1 3:nan 5:2", "1 qid:1 1:nan 2:1 3:3 5:2", "0 qid:2 1:nan 2:1 3:4 4:nan 5:nan",
            "1 qid:2 1:nan 2:1 3:nan 4:0 5:2"]  # fmt: skip
    path.write_text("\n".join(rows) + "\n")
    sparse = summarize(load_svmlight(path, nonfinite="keep", output="csr"))
    assert {k: v for k, v in sparse.items() if k not in ("name", "storage")} == {
        k: v for k, v in s.items() if k not in ("name", "storage")
    }


def test_info_on_a_huge_sparse_index_runs_in_bounded_memory(tmp_path):
    """One token ``2147483646:1`` makes a 2^31-column matrix: per-column arrays of that width need
    16 GB; the summary must work within a 1.5 GB address-space limit and report the runs."""
    path = tmp_path / "wide.txt"
    path.write_text("1 qid:1 2147483646:1\n0 qid:1 1:0.5\n0 qid:2 3:2\n")
    code = (
        "import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (3 << 29, 3 << 29));"
        "from ltr.data.__main__ import main; sys.exit(main(['info', sys.argv[1], '--json']))"
    )
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    s = json.loads(out.stdout)["file"]
    assert s["features"] == 2147483646 and s["features_used"] == 3
    assert s["constant_features"] == 2147483646 - 3
    assert s["constant_feature_ranges"] == [[2, 2], [4, 2147483645]]


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


def test_synth_splits_share_one_label_function(tmp_path):
    """A ranker fitted on the generated train file ranks the test file: both have the features the
    labels depend on (each split used to draw its own, so test labels were unrelated to train's)."""
    from helpers import held_out_spearman

    out = write_letor_splits(tmp_path, n_queries={"train": 150, "test": 60}, docs_per_query=30,
                             n_features=20, seed=3)  # fmt: skip
    train, test = (load_svmlight(out[s], n_features=20, label_range=(0, 4)) for s in ("train", "test"))
    assert held_out_spearman(train, test) > 0.3  # -0.006 when each file drew its own signal features


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


@pytest.mark.parametrize("pack", ["gzip", "bz2", "lzma", "zip"])
def test_info_reads_a_compressed_file_whatever_its_name_and_refuses_a_zip(tmp_path, capsys, pack):
    import bz2
    import gzip
    import lzma
    import zipfile

    text = b"1 qid:1 1:0.5\n0 qid:1 2:1\n"
    path = tmp_path / "train.txt"  # the name says nothing: the leading bytes do
    if pack == "zip":
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("train.txt", text)
        assert main(["info", str(path)]) == 2
        err = capsys.readouterr().err
        assert f"{path}: is a zip archive, which ltr does not read" in err and "unzip" in err
        assert "Traceback" not in err
        return
    (tmp_path / "plain.txt").write_bytes(text)
    assert main(["info", str(tmp_path / "plain.txt")]) == 0
    want = capsys.readouterr().out.replace(str(tmp_path / "plain.txt"), str(path))
    path.write_bytes({"gzip": gzip, "bz2": bz2, "lzma": lzma}[pack].compress(text))
    assert main(["info", str(path)]) == 0
    assert capsys.readouterr().out == want


def test_info_says_a_directory_or_fifo_is_one(tmp_path, capsys):
    import os

    assert main(["info", str(tmp_path)]) == 2
    assert f"{tmp_path}: is a directory, not a data file" in capsys.readouterr().err
    fifo = tmp_path / "stream.txt"
    os.mkfifo(fifo)
    assert main(["info", str(fifo)]) == 2  # never blocks opening the pipe
    assert f"{fifo}: is a named pipe (FIFO), not a regular file" in capsys.readouterr().err
    assert main(["info", str(tmp_path / "absent.txt")]) == 2
    assert "absent.txt: no such file" in capsys.readouterr().err


def test_huge_above_float32_cannot_let_inf_through(tmp_path):
    """1e39 fits neither float32 nor under huge=1e40: it would become inf with nonfinite='error'
    (and clip would clip to inf); the option itself is refused, for float64 it stays allowed."""
    path = tmp_path / "big.txt"
    path.write_text("1 qid:1 1:1e39 2:1\n0 qid:1 1:2 2:3\n")
    for policy in ("error", "clip"):
        with pytest.raises(ConfigError, match=r"^huge: 1e\+40 is above the float32 range .*dtype float64"):
            load_svmlight(path, huge=1e40, nonfinite=policy)
    assert load_svmlight(path, huge=1e40, dtype="float64").X[0, 0] == 1e39
    from ltr.data.registry import load_dataset

    with pytest.raises(ConfigError, match=r"^data\.parse\.huge: 1e\+40 is above the float32 range"):
        load_dataset(
            {"kind": "svmlight", "train": str(path), "parse": {"huge": 1e40}}
        )  # the config's spelling
    with pytest.raises(ConfigError, match=r"^data\.huge: 1e\+40"):
        load_dataset({"kind": "svmlight", "train": str(path), "huge": 1e40})
    wide = load_dataset({"kind": "svmlight", "train": str(path), "parse": {"huge": 1e40, "dtype": "float64"}})
    assert wide["train"].X[0, 0] == 1e39
    with pytest.raises(DataError, match="non-finite or huge value '1:1e39'"):
        load_svmlight(path)  # the default threshold still catches it
    d = load_svmlight(path, huge=3e38, nonfinite="clip")
    assert np.isfinite(d.X).all() and d.X[0, 0] == np.float32(3e38)
