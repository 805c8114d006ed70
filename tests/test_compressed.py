"""Compressed inputs (issue 11, item 5): gzip, bzip2, xz and zstd files read like the plain file by the
SVMlight engines, the cache, every reader of qrels/runs/sidecars and ``ltr.data info``.

The plain file is the reference: every compressed read must give exactly its arrays, its errors
(same message, same line) and its evaluation numbers. The compressed bytes come from the standard
library's and zstandard's own compressors, never from ltr.
"""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
import zipfile
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import zstandard
from test_encodings import ACCEPTED, READERS, SEPARATORS, _plain

from ltr.core.errors import DataError
from ltr.data import _fastparse
from ltr.data.__main__ import main as data_main
from ltr.data._pyparse import ParseFailure
from ltr.data._syntax import ParseOptions
from ltr.data.reading import _failure_to_error
from ltr.data.svmlight import load_svmlight
from ltr.evaluate import main as evaluate_main
from ltr.io.trec import read_qrels, read_run

COMPRESS = {
    "gz": gzip.compress,
    "bz2": bz2.compress,
    "xz": lzma.compress,
    "zst": lambda b: zstandard.ZstdCompressor().compress(b),
}


def _rows(n_queries: int = 40, seed: int = 0, features: int = 30, keep: float = 0.6) -> list[str]:
    """SVMlight lines with comments, docids, blank lines and sparse rows (values as written by people)."""
    rng = np.random.default_rng(seed)
    lines = ["# generated for test_compressed", ""]
    for q in range(n_queries):
        for k in range(int(rng.integers(1, 12))):
            cols = [j for j in range(1, features + 1) if rng.random() < keep] or [1]
            feats = " ".join(f"{j}:{rng.normal():.7g}" for j in cols)
            lines.append(f"{rng.integers(0, 5)} qid:{100 + q} {feats} # docid = D{q}-{k}")
        if q % 7 == 3:
            lines.append("   # a comment line between queries")
    return lines


def _write(path: Path, lines: list[str], ext: str | None) -> Path:
    text = ("\n".join(lines) + "\n").encode()
    path.write_bytes(text if ext is None else COMPRESS[ext](text))
    return path


def _arrays(d) -> tuple:
    X = d.X.toarray() if sp.issparse(d.X) else np.asarray(d.X)
    return type(d.X).__name__, X.dtype, X, d.y, d.qid, None if d.docid is None else list(d.docid)


def _assert_same(a, b) -> None:
    for left, right in zip(_arrays(a), _arrays(b), strict=True):
        if isinstance(left, np.ndarray):
            np.testing.assert_array_equal(left, right)
        else:
            assert left == right


# --- the parser: exactly the plain file's arrays ---------------------------------------------------
@pytest.mark.parametrize("ext", list(COMPRESS))
@pytest.mark.parametrize("engine", ["numba", "python"])
@pytest.mark.parametrize("output", ["auto", "dense", "csr"])
def test_each_compression_parses_exactly_like_the_plain_file(tmp_path, ext, engine, output):
    lines = _rows()
    plain = _write(tmp_path / "train.txt", lines, None)
    packed = _write(tmp_path / f"train.txt.{ext}", lines, ext)
    want = load_svmlight(plain, engine=engine, output=output, docid=True)
    got = load_svmlight(packed, engine=engine, output=output, docid=True)
    _assert_same(got, want)
    assert got.docid[0] == "D0-0" and got.qid[0] == 100  # the reference itself read the text


def _raw_equal(a, b) -> None:
    assert a.n_features == b.n_features and a.n_replaced == b.n_replaced
    for name in ("y", "qid", "dense", "indptr", "indices", "data"):
        left, right = getattr(a, name), getattr(b, name)
        assert (left is None) == (right is None), name
        if left is not None:
            np.testing.assert_array_equal(left, right, err_msg=name)


