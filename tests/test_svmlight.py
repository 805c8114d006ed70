"""SVMlight/LETOR reading and writing: grammar, strict errors with file:line, opt-ins, round trips.

Every test runs on both engines (the numba one and the pure-Python reference) and cross-checks
against scikit-learn's ``load_svmlight_file`` where the two tools agree on the format.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file

from ltr.core.errors import ConfigError, DataError
from ltr.data import RankingData
from ltr.data.svmlight import (
    load_svmlight,
    read_positions,
    read_query_sizes,
    regroup_order,
    write_svmlight,
)

ENGINES = ["python", "numba"]


@pytest.fixture(params=ENGINES)
def engine(request):
    return request.param


def _write(tmp_path, text: str | bytes, name: str = "f.txt"):
    p = tmp_path / name
    p.write_bytes(text.encode() if isinstance(text, str) else text)
    return p


TOY = "2 qid:1 1:0.5 3:1 # docid = a\n0 qid:1 2:0.25\n\n# a comment line\n1 qid:4 1:1 2:-3e-2 3:7\n"


def test_basic_dense(tmp_path, engine):
    d = load_svmlight(_write(tmp_path, TOY), engine=engine)
    assert isinstance(d, RankingData) and not d.is_sparse
    assert d.X.dtype == np.float32
    np.testing.assert_array_equal(d.X, np.array([[0.5, 0, 1], [0, 0.25, 0], [1, -0.03, 7]], np.float32))
    assert d.y.tolist() == [2, 0, 1]
    assert d.qid.tolist() == [1, 1, 4]
    assert d.group_sizes.tolist() == [2, 1]


def test_crlf_equals_lf(tmp_path, engine):
    lf = load_svmlight(_write(tmp_path, TOY, "lf.txt"), engine=engine)
    crlf = load_svmlight(_write(tmp_path, TOY.replace("\n", "\r\n"), "crlf.txt"), engine=engine)
    assert lf.fingerprint() == crlf.fingerprint()


def test_no_trailing_newline_and_tabs(tmp_path, engine):
    d = load_svmlight(_write(tmp_path, "1\tqid:3\t2:5\n0 qid:3 1:1"), engine=engine)
    assert d.X.tolist() == [[0, 5], [1, 0]] and d.y.tolist() == [1, 0]


def test_matches_sklearn(tmp_path, engine):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 12)).astype(np.float32)
    X[rng.random(X.shape) < 0.6] = 0
    d = RankingData(X=X, y=rng.integers(0, 5, 40), qid=np.repeat(np.arange(8), 5))
    p = write_svmlight(d, tmp_path / "r.txt")
    Xs, ys, qs = load_svmlight_file(str(p), query_id=True, zero_based=False, n_features=12, dtype=np.float32)
    got = load_svmlight(p, n_features=12, engine=engine, output="csr")
    assert got.is_sparse
    np.testing.assert_array_equal(got.X.toarray(), Xs.toarray())
    np.testing.assert_array_equal(got.y, ys)
    np.testing.assert_array_equal(got.qid, qs)


def test_zero_based_option(tmp_path, engine):
    p = _write(tmp_path, "1 qid:1 0:2 2:3\n")
    d = load_svmlight(p, zero_based=True, engine=engine)
    assert d.X.tolist() == [[2, 0, 3]]
    with pytest.raises(DataError, match=r"f\.txt:1: feature index 0 but indices are 1-based"):
        load_svmlight(p, engine=engine)


ERRORS = [
    ("x qid:1 1:1\n", 1, "expected a numeric label"),
    ("1 qid:1 1:1\n1 qid:a 1:1\n", 2, "expected qid:<non-negative integer>"),
    ("1 qid:1 1:1\n\n1 qid:1 11\n", 3, "expected index:value, got '11'"),
    ("1 qid:1 a:1\n", 1, "expected a non-negative integer feature index"),
    ("1 qid:1 -1:1\n", 1, "expected a non-negative integer feature index"),
    ("1 qid:1 1:\n", 1, "expected a numeric feature value, got '1:'"),
    ("1 qid:1 1:1:2\n", 1, "expected a numeric feature value"),
    ("1 qid:1 1:1e\n", 1, "expected a numeric feature value"),
    ("1 qid:1 1:0x10\n", 1, "expected a numeric feature value"),
    ("1 qid:1 1:1_0\n", 1, "expected a numeric feature value"),
    ("1 qid:1 3:1 2:1\n", 1, "feature indices must be increasing: 2 after 3"),
    ("1 qid:1 2:1 2:1\n", 1, "feature index 2 appears twice"),
    ("1.5 qid:1 1:1\n", 1, "label 1.5 is not an integer"),
    ("-1 qid:1 1:1\n", 1, "label -1 is negative"),
    ("nan qid:1 1:1\n", 1, "label nan is not a finite number"),
    ("1 qid:1 1:nan\n", 1, "feature 1 has the non-finite or huge value '1:nan'"),
    ("1 qid:1 1:1.79e308\n", 1, "feature 1 has the non-finite or huge value '1:1.79e308'"),
    ("1 qid:1 1:-inf\n", 1, "non-finite or huge value '1:-inf'"),
    ("1 qid:1 1:1\n1 1:1\n", 2, "line has no qid: but earlier lines have one"),
    ("1 1:1\n1 qid:2 1:1\n", 2, "line has a qid: but earlier lines have none"),
    ("1 qid:1 1:1\n0 qid:1 99999999999:1\n", 2, "expected a non-negative integer feature index"),
]


@pytest.mark.parametrize(("text", "line", "what"), ERRORS)
def test_errors_name_file_and_line(tmp_path, engine, text, line, what):
    p = _write(tmp_path, text.replace("\n", "\r\n"))
    with pytest.raises(DataError) as err:
        load_svmlight(p, engine=engine, query_file=None)
    msg = str(err.value)
    assert msg.startswith(f"{p}:{line}: "), msg
    assert what in msg


def test_n_features_bound(tmp_path, engine):
    p = _write(tmp_path, "1 qid:1 1:1\n0 qid:1 4:1\n")
    with pytest.raises(DataError, match=r"f\.txt:2: feature index 4 is above n_features=3"):
        load_svmlight(p, n_features=3, engine=engine)
    assert load_svmlight(p, n_features=6, engine=engine).n_features == 6
    with pytest.raises(DataError, match=r"f\.txt:2: feature index 4 is above n_features=4"):
        load_svmlight(p, n_features=4, zero_based=True, engine=engine)


def test_label_options(tmp_path, engine):
    p = _write(tmp_path, "1.5 qid:1 1:1\n-2 qid:1 1:1\n")
    d = load_svmlight(p, integer_labels=False, allow_negative_labels=True, engine=engine)
    assert d.y.tolist() == [1.5, -2.0]
    with pytest.raises(DataError, match=r"f\.txt:2: label -2 is negative"):
        load_svmlight(p, integer_labels=False, engine=engine)
    q = _write(tmp_path, "1 qid:1 1:1\n5 qid:1 1:1\n", "r.txt")
    with pytest.raises(DataError, match=r"r\.txt:2: label 5 is outside label_range \[0, 4\]"):
        load_svmlight(q, label_range=(0, 4), engine=engine)


def test_nonfinite_policies(tmp_path, engine):
    p = _write(tmp_path, "1 qid:1 1:1.79e308 2:-inf 3:nan 4:2\n")
    keep = load_svmlight(p, nonfinite="keep", engine=engine).X[0]
    assert keep[0] == np.inf and keep[1] == -np.inf and np.isnan(keep[2]) and keep[3] == 2
    miss = load_svmlight(p, nonfinite="missing", engine=engine).X[0]
    assert np.isnan(miss[:3]).all() and miss[3] == 2
    with pytest.raises(DataError, match=r"f\.txt:1: feature 3 is NaN .*cannot clip"):
        load_svmlight(p, nonfinite="clip", engine=engine)
    q = _write(tmp_path, "1 qid:1 1:1.79e308 2:-inf 3:5e10\n", "c.txt")
    clip = load_svmlight(q, nonfinite="clip", huge=1e10, engine=engine).X[0]
    np.testing.assert_array_equal(clip, np.array([1e10, -1e10, 1e10], np.float32))
    # with float64 features, a value above float32's range but below `huge` is kept exactly
    big = load_svmlight(
        _write(tmp_path, "1 qid:1 1:1e300\n", "b.txt"), dtype="float64", huge=1e308, engine=engine
    )
    assert big.X[0, 0] == 1e300


def test_unsorted_and_duplicates_opt_in(tmp_path, engine):
    p = _write(tmp_path, "1 qid:1 3:1 1:2 3:5\n0 qid:1 2:7 2:8\n")
    for output in ("dense", "csr"):
        d = load_svmlight(p, allow_unsorted=True, output=output, engine=engine)
        X = d.X.toarray() if d.is_sparse else d.X
        np.testing.assert_array_equal(X, [[2, 0, 5], [0, 8, 0]])
        if d.is_sparse:
            assert d.X.has_sorted_indices and d.X.nnz == 3


def test_non_contiguous_qids(tmp_path, engine):
    p = _write(tmp_path, "1 qid:5 1:1\n0 qid:3 1:2\n2 qid:5 1:3\n0 qid:3 1:4\n1 qid:9 1:5\n")
    with pytest.raises(DataError, match=r"f\.txt: qid 5 appears in two separate blocks \(rows 1-1 and 3-3\)"):
        load_svmlight(p, engine=engine, name="mslr/train")  # the message names the file, not the label
    d = load_svmlight(p, regroup=True, engine=engine)
    assert d.qid.tolist() == [5, 5, 3, 3, 9]
    assert d.X[:, 0].tolist() == [1, 3, 2, 4, 5]
    assert d.y.tolist() == [1, 2, 0, 0, 1]


def test_regroup_order_is_stable():
    assert regroup_order(np.array([2, 1, 2, 1, 2])).tolist() == [0, 2, 4, 1, 3]


def test_output_choice(tmp_path, engine):
    sparse = _write(tmp_path, "1 qid:1 1:1\n0 qid:1 100:1\n", "s.txt")
    assert load_svmlight(sparse, engine=engine).is_sparse
    assert not load_svmlight(sparse, output="dense", engine=engine).is_sparse
    dense = _write(tmp_path, "1 qid:1 1:1 2:0\n0 qid:1 1:0 2:3\n", "d.txt")
    assert not load_svmlight(dense, engine=engine).is_sparse
    assert load_svmlight(dense, output="csr", engine=engine).is_sparse
    assert load_svmlight(dense, dtype="float64", engine=engine).X.dtype == np.float64


def test_sidecars(tmp_path, engine):
    p = _write(tmp_path, "1 1:1\n0 2:1\r\n2 1:3\n")
    with pytest.raises(DataError, match="no qid: tokens and no .query sidecar"):
        load_svmlight(p, engine=engine)
    _write(tmp_path, "2\r\n1\r\n", "f.txt.query")
    d = load_svmlight(p, engine=engine)
    assert d.group_sizes.tolist() == [2, 1] and d.qid.tolist() == [0, 0, 1]
    _write(tmp_path, "0.5\n0.5\n2\n", "f.txt.weight")
    assert load_svmlight(p, engine=engine).weight.tolist() == [0.5, 2.0]
    _write(tmp_path, "0.5\n1\n2\n", "f.txt.weight")
    with pytest.raises(DataError, match=r"f\.txt\.weight:2: weight 1 differs from 0\.5"):
        load_svmlight(p, engine=engine)
    assert load_svmlight(p, weight_file=None, engine=engine).weight is None
    _write(tmp_path, "2\n2\n", "f.txt.query")
    with pytest.raises(DataError, match=r"f\.txt\.query: group sizes sum to 4 but the data file has 3 rows"):
        load_svmlight(p, weight_file=None, engine=engine)
    _write(tmp_path, "2\nx\n", "g.query")
    with pytest.raises(DataError, match=r"g\.query:2: expected a positive integer group size"):
        read_query_sizes(tmp_path / "g.query")


def test_read_positions_crlf(tmp_path):
    p = _write(tmp_path, "pos_1\r\npos_8\r\n", "x.position")
    assert read_positions(p).tolist() == ["pos_1", "pos_8"]


def test_docid_comments(tmp_path, engine):
    d = load_svmlight(_write(tmp_path, TOY), docid=True, engine=engine)
    assert d.docid.tolist() == ["a", "", ""]


def test_options_are_validated(tmp_path):
    p = _write(tmp_path, "1 qid:1 1:1\n")
    for bad in (
        {"nonfinite": "drop"},
        {"output": "coo"},
        {"dtype": "int8"},
        {"n_features": -1},
        {"label_range": (4, 0)},
        {"engine": "rust"},
    ):
        with pytest.raises(ConfigError):
            load_svmlight(p, **bad)
    with pytest.raises(DataError, match="no such file"):
        load_svmlight(tmp_path / "missing.txt")


# --- writing --------------------------------------------------------------------------------------
def _random_data(seed: int, dense: bool, dtype=np.float32) -> RankingData:
    rng = np.random.default_rng(seed)
    n, f = 50, 9
    X = (rng.normal(size=(n, f)) * 10.0 ** rng.integers(-8, 8, size=(n, f))).astype(dtype)
    X[rng.random(X.shape) < 0.5] = 0
    qid = np.sort(rng.integers(0, 12, n))
    y = rng.integers(0, 5, n)
    return RankingData(X=X if dense else sp.csr_matrix(X), y=y, qid=qid)


@pytest.mark.parametrize("dense", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_round_trip_exact(tmp_path, engine, dense, dtype):
    d = _random_data(1, dense, np.dtype(dtype))
    p = write_svmlight(d, tmp_path / "rt.txt")
    back = load_svmlight(p, n_features=d.n_features, dtype=dtype, output="dense", engine=engine)
    np.testing.assert_array_equal(back.X, d.X.toarray() if d.is_sparse else d.X)
    assert back.X.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(back.y, d.y)
    np.testing.assert_array_equal(back.qid, d.qid)


def test_writer_format(tmp_path):
    d = RankingData(
        X=np.array([[0, 1.5, 0], [0.1, 0, 0]], np.float32),
        y=[3, 0],
        qid=[7, 7],
        docid=np.array(["x", "y"], dtype=object),
    )
    text = write_svmlight(d, tmp_path / "w.txt").read_text()
    assert text == "3 qid:7 2:1.5 # docid = x\n0 qid:7 1:0.100000001 # docid = y\n"
    text = write_svmlight(d, tmp_path / "w.txt", comments=["a", "b"], zero_based=True).read_text()
    assert text == "3 qid:7 1:1.5 # a\n0 qid:7 0:0.100000001 # b\n"
    back = load_svmlight(tmp_path / "w.txt", zero_based=True, n_features=3, docid=True)
    assert back.docid.tolist() == ["a", "b"]
    with pytest.raises(ConfigError, match="line break"):
        write_svmlight(d, tmp_path / "w.txt", comments=["a\nb", "c"])
    assert sorted(x.name for x in tmp_path.iterdir()) == ["w.txt"]  # no temp files left behind


def test_float32_extremes_round_trip_with_defaults(tmp_path, engine):
    f32 = np.finfo(np.float32)
    X = np.array([[f32.max, -f32.max, f32.tiny, np.float32(1e-45)]], np.float32)
    d = RankingData(X=X, y=[1], qid=[1])
    back = load_svmlight(write_svmlight(d, tmp_path / "x.txt"), engine=engine)
    np.testing.assert_array_equal(back.X, X)
    # just above what rounds to a finite float32: caught as a sentinel
    with pytest.raises(DataError, match="non-finite or huge value '1:3.4028236e38'"):
        load_svmlight(_write(tmp_path, "1 qid:1 1:3.4028236e38\n", "o.txt"), engine=engine)


@pytest.mark.parametrize("chunk", [16, 64, 1 << 20])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("output", ["dense", "csr"])
def test_fast_engine_chunks_and_gaps_match_reference(tmp_path, chunk, threads, output):
    """Tiny chunks (lines longer than the buffer, many parts) with blank and comment lines in between:
    the gaps they leave in the upper-bound layout are closed, and the result equals the reference."""
    from ltr.data import _fastparse, _pyparse
    from ltr.data._syntax import ParseOptions

    rng = np.random.default_rng(chunk + threads)
    lines = []
    for i in range(120):
        feats = " ".join(
            f"{j}:{rng.normal():.6g}" for j in sorted(rng.choice(np.arange(1, 30), 6, replace=False))
        )
        lines.append(f"{rng.integers(0, 5)} qid:{i // 7} {feats} # d{i}: x")
        if rng.random() < 0.2:
            lines.append(rng.choice(["", "   ", "# only a comment: 1:2", "\t"]))
    text = ("\r\n".join(lines) + "\n").encode()
    p = _write(tmp_path, text)
    opts = ParseOptions(output=output, n_features=30)
    fast = _fastparse.parse_path(p, opts, n_threads=threads, chunk=chunk)
    ref = _pyparse.parse_bytes(text, opts)
    np.testing.assert_array_equal(fast.y, ref.y)
    np.testing.assert_array_equal(fast.qid, ref.qid)
    if output == "dense":
        np.testing.assert_array_equal(fast.dense, ref.dense)
    else:
        for a in ("indptr", "indices", "data"):
            np.testing.assert_array_equal(getattr(fast, a), getattr(ref, a))
    # and with n_features unknown (the exact scan for the largest index)
    loose = _fastparse.parse_path(p, ParseOptions(output=output), n_threads=threads, chunk=chunk)
    assert loose.n_features == _pyparse.parse_bytes(text, ParseOptions(output=output)).n_features


def test_thread_counts_give_identical_results(tmp_path):
    rng = np.random.default_rng(11)
    X = rng.random((300, 12)).astype(np.float32)
    d = RankingData(X=X, y=rng.integers(0, 5, 300), qid=np.repeat(np.arange(30), 10))
    p = write_svmlight(d, tmp_path / "t.txt")
    prints = {load_svmlight(p, n_threads=k, n_features=12).fingerprint() for k in (1, 2)}
    assert prints == {d.fingerprint()}
    cached = load_svmlight(p, n_threads=1, n_features=12, cache_dir=tmp_path / "c")
    assert cached.fingerprint() == d.fingerprint()


_TWO_THREADS = """
import sys, threading
import numpy as np
from ltr.data.svmlight import load_svmlight
paths, results, errors = sys.argv[1:3], {}, []
def work(i):
    try:
        for _ in range(15):
            results[i] = load_svmlight(paths[i], engine="numba", n_threads=2)
    except BaseException as exc:
        errors.append(repr(exc))
threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
for t in threads: t.start()
for t in threads: t.join()
assert not errors, errors
for i in range(2):
    alone = load_svmlight(paths[i], engine="numba", n_threads=2)
    assert np.array_equal(results[i].X, alone.X) and np.array_equal(results[i].qid, alone.qid)
print("ok")
"""


def test_two_threads_parsing_at_once_do_not_abort_the_process(tmp_path):
    """Dask's threaded workers parse shards from two threads at once. numba's ``workqueue`` threading
    layer (its fallback when OpenMP and TBB do not load) aborts the process when two threads launch
    parallel kernels together: CI lost an xdist worker to it. Forced here, the parse must still succeed."""
    from ltr.data.synthetic import generate

    paths = [tmp_path / f"part{i}.txt" for i in range(2)]
    for i, path in enumerate(paths):
        write_svmlight(generate(200, seed=i, max_docs=30), path)
    env = {**os.environ, "NUMBA_THREADING_LAYER": "workqueue"}
    proc = subprocess.run(
        [sys.executable, "-c", _TWO_THREADS, *map(str, paths)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]
