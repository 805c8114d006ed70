"""Binary cache: reuse, keys, memory-mapped reload, corruption detection and rebuild, atomic parallel writes."""

from __future__ import annotations

import json
import logging
import multiprocessing as mp
import os
from pathlib import Path

import numpy as np
import pytest

from ltr.data import RankingData
from ltr.data._syntax import ParseOptions
from ltr.data.cache import cache_key, entry_dir, file_identity, load_cached, read_entry
from ltr.data.svmlight import load_svmlight, write_svmlight


def _data(n=60, f=7, seed=0, sparse_frac=0.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, f)).astype(np.float32)
    X[rng.random(X.shape) < sparse_frac] = 0
    return RankingData(X=X, y=rng.integers(0, 5, n), qid=np.repeat(np.arange(n // 6), 6))


@pytest.fixture
def src(tmp_path):
    return write_svmlight(_data(), tmp_path / "train.txt")


def _entries(cache: Path):
    return sorted(p for p in cache.iterdir()) if cache.exists() else []


def test_first_load_writes_then_reload_is_memory_mapped(src, tmp_path):
    cache = tmp_path / "cache"
    d1 = load_svmlight(src, cache_dir=cache, engine="python")
    [entry] = _entries(cache)
    manifest = json.loads((entry / "manifest.json").read_text())
    assert set(manifest["files"]) == {"X.npy", "y.npy", "qid.npy"}
    assert manifest["source"]["size"] == src.stat().st_size
    d2 = load_svmlight(src, cache_dir=cache, engine="python")
    assert d2.fingerprint() == d1.fingerprint() == load_svmlight(src, engine="python").fingerprint()
    assert not d2.X.flags.writeable  # read-only memory map of X.npy
    assert isinstance(d2.X.base, np.memmap) or d2.X.base is not None


def test_sparse_docid_weight_round_trip(tmp_path):
    d = _data(sparse_frac=0.9)
    p = write_svmlight(d, tmp_path / "s.txt", comments=[f"docid = d{i}" for i in range(d.n_docs)])
    kw = {"cache_dir": tmp_path / "c", "docid": True, "output": "csr", "engine": "python"}
    first = load_svmlight(p, **kw)
    again = load_svmlight(p, **kw)
    assert again.is_sparse and again.fingerprint() == first.fingerprint()
    assert again.docid.tolist() == [f"d{i}" for i in range(d.n_docs)]


def test_key_depends_on_options_and_file(src, tmp_path):
    k1, _ = cache_key(src, ParseOptions())
    assert cache_key(src, ParseOptions())[0] == k1
    assert cache_key(src, ParseOptions(n_features=9))[0] != k1
    assert cache_key(src, ParseOptions(), docid=True)[0] != k1
    st = src.stat()
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert cache_key(src, ParseOptions())[0] != k1
    cache = tmp_path / "cache"
    load_svmlight(src, cache_dir=cache, engine="python")
    load_svmlight(src, cache_dir=cache, engine="python", n_features=9)
    assert len(_entries(cache)) == 2


def test_sampled_identity_of_large_files(tmp_path):
    p = tmp_path / "big.bin"
    p.write_bytes(bytes(8 << 20))
    st = p.stat()
    base = file_identity(p)
    base_full = file_identity(p, full_hash=True)

    def edit(offset):
        with open(p, "r+b") as f:
            f.seek(offset)
            f.write(b"\x01")
        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))  # same size, same mtime: only content differs

    edit(10)  # inside the first MiB: always sampled
    assert file_identity(p)["digest"] != base["digest"]
    p.write_bytes(bytes(8 << 20))
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert file_identity(p) == base
    edit(2_100_000)  # between sampled blocks 5 and 6: only the full hash sees it
    assert file_identity(p)["digest"] == base["digest"]
    assert file_identity(p, full_hash=True)["digest"] != base_full["digest"]


def _corrupt(entry: Path, how: str) -> None:
    if how == "truncate":
        x = entry / "X.npy"
        x.write_bytes(x.read_bytes()[:-17])
    elif how == "flip":
        x = entry / "X.npy"
        raw = bytearray(x.read_bytes())
        raw[-5] ^= 0x10
        x.write_bytes(bytes(raw))
    elif how == "manifest":
        (entry / "manifest.json").write_text("{not json")
    elif how == "missing":
        (entry / "y.npy").unlink()
    elif how == "header":
        x = entry / "X.npy"
        raw = bytearray(x.read_bytes())
        raw[:6] = b"garbag"
        x.write_bytes(bytes(raw))


@pytest.mark.parametrize("how", ["truncate", "flip", "manifest", "missing", "header"])
def test_corrupted_entry_is_detected_and_rebuilt(src, tmp_path, caplog, how):
    cache = tmp_path / "cache"
    want = load_svmlight(src, cache_dir=cache, engine="python").fingerprint()
    [entry] = _entries(cache)
    _corrupt(entry, how)
    with caplog.at_level(logging.WARNING, logger="ltr.data.cache"):
        got = load_svmlight(src, cache_dir=cache, engine="python")
    assert got.fingerprint() == want
    assert "not usable" in caplog.text and "rebuilding" in caplog.text
    [entry2] = _entries(cache)
    assert read_entry(entry2).fingerprint() == want  # the rebuilt entry is good again
    assert not [p for p in cache.iterdir() if p.name.startswith(".")]


def _worker(args):
    path, cache, barrier = args
    barrier.wait()
    d = load_cached(Path(path), ParseOptions(), cache_dir=cache, engine="python")
    return d.fingerprint()


def test_parallel_processes_share_one_entry(tmp_path):
    """Several processes load the same file at once (empty cache, then a corrupted entry): all get the
    same data, exactly one good entry remains, no temporary folders are left behind."""
    src = write_svmlight(_data(n=3000, f=20, seed=5), tmp_path / "par.txt")
    cache = tmp_path / "cache"
    want = load_svmlight(src, engine="python").fingerprint()
    key, _ = cache_key(src, ParseOptions())
    n = 3
    ctx = mp.get_context("spawn")
    with ctx.Manager() as manager, ctx.Pool(n) as pool:
        barrier = manager.Barrier(n)
        for round_ in ("empty cache", "corrupted entry"):
            if round_ == "corrupted entry":
                _corrupt(entry_dir(cache, src, key), "flip")
            prints = pool.map(_worker, [(str(src), str(cache), barrier)] * n)
            assert prints == [want] * n, round_
            entries = _entries(cache)
            assert entries == [entry_dir(cache, src, key)], round_
            assert read_entry(entries[0], key).fingerprint() == want
