"""Queries straddling shards: an error naming both files by default, gathered on the workers with
``regroup=True`` (``data.regroup=true``) exactly as a local parse of the concatenated files groups them
(issue 15, item 1). Before: regrouping across files was not offered at all."""

from __future__ import annotations

import re
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest

from ltr.core.errors import DataError
from ltr.data import RankingData
from ltr.data.shards import regroup_shard, straddling_moves
from ltr.data.svmlight import load_svmlight, write_svmlight
from ltr.data.synthetic import generate
from ltr.metrics import evaluate

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
        ) as lc,
        distributed.Client(lc) as c,
    ):
        yield c


def _straddling_files(folder: Path, prefix: str, n_queries: int, seed: int) -> list[Path]:
    """The rows of ``n_queries`` generated queries cut into 5 files at places inside queries: the
    largest query spans three files (the middle one holds nothing else), several span two, and the
    first rows of query 1 are also moved to the last file (a straddle between files far apart)."""
    folder.mkdir(parents=True, exist_ok=True)
    whole = folder / f"{prefix}-source.txt"
    data = generate(n_queries, seed=seed, min_docs=3, max_docs=25, p_empty=0.0)
    rng = np.random.default_rng(seed)
    shuffled = 1 + rng.permutation(n_queries)  # qids not in file order: order is by first appearance
    data = RankingData(X=data.X, y=data.y, qid=shuffled[data.qid - 1])
    write_svmlight(data, whole)
    lines = whole.read_bytes().splitlines(keepends=True)
    whole.unlink()
    big = 1 + int(np.argmax(data.group_sizes[1:]))
    b0, b1 = int(data.offsets[big]), int(data.offsets[big + 1])
    cuts = {b0 + 1, b1 - 1}  # the middle piece is the inside of the big query
    cuts |= {int(c) for c in rng.integers(4, len(lines) - 1, size=4) if not b0 <= c <= b1}
    bounds = [0, *sorted(cuts), len(lines)]
    pieces = [lines[a:z] for a, z in zip(bounds[:-1], bounds[1:], strict=True) if z > a]
    first = pieces[0][:2]
    pieces[0] = pieces[0][2:]
    pieces[-1] = pieces[-1] + first
    paths = []
    for i, rows in enumerate(pieces):
        paths.append(folder / f"{prefix}-{i:02d}.txt")
        paths[-1].write_bytes(b"".join(rows))
    return paths


def _concatenated(paths: list[Path], target: Path) -> Path:
    target.write_bytes(b"".join(p.read_bytes() for p in paths))
    return target


def _assert_same_queries(got: RankingData, want: RankingData) -> None:
    np.testing.assert_array_equal(got.query_ids, want.query_ids)
    np.testing.assert_array_equal(got.group_sizes, want.group_sizes)
    np.testing.assert_array_equal(got.qid, want.qid)
    np.testing.assert_array_equal(got.y, want.y)
    np.testing.assert_array_equal(got.dense(), want.dense())


def test_moves_give_each_straddling_query_to_its_first_shard():
    moves = straddling_moves([np.array([1, 2]), np.array([2, 7]), np.array([9]), np.array([7, 2, 1])])
    assert sorted(moves) == [1, 3] and moves[1] == {0: [2]}
    assert {owner: sorted(qids) for owner, qids in moves[3].items()} == {0: [1, 2], 1: [7]}


def test_regroup_shard_appends_later_rows_to_the_query_and_keeps_its_place():
    d = RankingData(X=np.arange(8, dtype=np.float32).reshape(4, 2), y=[0, 1, 2, 3], qid=[9, 9, 4, 3])
    later = RankingData(X=np.full((1, 3), 7, np.float32), y=[5], qid=[9])
    last = RankingData(X=np.full((2, 1), 8, np.float32), y=[6, 6], qid=[9, 9])
    r = regroup_shard(d, [3], [later, last])
    assert r.qid.tolist() == [9, 9, 9, 9, 9, 4] and r.y.tolist() == [0, 1, 5, 6, 6, 2]
    assert r.dense().tolist()[2:] == [[7, 7, 7], [8, 0, 0], [8, 0, 0], [4, 5, 0]]


def test_by_default_a_straddling_query_names_both_files_and_the_opt_in(client, tmp_path):
    from ltr.distributed.shards import load_sharded

    paths = _straddling_files(tmp_path, "train", 30, seed=1)
    a, b = next((p, q) for p, q in pairwise(paths) if _last_qid(p) == _first_qid(q))
    with pytest.raises(DataError, match=re.escape(f"has rows in {a} and in {b}")) as err:
        load_sharded(client, str(tmp_path / "train-*.txt"), {"engine": "python"})
    assert "data.regroup=true" in str(err.value)


def _first_qid(p: Path) -> bytes:
    return p.read_bytes().split(b"qid:", 1)[1].split(b" ", 1)[0]


def _last_qid(p: Path) -> bytes:
    return p.read_bytes().rsplit(b"qid:", 1)[1].split(b" ", 1)[0]


@pytest.mark.parametrize(
    "options", [{"engine": "python"}, {"engine": "python", "output": "csr", "docid": True}]
)
def test_with_regroup_the_sharded_split_equals_the_local_parse_of_the_concatenated_files(
    client, tmp_path, options
):
    from ltr.distributed.shards import gather_split, load_sharded

    paths = _straddling_files(tmp_path, "train", 30, seed=2)
    assert len(paths) >= 5
    want = load_svmlight(_concatenated(paths, tmp_path / "all.bin"), regroup=True, **options)
    with pytest.raises(DataError):  # the concatenation really has a query in two separate blocks
        load_svmlight(tmp_path / "all.bin", **options)
    split = load_sharded(client, str(tmp_path / "train-*.txt"), {**options, "regroup": True}, name="train")
    assert len(split.sources) < len(paths)  # the file holding only the inside of a query is gone
    np.testing.assert_array_equal(split.query_ids, want.query_ids)
    np.testing.assert_array_equal(split.group_sizes, want.group_sizes)
    assert split.n_docs == want.n_docs and split.n_features == want.n_features
    got = gather_split(client, split)
    _assert_same_queries(got, want)
    if options.get("docid"):
        parts = client.gather(split.futures)
        np.testing.assert_array_equal(np.concatenate([p.docid for p in parts]), want.docid)


