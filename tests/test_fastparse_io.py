"""How the fast parser reads files: memory-mapped windows or read() into a buffer (the fallback where
mmap is unavailable), both giving identical results; and a file that changes between or during the
two passes raises a clear DataError instead of being mis-parsed or corrupting memory."""

from __future__ import annotations

import os

import numpy as np
import pytest

from ltr.core.errors import DataError
from ltr.data import _fastparse
from ltr.data._syntax import ParseOptions
from ltr.data.svmlight import load_svmlight, write_svmlight
from ltr.data.synthetic import generate


@pytest.fixture(scope="module")
def letor_file(tmp_path_factory):
    d = generate(40, seed=5, max_docs=30)
    path = write_svmlight(d, tmp_path_factory.mktemp("io") / "train.txt")
    return path


def _same(a, b) -> None:
    np.testing.assert_array_equal(a.dense, b.dense)
    np.testing.assert_array_equal(a.y, b.y)
    np.testing.assert_array_equal(a.qid, b.qid)


@pytest.mark.parametrize("chunk", [64, 1000, 1 << 20])
@pytest.mark.parametrize("threads", [1, 2])
def test_read_fallback_equals_memory_map(letor_file, monkeypatch, chunk, threads):
    opts = ParseOptions(output="dense")
    mapped = _fastparse.parse_path(letor_file, opts, n_threads=threads, chunk=chunk)
    monkeypatch.setattr(_fastparse, "MEMORY_MAP", False)
    read = _fastparse.parse_path(letor_file, opts, n_threads=threads, chunk=chunk)
    _same(read, mapped)
    assert read.dense.shape[0] == letor_file.read_bytes().count(b"\n")


def test_read_fallback_reports_the_same_error_line(tmp_path, monkeypatch):
    lines = [f"{i % 3} qid:{i // 4} 1:{i}.5 2:0.25" for i in range(200)]
    lines[150] = "1 qid:37 1:0.5 2:x"
    p = tmp_path / "bad.txt"
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError) as mapped:
        load_svmlight(p, engine="numba")
    monkeypatch.setattr(_fastparse, "MEMORY_MAP", False)
    with pytest.raises(DataError) as read:
        load_svmlight(p, engine="numba")
    assert str(read.value) == str(mapped.value)
    assert f"{p}:151:" in str(read.value)


def _rewrite_after_first_pass(monkeypatch, path, rewrite):
    """Run ``rewrite(path)`` once the parser's first pass over ``path`` has read the whole file."""
    original = _fastparse._chunks
    calls = {"n": 0}

    def chunks(p, chunk, identity=None):
        calls["n"] += 1
        yield from original(p, chunk, identity)
        if calls["n"] == 1:
            rewrite(path)

    monkeypatch.setattr(_fastparse, "_chunks", chunks)


@pytest.mark.parametrize("memory_map", [True, False])
def test_file_appended_between_passes_raises(tmp_path, monkeypatch, memory_map):
    p = tmp_path / "grow.txt"
    p.write_text("".join(f"1 qid:{i} 1:0.5 2:1\n" for i in range(50)))
    monkeypatch.setattr(_fastparse, "MEMORY_MAP", memory_map)

    def append(path):
        with open(path, "a") as f:
            f.write("2 qid:99 1:0.5 2:1\n" * 10)

    _rewrite_after_first_pass(monkeypatch, p, append)
    with pytest.raises(DataError, match=r"grow.txt: the file changed while it was being parsed"):
        _fastparse.parse_path(p, ParseOptions(), n_threads=1)


@pytest.mark.parametrize("output", ["dense", "csr"])
def test_same_size_same_mtime_rewrite_cannot_write_past_the_counted_rows(tmp_path, monkeypatch, output):
    """More rows / entries than pass 1 counted (same size, mtime restored): an error, not an overflow."""
    p = tmp_path / "sneaky.txt"
    first = "1 qid:1 1:0.5 2:1 # " + "c" * 60 + "\n"
    p.write_text(first * 20)
    stat = p.stat()
    # same byte count, but the comment became extra rows with extra entries
    rows = "1 qid:1 1:0.5 2:1\n" * 4
    sneaky = rows + "#" + "c" * (len(first) - len(rows) - 2) + "\n"
    assert len(sneaky) == len(first)

    def rewrite(path):
        path.write_text(sneaky * 20)
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))

    _rewrite_after_first_pass(monkeypatch, p, rewrite)
    with pytest.raises(DataError, match="changed while it was being parsed"):
        _fastparse.parse_path(p, ParseOptions(output=output), n_threads=1)


@pytest.mark.parametrize("memory_map", [True, False])
def test_file_appended_during_the_second_pass_raises(tmp_path, monkeypatch, memory_map):
    """Rows appended after pass 2 began (comment lines leave spare capacity, so the kernel's count check
    alone would not notice): the identity check after the last window raises."""
    p = tmp_path / "late.txt"
    p.write_text("# header\n# another comment\n" + "".join(f"1 qid:{i} 1:0.5\n" for i in range(3)))
    monkeypatch.setattr(_fastparse, "MEMORY_MAP", memory_map)
    original = _fastparse._check_identity
    calls = {"n": 0}

    def check_then_append(path, f, identity):
        calls["n"] += 1
        original(path, f, identity)
        if calls["n"] == 3:  # pass 1 checks twice (before its window, after the last); pass 2 begins
            with open(path, "a") as out:
                out.write("2 qid:9 1:0.5\n")

    monkeypatch.setattr(_fastparse, "_check_identity", check_then_append)
    with pytest.raises(DataError, match="changed while it was being parsed"):
        _fastparse.parse_path(p, ParseOptions(), n_threads=1)
    assert calls["n"] == 4  # the check after pass 2's last window is the one that raised