#: Files whose beginning misleads a one-pass parse: the plan must be completed and the file parsed again.
TRICKY = {
    # dense rows first, then many sparse ones: output="auto" turns from dense to CSR
    "density falls": [f"1 qid:1 {' '.join(f'{j}:1' for j in range(1, 21))}"] * 40
    + [f"0 qid:{q} 1:0.5" for q in range(2, 400)],
    # sparse rows first, then dense ones: CSR turns dense
    "density rises": [f"0 qid:{q} 20:0.5" for q in range(1, 40)]
    + [f"1 qid:{q} {' '.join(f'{j}:2' for j in range(1, 21))}" for q in range(40, 400)],
    # dense rows with 5 columns, then a row with column 40: the dense rows written are too narrow
    "columns grow": [f"1 qid:{q} 1:1 2:2 3:3 4:4 5:5" for q in range(1, 300)]
    + ["0 qid:999 40:1", "1 qid:999 2:1"],
}


@pytest.mark.parametrize("case", list(TRICKY))
@pytest.mark.parametrize("threads", [1, 2])
def test_one_pass_parse_equals_two_pass_when_the_beginning_misleads(tmp_path, case, threads):
    """Small chunks make the first chunk's guess (layout, column count) wrong for the whole file."""
    plain = _write(tmp_path / "t.txt", TRICKY[case], None)
    packed = _write(tmp_path / "t.txt.gz", TRICKY[case], "gz")
    layout = {}
    for output in ("auto", "dense", "csr"):
        opts = ParseOptions(output=output)
        want = _fastparse.parse_path(plain, opts, n_threads=threads, chunk=512)
        got = _fastparse.parse_path(packed, opts, n_threads=threads, chunk=512)
        _raw_equal(got, want)
        layout[output] = "csr" if want.dense is None else "dense"
    assert layout["auto"] == {"density falls": "csr", "density rises": "dense", "columns grow": "csr"}[case]


@pytest.mark.parametrize("chunk", [64, 300, 4096])
@pytest.mark.parametrize("threads", [1, 2])
def test_small_chunks_and_long_lines_equal_the_plain_parse(tmp_path, chunk, threads):
    lines = _rows(n_queries=60, seed=3)
    lines.insert(10, "2 qid:100 " + " ".join(f"{j}:0.25" for j in range(1, 400)))  # longer than a chunk
    plain = _write(tmp_path / "t.txt", lines, None)
    packed = _write(tmp_path / "t.txt.xz", lines, "xz")
    for output in ("auto", "csr"):
        opts = ParseOptions(output=output, allow_unsorted=True)
        _raw_equal(
            _fastparse.parse_path(packed, opts, n_threads=threads, chunk=chunk),
            _fastparse.parse_path(plain, opts, n_threads=threads, chunk=chunk),
        )


def test_concatenated_streams_read_as_one_text(tmp_path):
    lines = _rows(n_queries=20)
    half = len(lines) // 2
    first, second = ("\n".join(part) + "\n" for part in (lines[:half], lines[half:]))
    want = load_svmlight(_write(tmp_path / "p.txt", lines, None), docid=True)
    for ext, pack in COMPRESS.items():
        path = tmp_path / f"cat.{ext}"
        path.write_bytes(pack(first.encode()) + pack(second.encode()))  # `cat a.gz b.gz`, pbzip2, ...
        _assert_same(load_svmlight(path, docid=True), want)


# --- recognised by magic bytes, not by name ----------------------------------------------------------
@pytest.mark.parametrize("ext", list(COMPRESS))
def test_a_compressed_file_under_any_name_is_read(tmp_path, ext):
    lines = _rows(n_queries=5)
    want = load_svmlight(_write(tmp_path / "p.txt", lines, None))
    _assert_same(load_svmlight(_write(tmp_path / "train.txt", lines, ext)), want)
    _assert_same(load_svmlight(_write(tmp_path / "train", lines, ext), engine="python"), want)