def test_byte_ranges_of_a_file_with_a_query_in_separate_blocks_are_regrouped(client, tmp_path):
    from ltr.distributed.shards import gather_split, load_sharded

    src = write_svmlight(generate(20, seed=4, min_docs=3, max_docs=12), tmp_path / "one.txt")
    lines = src.read_bytes().splitlines(keepends=True)
    src.write_bytes(b"".join(lines[2:] + lines[:2]))  # query 1's first rows at the end of the file
    want = load_svmlight(src, regroup=True, engine="python")
    split = load_sharded(client, src, {"engine": "python", "regroup": True}, n_parts=3)
    _assert_same_queries(gather_split(client, split), want)
    with pytest.raises(DataError, match=r"has rows in .*one\.txt \(bytes 0-\d+\) and in .*one\.txt \(bytes"):
        load_sharded(client, src, {"engine": "python"}, n_parts=3)


def test_data_regroup_true_regroups_train_valid_and_test(client, tmp_path):
    from ltr.distributed.shards import gather_split, load_sharded_dataset

    cfg = {"kind": "svmlight", "name": "straddle", "regroup": True, "engine": "python", "n_features": 46}
    for seed, split in enumerate(("train", "valid", "test")):
        paths = _straddling_files(tmp_path / split, split, 25, seed=10 + seed)
        cfg[split] = str(tmp_path / split / f"{split}-*.txt")
        cfg[f"_{split}_paths"] = paths
    sharded = load_sharded_dataset(client, {k: v for k, v in cfg.items() if not k.startswith("_")}, n_parts=2)
    for split in ("train", "valid", "test"):
        want = load_svmlight(
            _concatenated(cfg[f"_{split}_paths"], tmp_path / f"{split}.bin"),
            regroup=True,
            n_features=46,
            engine="python",
        )
        _assert_same_queries(gather_split(client, sharded[split]), want)
    with pytest.raises(DataError, match="has rows in"):
        load_sharded_dataset(
            client, {k: v for k, v in cfg.items() if not k.startswith("_") and k != "regroup"}, 2
        )


def _ndcg10(data: RankingData, scores: np.ndarray) -> float:
    return float(np.nanmean(evaluate(["ndcg@10"], data.y, scores, data.offsets)["ndcg@10"]))


@pytest.mark.parametrize("model", [pytest.param("lambdamart", marks=pytest.mark.slow), "lambdamart_xgb"])
def test_training_on_regrouped_shards_matches_local_training_on_the_concatenation(client, tmp_path, model):
    from ltr.distributed.backend import build_dask_ranker
    from ltr.distributed.shards import load_sharded
    from ltr.models import build_ranker

    paths = _straddling_files(tmp_path, "train", 120, seed=7)
    local_train = load_svmlight(_concatenated(paths, tmp_path / "all.bin"), regroup=True, n_features=46)
    test = generate(80, seed=8, max_docs=40, qid_start=100_000)
    train = load_sharded(
        client, str(tmp_path / "train-*.txt"), {"regroup": True, "n_features": 46}, name="train"
    )
    cfg = {"name": model, "params": {"n_trees": 30, "num_leaves": 15}}
    dask = build_dask_ranker(cfg, {"name": "dask"}, seed=1, num_threads=1).fit(train)
    local = build_ranker(cfg, seed=1, num_threads=1).fit(local_train)
    assert abs(_ndcg10(test, dask.predict(test)) - _ndcg10(test, local.predict(test))) <= 0.01


def test_regroup_shard_carries_weights_positions_and_refuses_conflicting_weights():
    own = RankingData(X=np.ones((3, 1)), y=[1, 0, 2], qid=[8, 8, 2], weight=[0.5, 2.0], position=[1, 2, 1])
    later = RankingData(X=np.zeros((2, 1)), y=[3, 3], qid=[8, 8], weight=[0.5], position=[3, 4])
    r = regroup_shard(own, [], [later])
    assert r.qid.tolist() == [8, 8, 8, 8, 2] and r.weight.tolist() == [0.5, 2.0]
    assert r.position.tolist() == [1, 2, 3, 4, 1]
    other = RankingData(X=np.zeros((1, 1)), y=[1], qid=[8], weight=[0.7])
    with pytest.raises(DataError, match="qid 8 has different weights"):
        regroup_shard(own, [], [other])
    with pytest.raises(DataError, match="with and without a .weight sidecar"):
        regroup_shard(own, [], [RankingData(X=np.zeros((1, 1)), y=[1], qid=[8])])


@pytest.mark.slow
def test_worker_processes_regroup_straddling_queries(tmp_path):
    """The same on a 2-process ``LocalCluster``: the pieces travel between worker processes."""
    from ltr.distributed.shards import gather_split, load_sharded

    paths = _straddling_files(tmp_path, "train", 30, seed=3)
    want = load_svmlight(_concatenated(paths, tmp_path / "all.bin"), regroup=True, engine="python")
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as lc,
        distributed.Client(lc) as client,
    ):
        split = load_sharded(client, str(tmp_path / "train-*.txt"), {"engine": "python", "regroup": True})
        assert len(set(split.workers)) == 2
        _assert_same_queries(gather_split(client, split), want)
