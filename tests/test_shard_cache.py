"""The binary cache per byte-range shard (issue 15, item 1: "the cache works per shard").

Before: a byte range of one large file was parsed on every load, whatever ``cache_dir`` said.
"""

from __future__ import annotations

import json
import multiprocessing as mp
from pathlib import Path

import numpy as np
import pytest

from ltr.data import shards
from ltr.data.cache import read_entry
from ltr.data.shards import Shard, plan_shards, read_shard
from ltr.data.svmlight import load_svmlight, write_svmlight
from ltr.data.synthetic import generate

OPTS = {"engine": "python"}


@pytest.fixture
def big(tmp_path) -> Path:
    return write_svmlight(generate(40, seed=3, min_docs=2, max_docs=15), tmp_path / "all.txt")


def _entries(cache: Path) -> list[Path]:
    return sorted(p for p in cache.iterdir() if not p.name.startswith(".")) if cache.exists() else []


def _ranges(cache: Path) -> list[list[int] | None]:
    """The ``range`` of every entry's manifest (``None`` for a whole file), ranges first, sorted."""
    found = [json.loads((e / "manifest.json").read_text()).get("range") for e in _entries(cache)]
    return sorted(found, key=lambda r: (r is None, r or []))


def _count_parses(monkeypatch) -> list[Shard]:
    """Record every byte range the parser is asked for (and still parse it)."""
    calls: list[Shard] = []
    real = shards._parse_range

    def counted(shard, *args):
        calls.append(shard)
        return real(shard, *args)

    monkeypatch.setattr(shards, "_parse_range", counted)
    return calls


def _parser_must_not_run(monkeypatch) -> None:
    def boom(shard, *args):
        raise AssertionError(f"{shard} was parsed, not read from the cache")

    monkeypatch.setattr(shards, "_parse_range", boom)


def _assert_same(a, b) -> None:
    np.testing.assert_array_equal(a.dense(), b.dense())
    np.testing.assert_array_equal(a.y, b.y)
    np.testing.assert_array_equal(a.qid, b.qid)