def test_a_name_promising_a_compression_the_bytes_lack_is_an_error(tmp_path):
    lines = _rows(n_queries=3)
    cases = {
        "plain.gz": (None, "the name ends in .gz but the file is not gzip-compressed (it is plain, uncompressed data)"),
        "bz.gz": ("bz2", "the name ends in .gz but the file is not gzip-compressed (it is bzip2-compressed)"),
        "gz.zst": ("gz", "the name ends in .zst but the file is not zstd-compressed (it is gzip-compressed)"),
        "gz.xz": ("gz", "the name ends in .xz but the file is not xz-compressed"),
    }  # fmt: skip
    for name, (ext, message) in cases.items():
        path = _write(tmp_path / name, lines, ext)
        for read in (load_svmlight, read_run):
            with pytest.raises(DataError) as e:
                read(path)
            assert str(e.value).startswith(f"{path}: {message}")


@pytest.mark.parametrize(
    ("make", "what", "command"),
    [
        ("zip", "a zip archive", "unzip"),
        ("7z", "a 7-Zip archive", "7z x"),
        ("rar", "a RAR archive", "unrar x"),
        ("lz4", "an LZ4-compressed file", "unlz4"),
    ],
)
def test_archives_and_other_compressions_are_refused_with_the_command_that_unpacks_them(
    tmp_path, capsys, make, what, command
):
    path = tmp_path / "train.txt"
    if make == "zip":
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("train.txt", "1 qid:1 1:0.5\n")
    else:
        magic = {"7z": b"7z\xbc\xaf\x27\x1c", "rar": b"Rar!\x1a\x07\x00", "lz4": b"\x04\x22\x4d\x18"}[make]
        path.write_bytes(magic + bytes(40))
    want = (
        f"{path}: is {what}, which ltr does not read (it reads gzip, bzip2, xz and zstd files); "
        f"unpack it first ({command} {path})"
    )
    for read in (load_svmlight, read_qrels):
        with pytest.raises(DataError) as e:
            read(path)
        assert str(e.value) == want
    assert data_main(["info", str(path)]) == 2
    err = capsys.readouterr().err
    assert want in err and "Traceback" not in err