def test_the_second_load_of_byte_ranges_reads_the_cache_and_equals_a_fresh_parse(big, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    plan = plan_shards(big, 3)
    assert len(plan) == 3 and not any(s.whole for s in plan)
    fresh = [read_shard(s, OPTS) for s in plan]
    first = [read_shard(s, {**OPTS, "cache_dir": str(cache)}) for s in plan]
    assert _ranges(cache) == sorted([s.start, s.stop] for s in plan)  # one entry per range
    _parser_must_not_run(monkeypatch)
    again_plan = plan_shards(big, 3)
    assert again_plan == plan  # the cuts are a function of the file and n_parts: the next run hits
    again = [read_shard(s, {**OPTS, "cache_dir": str(cache)}) for s in again_plan]
    for f, a, b in zip(fresh, first, again, strict=True):
        _assert_same(a, f)
        _assert_same(b, f)
        assert not b.y.flags.writeable  # memory-mapped from the entry
    whole = load_svmlight(big, engine="python")
    np.testing.assert_array_equal(np.concatenate([d.qid for d in again]), whole.qid)


def test_sparse_output_goes_through_the_range_cache_too(big, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    opts = {**OPTS, "output": "csr", "cache_dir": str(cache)}
    plan = plan_shards(big, 2)
    first = [read_shard(s, opts) for s in plan]
    _parser_must_not_run(monkeypatch)
    again = [read_shard(s, opts) for s in plan]
    for a, b in zip(first, again, strict=True):
        assert b.is_sparse
        _assert_same(a, b)


def test_a_changed_file_rebuilds_its_range_entries(big, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    [read_shard(s, {**OPTS, "cache_dir": str(cache)}) for s in plan_shards(big, 2)]
    lines = big.read_bytes().splitlines(keepends=True)
    lines[0] = b"4" + lines[0][1:]  # same size, another label
    big.write_bytes(b"".join(lines))
    calls = _count_parses(monkeypatch)
    plan = plan_shards(big, 2)
    got = [read_shard(s, {**OPTS, "cache_dir": str(cache)}) for s in plan]
    assert calls == plan  # every range parsed again
    assert got[0].y[0] == 4
    for s, g in zip(plan, got, strict=True):
        _assert_same(g, read_shard(s, OPTS))
    assert len(_entries(cache)) == 4  # the old version's entries are not served (other keys)


@pytest.mark.parametrize("how", ["flip a byte of y.npy", "truncate X.npy", "drop the manifest"])
def test_a_corrupted_range_entry_is_rebuilt(big, tmp_path, monkeypatch, how):
    cache = tmp_path / "cache"
    plan = plan_shards(big, 3)
    want = [read_shard(s, {**OPTS, "cache_dir": str(cache)}).fingerprint() for s in plan]
    victim = next(e for e in _entries(cache) if json.loads((e / "manifest.json").read_text())["range"][0] > 0)
    start = json.loads((victim / "manifest.json").read_text())["range"][0]
    if how.startswith("flip"):
        raw = bytearray((victim / "y.npy").read_bytes())
        raw[-1] ^= 0xFF
        (victim / "y.npy").write_bytes(bytes(raw))
    elif how.startswith("truncate"):
        (victim / "X.npy").write_bytes((victim / "X.npy").read_bytes()[:-8])
    else:
        (victim / "manifest.json").unlink()
    calls = _count_parses(monkeypatch)
    got = [read_shard(s, {**OPTS, "cache_dir": str(cache)}).fingerprint() for s in plan]
    assert got == want
    assert [c.start for c in calls] == [start]  # only the damaged range is parsed again
    assert read_entry(victim).fingerprint() == want[[s.start for s in plan].index(start)]  # and good again


def test_different_ranges_and_the_whole_file_are_different_entries(big, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    two, three = plan_shards(big, 2), plan_shards(big, 3)
    [read_shard(s, {**OPTS, "cache_dir": str(cache)}) for s in two]
    calls = _count_parses(monkeypatch)
    got = [read_shard(s, {**OPTS, "cache_dir": str(cache)}) for s in three]
    assert calls == three  # another number of parts: other ranges, nothing served from the 2-part entries
    assert _ranges(cache) == sorted([s.start, s.stop] for s in two + three)
    for s, g in zip(three, got, strict=True):
        _assert_same(g, read_shard(s, OPTS))
    read_shard(Shard(big), {**OPTS, "cache_dir": str(cache)})
    assert None in _ranges(cache) and len(_entries(cache)) == 6
    # the same range with other parse options is another entry too
    read_shard(three[0], {**OPTS, "cache_dir": str(cache), "output": "csr"})
    assert len(_entries(cache)) == 7


def test_verify_cache_keys_a_range_on_every_byte(big, tmp_path):
    cache = tmp_path / "cache"
    shard = plan_shards(big, 2)[1]
    read_shard(shard, {**OPTS, "cache_dir": str(cache), "verify_cache": True})
    [entry] = _entries(cache)
    assert json.loads((entry / "manifest.json").read_text())["source"]["full"] is True


def test_read_only_cache_dir_keeps_range_entries_per_user_and_promotes_them_one_by_one(
    big, tmp_path, monkeypatch
):
    """The per-user stopgap holds range entries too; promoting one range drops only that range's
    per-user entry (the other ranges' entries are not "older versions" of it)."""
    blocker = tmp_path / "blocker"
    blocker.write_text("")  # a file where the cache's parent folder should be: unwritable, even for root
    cache, user = blocker / "cache", tmp_path / "user"
    monkeypatch.setenv("LTR_CACHE_DIR", str(user))
    a, b = plan_shards(big, 2)
    want = [read_shard(s, {**OPTS, "cache_dir": str(cache)}).fingerprint() for s in (a, b)]
    assert _ranges(user) == [[a.start, a.stop], [b.start, b.stop]]
    blocker.unlink()
    blocker.mkdir()
    _parser_must_not_run(monkeypatch)
    assert read_shard(a, {**OPTS, "cache_dir": str(cache)}).fingerprint() == want[0]
    assert _ranges(cache) == [[a.start, a.stop]] and _ranges(user) == [[b.start, b.stop]]
    assert read_shard(b, {**OPTS, "cache_dir": str(cache)}).fingerprint() == want[1]
    assert _ranges(cache) == [[a.start, a.stop], [b.start, b.stop]] and _ranges(user) == []


def _load_range(args) -> str:
    path, start, stop, cache, barrier = args
    barrier.wait()
    return read_shard(Shard(Path(path), start, stop), {**OPTS, "cache_dir": cache}).fingerprint()


@pytest.mark.slow  # real processes racing for one cache entry: CI only
def test_parallel_processes_share_one_range_entry(tmp_path):
    src = write_svmlight(generate(300, seed=4, min_docs=5, max_docs=30), tmp_path / "par.txt")
    cache = tmp_path / "cache"
    shard = plan_shards(src, 2)[1]
    want = read_shard(shard, OPTS).fingerprint()
    n = 3
    ctx = mp.get_context("spawn")
    with ctx.Manager() as manager, ctx.Pool(n) as pool:
        barrier = manager.Barrier(n)
        prints = pool.map(_load_range, [(str(src), shard.start, shard.stop, str(cache), barrier)] * n)
    assert prints == [want] * n
    assert len(_entries(cache)) == 1 and not [p for p in cache.iterdir() if p.name.startswith(".")]


@pytest.mark.slow  # a real two-process Dask cluster: CI only
def test_a_two_process_cluster_reads_byte_ranges_from_the_cache_on_the_second_load(big, tmp_path):
    """Real worker processes: after the first load the parser is replaced on every worker by one
    that raises, and the second load still succeeds with the same arrays."""
    distributed = pytest.importorskip("distributed")
    from ltr.distributed.shards import gather_split, load_sharded

    cache = str(tmp_path / "cache")
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as lc,
        distributed.Client(lc) as client,
    ):
        first = load_sharded(client, big, {**OPTS, "cache_dir": cache}, name="train")
        assert len(first.sources) == 2 and all("bytes" in s for s in first.sources)
        want = gather_split(client, first)
        client.run(_break_the_parser)
        second = load_sharded(client, big, {**OPTS, "cache_dir": cache}, name="train")
        got = gather_split(client, second)
        with pytest.raises(AssertionError, match="parsed on a worker"):  # the parser really is broken there
            load_sharded(client, big, {**OPTS, "cache_dir": cache}, name="train", n_parts=3)
    _assert_same(got, want)
    _assert_same(got, load_svmlight(big, engine="python"))
    assert len(_entries(Path(cache))) == 2


def _break_the_parser() -> None:
    def boom(shard, *args):
        raise AssertionError(f"{shard} parsed on a worker")

    shards._parse_range = boom