# --- truncated and corrupt streams -----------------------------------------------------------------
def _corrupt(data: bytes) -> bytes:
    """Bytes flipped in the middle of the compressed data (after the header, before the trailer)."""
    raw = bytearray(data)
    for k in range(len(raw) // 2, len(raw) // 2 + 16):
        raw[k] ^= 0x55
    return bytes(raw)


READS = {
    "svmlight-numba": lambda p: load_svmlight(p, engine="numba"),
    "svmlight-python": lambda p: load_svmlight(p, engine="python"),
    "svmlight-docid": lambda p: load_svmlight(p, docid=True),
    "run": read_run,
}


@pytest.mark.parametrize("ext", list(COMPRESS))
@pytest.mark.parametrize("damage", ["truncated", "corrupt"])
@pytest.mark.parametrize("reader", list(READS))
def test_a_truncated_or_corrupt_stream_is_a_data_error_naming_the_file(tmp_path, ext, damage, reader):
    if reader == "run":
        rng = np.random.default_rng(1)
        text = "".join(
            f"{300 + q} Q0 d{q}-{k} {k + 1} {rng.random():.9f} tag\n" for q in range(80) for k in range(60)
        )
    else:
        text = "\n".join(_rows(n_queries=300, seed=2)) + "\n"
    packed = COMPRESS[ext](text.encode())
    path = tmp_path / f"data.{ext}"
    path.write_bytes(packed[: len(packed) * 2 // 3] if damage == "truncated" else _corrupt(packed))
    with pytest.raises(DataError) as e:
        READS[reader](path)
    msg = str(e.value)
    name = {"gz": "gzip", "bz2": "bzip2", "xz": "xz", "zst": "zstd"}[ext]
    assert msg.startswith(f"{path}: the {name} stream is "), msg
    assert damage in msg and " line " in msg and "decompressed text" in msg, msg
    line = int(msg.split(" line ")[1].split()[0])  # the line reached (1: no block was complete)
    assert 1 <= line <= text.count("\n") + 1


def test_the_line_reached_by_a_truncated_stream_is_exact(tmp_path):
    """A stream of two gzip members cut inside the second: the first member's lines were all read."""
    first = "".join(f"{q} Q0 d{q} 1 0.5 t\n" for q in range(1000)).encode()
    path = tmp_path / "run.gz"
    second = gzip.compress(b"7 Q0 x 1 0.5 t\n" * 1000)
    path.write_bytes(gzip.compress(first) + second[:-12])
    with pytest.raises(DataError, match=r"the gzip stream is truncated: it ends in line (\d+) ") as e:
        read_run(path)
    line = int(str(e.value).split(" line ")[1].split()[0])
    assert 1001 <= line <= 2001


def test_an_empty_compressed_file_says_it_has_no_data_rows(tmp_path):
    for ext in COMPRESS:
        path = tmp_path / f"empty.{ext}"
        path.write_bytes(COMPRESS[ext](b"# only a comment\n\n"))
        with pytest.raises(DataError, match="no data rows"):
            load_svmlight(path)


# --- one encoding policy, line numbers in the decompressed text ------------------------------------
def _encoding_cases():
    for reader in READERS:
        for encoding in ACCEPTED:
            yield reader, encoding
        if READERS[reader].comment is not None:
            yield reader, "U+2028 in comment"


@pytest.mark.parametrize(("reader", "encoding"), list(_encoding_cases()))
@pytest.mark.parametrize("ext", ["gz", "zst"])
def test_encodings_inside_compressed_text_read_like_the_plain_file(tmp_path, reader, encoding, ext):
    r = READERS[reader]
    if encoding in ACCEPTED:
        data = ACCEPTED[encoding](r)
    else:
        lines = list(r.lines)
        lines.insert(1, r.comment.format(sep=SEPARATORS["U+2028"]))
        data = "".join(line + "\n" for line in lines).encode()
    (tmp_path / "plain.txt").write_bytes(data)
    want = r.read(tmp_path / "plain.txt")
    path = tmp_path / f"file.{ext}"
    path.write_bytes(COMPRESS[ext](data))
    assert r.read(path) == want
    if encoding != "bom-only-first-line-blank":  # and like the LF file without BOM (test_encodings' check)
        assert want == r.read(_write(tmp_path / "lf.txt", _plain(r), None))


@pytest.mark.parametrize("reader", list(READERS))
def test_a_lone_cr_inside_compressed_text_names_its_decompressed_line(tmp_path, reader):
    r = READERS[reader]
    lines = list(r.lines)
    data = f"{lines[0]}\n{lines[1]}\r{lines[-1]}\n".encode()
    plain = tmp_path / "plain.txt"
    plain.write_bytes(data)
    with pytest.raises(DataError) as e:
        r.read(plain)
    want = str(e.value).removeprefix(str(plain))
    assert want.startswith(":2: a carriage return")
    path = tmp_path / "packed.txt.bz2"
    path.write_bytes(bz2.compress(data))
    with pytest.raises(DataError) as e:
        r.read(path)
    assert str(e.value) == f"{path}{want}"


def test_a_parse_error_names_the_decompressed_line_and_token_like_the_plain_file(tmp_path):
    lines = _rows(n_queries=200, seed=4)
    lines[-5] = "1 qid:400 1:0.5 2:x7"
    plain = _write(tmp_path / "bad.txt", lines, None)
    messages = []
    for path, engine in ((plain, "numba"), (_write(tmp_path / "bad.gz", lines, "gz"), "numba"),
                         (_write(tmp_path / "bad.xz", lines, "xz"), "python")):  # fmt: skip
        with pytest.raises(DataError) as e:
            load_svmlight(path, engine=engine)
        messages.append(str(e.value).removeprefix(str(path)))
    assert messages[0] == messages[1] == messages[2]
    assert messages[0].startswith(f":{len(lines) - 4}:") and "'2:x7'" in messages[0]


def test_a_lone_cr_late_in_the_file_comes_before_an_earlier_parse_error(tmp_path):
    """As in the plain two-pass parse: CR-only line endings are reported first, wherever they are."""
    lines = ["1 qid:1 1:x", *(f"0 qid:{q} 1:0.5" for q in range(2, 3000)), "0 qid:5000 1:1\r0 qid:5000 1:2"]
    plain, packed = _write(tmp_path / "p.txt", lines, None), _write(tmp_path / "p.gz", lines, "gz")
    for path in (plain, packed):
        with pytest.raises(DataError, match=f"{path}:{len(lines)}: a carriage return"):
            _load_chunked(path)


def _load_chunked(path: Path):
    try:
        return _fastparse.parse_path(path, ParseOptions(), n_threads=1, chunk=1024)
    except ParseFailure as fail:
        raise _failure_to_error(path, fail, ParseOptions()) from None


# --- the cache: keyed on the compressed file --------------------------------------------------------
def test_cache_hits_on_the_compressed_file_and_rebuilds_when_it_changes(tmp_path, monkeypatch):
    import ltr.data.cache as cache_module

    cache = tmp_path / "cache"
    lines = _rows(n_queries=30, seed=5)
    path = _write(tmp_path / "train.txt.gz", lines, "gz")
    first = load_svmlight(path, cache_dir=cache, docid=True)
    [entry] = [p for p in cache.iterdir() if p.is_dir()]
    manifest = json.loads((entry / "manifest.json").read_text())
    assert manifest["source"]["size"] == path.stat().st_size  # the compressed file, not a temp copy
    calls = []
    real = cache_module.parse_file
    monkeypatch.setattr(cache_module, "parse_file", lambda *a, **k: calls.append(a) or real(*a, **k))
    _assert_same(load_svmlight(path, cache_dir=cache, docid=True), first)
    assert calls == []  # a hit: nothing parsed
    changed = list(lines)
    changed[2] = changed[2].replace("0 qid:100", "4 qid:100", 1).replace("1 qid:100", "4 qid:100", 1)
    changed[2] = "4" + changed[2][1:]
    _write(path, changed, "gz")
    again = load_svmlight(path, cache_dir=cache, docid=True)
    assert len(calls) == 1 and again.y[0] == 4.0
    _assert_same(again, load_svmlight(_write(tmp_path / "plain.txt", changed, None), docid=True))


# --- qrels, runs, info ------------------------------------------------------------------------------
def _evaluate(capsys, qrels: Path, run: Path) -> str:
    assert evaluate_main(["--qrels", str(qrels), "--run", str(run), "-q", "-m", "ndcg", "-m", "P.5,10",
                          "-m", "map"]) == 0  # fmt: skip
    return capsys.readouterr().out


@pytest.mark.parametrize("ext", list(COMPRESS))
def test_compressed_qrels_and_runs_give_the_plain_trec_eval_numbers(tmp_path, capsys, ext):
    rng = np.random.default_rng(6)
    qrels = "".join(f"{t} 0 d{d} {rng.integers(0, 3)}\n" for t in range(301, 311) for d in range(30))
    run = "".join(f"{t} Q0 d{d} {d} {rng.random():.6f} sys\n" for t in range(301, 311) for d in range(25))
    (tmp_path / "q.txt").write_text(qrels)
    (tmp_path / "r.txt").write_text(run)
    want = _evaluate(capsys, tmp_path / "q.txt", tmp_path / "r.txt")
    assert "ndcg" in want and "all" in want
    (tmp_path / f"q.{ext}").write_bytes(COMPRESS[ext](qrels.encode()))
    (tmp_path / f"r.{ext}").write_bytes(COMPRESS[ext](run.encode()))
    assert _evaluate(capsys, tmp_path / f"q.{ext}", tmp_path / f"r.{ext}") == want
    assert _evaluate(capsys, tmp_path / f"q.{ext}", tmp_path / "r.txt") == want


@pytest.mark.shared_data
def test_trec_eval_test_files_gzipped_give_the_same_numbers(shared_data, tmp_path, capsys):
    trec = shared_data / "trec_eval"
    want = _evaluate(capsys, trec / "qrels.test", trec / "results.test")
    for name in ("qrels.test", "results.test"):
        (tmp_path / f"{name}.gz").write_bytes(gzip.compress((trec / name).read_bytes()))
    assert _evaluate(capsys, tmp_path / "qrels.test.gz", tmp_path / "results.test.gz") == want


@pytest.mark.parametrize("ext", ["gz", "xz"])
def test_data_info_on_a_compressed_file_reports_the_plain_summary(tmp_path, capsys, ext):
    lines = _rows(n_queries=25, seed=7)
    plain = _write(tmp_path / "train.txt", lines, None)
    packed = _write(tmp_path / f"train.txt.{ext}", lines, ext)
    assert data_main(["info", str(plain), "--json"]) == 0
    want = json.loads(capsys.readouterr().out)
    for args in ([], ["--cache-dir", str(tmp_path / "cache")]):
        assert data_main(["info", str(packed), "--json", *args]) == 0
        got = json.loads(capsys.readouterr().out)
        assert json.dumps(got).replace(str(packed), str(plain)) == json.dumps(want)
        assert got["file"]["docs"] == sum(1 for line in lines if line[:1].isdigit())


def test_sidecars_of_a_compressed_file_are_found_and_may_be_compressed_too(tmp_path):
    """LightGBM's layout: no qids, a .query sidecar (and .weight), next to train.txt or train.txt.gz."""
    text = b"1 1:0.5\n0 2:1\n2 1:1\n"
    (tmp_path / "p.txt").write_bytes(text)
    (tmp_path / "p.txt.query").write_bytes(b"2\n1\n")
    want = load_svmlight(tmp_path / "p.txt")
    assert want.group_sizes.tolist() == [2, 1]
    (tmp_path / "train.txt.gz").write_bytes(gzip.compress(text))
    (tmp_path / "train.txt.query").write_bytes(b"2\n1\n")  # the uncompressed file's sidecar
    _assert_same(load_svmlight(tmp_path / "train.txt.gz"), want)
    (tmp_path / "train.txt.gz.query").write_bytes(bz2.compress(b"1\n2\n"))  # PATH.query wins, compressed
    assert load_svmlight(tmp_path / "train.txt.gz").group_sizes.tolist() == [1, 2]


def test_text_that_merely_starts_like_a_compression_magic_is_text(tmp_path):
    """bzip2's magic is "BZh" and a block size digit: a run whose first topic is "BZhx" is a run."""
    path = tmp_path / "run.txt"
    path.write_text("BZhx Q0 d1 1 2.5 t\nBZhx Q0 d2 2 1.5 t\n")
    assert read_run(path).topics == ["BZhx"]


def test_command_lines_print_one_line_for_a_truncated_stream(tmp_path, capsys):
    text = "\n".join(_rows(n_queries=200, seed=8)) + "\n"
    data = tmp_path / "train.txt.gz"
    data.write_bytes(gzip.compress(text.encode())[:-100])
    assert data_main(["info", str(data)]) == 2
    err = capsys.readouterr().err
    assert f"{data}: the gzip stream is truncated" in err and "Traceback" not in err
    run = tmp_path / "run.zst"
    run.write_bytes(zstandard.ZstdCompressor().compress(b"301 Q0 d1 1 2.5 t\n" * 5000)[:-20])
    (tmp_path / "qrels").write_text("301 0 d1 1\n")
    assert evaluate_main(["--qrels", str(tmp_path / "qrels"), "--run", str(run)]) == 2
    err = capsys.readouterr().err
    assert f"{run}: the zstd stream is truncated" in err and "Traceback" not in err


def test_a_compressed_file_rewritten_while_it_is_parsed_is_an_error(tmp_path, monkeypatch):
    path = _write(tmp_path / "t.txt.gz", _rows(n_queries=80, seed=9), "gz")
    real = _fastparse._stream_chunks

    def touching(p, chunk):
        for k, item in enumerate(real(p, chunk)):
            if k == 1:  # another job rewrites the file after the first chunk was parsed
                st = path.stat()
                os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
            yield item

    monkeypatch.setattr(_fastparse, "_stream_chunks", touching)
    with pytest.raises(DataError, match="the file changed while it was being parsed"):
        _fastparse.parse_path(path, ParseOptions(), chunk=1024)


_PEAK = """
import json, pathlib, sys
from ltr.data.svmlight import load_svmlight
def hwm():
    status = pathlib.Path("/proc/self/status").read_text()
    return int(next(ln.split()[1] for ln in status.splitlines() if ln.startswith("VmHWM:"))) / 1024
tiny = pathlib.Path(sys.argv[2])
load_svmlight(tiny, n_threads=1)  # warm: compiled code, threads
base = hwm()
d = load_svmlight(sys.argv[1], n_threads=1)
print(json.dumps({"above_mb": hwm() - base, "rows": int(d.n_docs)}))
"""


@pytest.mark.slow
def test_a_compressed_parse_never_holds_the_decompressed_text(tmp_path):
    """Peak memory (VmHWM of a fresh process) of the gzip parse stays the plain parse's: the result plus
    chunk buffers. Reading the whole decompressed text first (~70 MB here) would exceed it."""
    import subprocess
    import sys

    from helpers import PROJECT_ROOT

    if not Path("/proc/self/status").exists():
        pytest.skip("needs /proc/self/status (Linux)")
    env = {**os.environ, "NUMBA_NUM_THREADS": "1", "PYTHONPATH": str(PROJECT_ROOT)}
    subprocess.run([sys.executable, "-m", "ltr.data", "synth", str(tmp_path), "--queries", "450",
                    "--docs-per-query", "120", "--seed", "1"], check=True, env=env, cwd=PROJECT_ROOT,
                   capture_output=True)  # fmt: skip
    plain = tmp_path / "train.txt"
    text_mb = plain.stat().st_size / 2**20
    assert text_mb > 60
    packed = tmp_path / "train.txt.gz"
    with open(plain, "rb") as src, gzip.open(packed, "wb", compresslevel=1) as out:
        while block := src.read(1 << 24):
            out.write(block)
    (tmp_path / "tiny.txt.gz").write_bytes(gzip.compress(b"1 qid:1 1:0.5\n0 qid:1 2:1\n"))
    peaks = {}
    for path in (plain, packed):
        out = subprocess.run([sys.executable, "-c", _PEAK, str(path), str(tmp_path / "tiny.txt.gz")],
                             check=True, env=env, cwd=PROJECT_ROOT, capture_output=True, text=True)  # fmt: skip
        peaks[path.name] = json.loads(out.stdout.strip().splitlines()[-1])
    assert peaks["train.txt"]["rows"] == peaks["train.txt.gz"]["rows"] > 40_000
    assert peaks["train.txt.gz"]["above_mb"] <= peaks["train.txt"]["above_mb"] + 16, (peaks, text_mb)


@pytest.mark.parametrize("ext", ["gz", "zst"])
def test_compressed_score_and_data_files_give_the_plain_evaluation(tmp_path, capsys, ext):
    """`ltr.evaluate --data D --scores S` (other tools' prediction files) with both files compressed."""
    from ltr.io.predictions import write_scores

    lines = _rows(n_queries=30, seed=10)
    n_rows = sum(1 for line in lines if line[:1].isdigit())
    plain = _write(tmp_path / "d.txt", lines, None)
    write_scores(tmp_path / "s.txt", np.random.default_rng(10).normal(size=n_rows))
    args = ["-m", "ndcg@5", "-m", "map", "-q"]
    assert evaluate_main(["--data", str(plain), "--scores", str(tmp_path / "s.txt"), *args]) == 0
    want = capsys.readouterr().out
    assert "ndcg" in want
    packed = _write(tmp_path / f"d.{ext}", lines, ext)
    (tmp_path / f"s.{ext}").write_bytes(COMPRESS[ext]((tmp_path / "s.txt").read_bytes()))
    assert evaluate_main(["--data", str(packed), "--scores", str(tmp_path / f"s.{ext}"), *args]) == 0
    got = capsys.readouterr().out.replace(str(packed), str(plain)).replace(f"s.{ext}", "s.txt")
    assert got == want
