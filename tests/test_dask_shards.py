"""Shards parsed on Dask workers: planning, byte ranges on query boundaries, errors, per-query metrics."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from ltr.core.errors import DataError
from ltr.data.shards import Shard, byte_ranges, plan_shards, read_shard
from ltr.data.svmlight import load_svmlight, write_svmlight
from ltr.data.synthetic import generate
from ltr.metrics import evaluate

distributed = pytest.importorskip("distributed")


PIPELINE_MODELS = ("lambdamart", "lambdamart_xgb")


def _overrides(model: str, root: Path, backend: str) -> list[str]:
    return [
        f"+model={model}",
        f"backend={backend}",
        "model.params.n_trees=12",
        "eval.metrics=[ndcg@10,map]",
        "eval.bootstrap.B=200",
        "eval.curve.max_k=3",
        "seed=5",
        "tracking=none",
        f"paths.root={root}",
    ]


@pytest.fixture(scope="module")
def configs(tmp_path_factory):
    """The pipeline test's configs (local and dask backend), composed once."""
    from helpers import compose_config

    root = tmp_path_factory.mktemp("root")
    return {
        (m, b): compose_config(_overrides(m, root, b)) for m in PIPELINE_MODELS for b in ("local", "dask")
    }


@pytest.fixture(scope="module")
def client():
    from helpers import in_process_dask_client

    with in_process_dask_client() as c:
        yield c


def _decorated_file(path: Path, n_queries: int, seed: int) -> Path:
    """A LETOR file with comment lines, blank lines and CRLF endings sprinkled in (the planner must cope)."""
    write_svmlight(generate(n_queries, seed=seed, min_docs=1, max_docs=12), path)
    rng = np.random.default_rng(seed)
    out = []
    for line in path.read_bytes().splitlines(keepends=True):
        r = rng.random()
        if r < 0.05:
            out.append(b"# a comment line qid:999\n")
        elif r < 0.1:
            out.append(b"\n")
        out.append(line.replace(b"\n", b"\r\n") if rng.random() < 0.2 else line)
    path.write_bytes(b"".join(out))
    return path


def _qid_of(line: bytes) -> int | None:
    body = line.split(b"#", 1)[0].split()
    return int(body[1][4:]) if len(body) > 1 else None


@pytest.mark.parametrize("seed", range(6))
def test_byte_ranges_end_on_query_boundaries_and_their_union_is_the_file(tmp_path, seed):
    path = _decorated_file(tmp_path / "t.txt", 40 + 10 * seed, seed)
    local = load_svmlight(path, engine="python")
    raw = path.read_bytes()
    for n_parts in (1, 2, 3, 7, 50):
        ranges = byte_ranges(path, n_parts)
        assert ranges[0][0] == 0 and ranges[-1][1] == len(raw)
        assert all(a < b for a, b in ranges) and all(
            ranges[i][1] == ranges[i + 1][0] for i in range(len(ranges) - 1)
        )
        assert len(ranges) <= n_parts
        # naive check: a cut is at a line start, and the data lines on its two sides have different qids
        for _, cut in ranges[:-1]:
            assert raw[cut - 1 : cut] == b"\n"
            before = [q for q in map(_qid_of, raw[:cut].splitlines()) if q is not None]
            after = [q for q in map(_qid_of, raw[cut:].splitlines()) if q is not None]
            assert before[-1] != after[0]
        parts = [
            read_shard(Shard(path, a, b), {"engine": "python", "n_features": local.n_features})
            for a, b in ranges
        ]
        X = np.vstack([p.dense() for p in parts])
        np.testing.assert_array_equal(X, local.dense())
        np.testing.assert_array_equal(np.concatenate([p.y for p in parts]), local.y)
        np.testing.assert_array_equal(np.concatenate([p.qid for p in parts]), local.qid)
    if seed == 0:
        assert len(byte_ranges(path, 7)) == 7  # 40 queries are enough for 7 parts


@pytest.mark.parametrize("engine", ["python", "numba"])
def test_a_bad_line_in_a_byte_range_is_reported_at_its_line_in_the_file(tmp_path, engine):
    path = tmp_path / "t.txt"
    write_svmlight(generate(30, seed=3, min_docs=2, max_docs=6), path)
    lines = path.read_bytes().splitlines(keepends=True)
    bad_line = len(lines) - 3  # 1-based line number, in the last range
    lines[bad_line - 1] = lines[bad_line - 1].replace(b" 1:", b" 1:abc", 1)
    path.write_bytes(b"".join(lines))
    with pytest.raises(DataError) as whole:
        load_svmlight(path, engine=engine)
    ranges = byte_ranges(path, 3)
    assert len(ranges) == 3
    for a, b in ranges[:-1]:
        read_shard(Shard(path, a, b), {"engine": engine})  # the good ranges parse
    with pytest.raises(DataError) as part:
        read_shard(Shard(path, *ranges[-1]), {"engine": engine})
    assert str(part.value).startswith(f"{path}:{bad_line}: ")
    assert str(part.value) == str(whole.value)  # the same text as the local parser's


def test_plan_shards_reads_globs_and_directories_in_name_order(tmp_path):
    for i in (2, 0, 1):
        write_svmlight(generate(3, seed=i, qid_start=10 * i + 1), tmp_path / f"train-{i}.txt")
    (tmp_path / ".hidden").write_text("junk")
    by_glob = plan_shards(str(tmp_path / "train-*.txt"), 5)
    assert [s.path.name for s in by_glob] == ["train-0.txt", "train-1.txt", "train-2.txt"]
    assert all(s.whole for s in by_glob)
    assert [s.path.name for s in plan_shards(tmp_path)] == ["train-0.txt", "train-1.txt", "train-2.txt"]
    with pytest.raises(DataError, match=r"data: the pattern .*nothing-\*\.txt' matches no file"):
        plan_shards(str(tmp_path / "nothing-*.txt"))


def _write_shards(tmp_path: Path, n_files: int, queries_per_file: int, seed: int = 0) -> list[Path]:
    paths = []
    for i in range(n_files):
        p = tmp_path / f"train-{i:02d}.txt"
        write_svmlight(generate(queries_per_file, seed=seed + i, qid_start=1 + i * queries_per_file), p)
        paths.append(p)
    return paths


def test_workers_parse_files_and_the_union_equals_the_local_parse(client, tmp_path):
    from ltr.distributed.shards import gather_split, load_sharded

    paths = _write_shards(tmp_path, 5, 8)
    local = [load_svmlight(p) for p in paths]
    width = max(d.n_features for d in local)
    split = load_sharded(client, str(tmp_path / "train-*.txt"), name="train")
    assert split.sources == [str(p) for p in paths]
    assert split.workers == [sorted(client.nthreads())[i % 2] for i in range(5)]
    assert split.n_features == width and split.n_docs == sum(d.n_docs for d in local)
    np.testing.assert_array_equal(split.query_ids, np.concatenate([d.query_ids for d in local]))
    whole = gather_split(client, split)
    dense = [np.pad(d.dense(), ((0, 0), (0, width - d.n_features))) for d in local]
    np.testing.assert_array_equal(whole.dense(), np.vstack(dense))
    np.testing.assert_array_equal(whole.y, np.concatenate([d.y for d in local]))
    # one big file cut into byte ranges gives the same rows
    big = tmp_path / "all.txt"
    big.write_bytes(b"".join(p.read_bytes() for p in paths))
    ranged = load_sharded(client, big, name="train", n_parts=4)
    assert len(ranged.sources) == 4 and all("bytes" in s for s in ranged.sources)
    np.testing.assert_array_equal(gather_split(client, ranged).dense(), whole.dense())


def test_a_query_in_two_files_is_an_error_naming_both(client, tmp_path):
    from ltr.distributed.shards import load_sharded

    a, b = tmp_path / "part-a.txt", tmp_path / "part-b.txt"
    write_svmlight(generate(4, seed=1, qid_start=1), a)  # qids 1-4
    write_svmlight(generate(4, seed=2, qid_start=4), b)  # qids 4-7: qid 4 straddles
    with pytest.raises(DataError, match=re.escape(f"qid 4 has rows in {a} and in {b}")):
        load_sharded(client, [a, b])


def _sidecar_files(folder: Path, n_files: int) -> list[Path]:
    """LightGBM-style files: no qid: tokens, the groups in ``X.query`` beside each file."""
    paths = []
    for i in range(n_files):
        data = generate(3 + i, seed=20 + i, min_docs=2, max_docs=6)
        path = folder / f"part-{i}.txt"
        write_svmlight(data, path)
        path.write_text(re.sub(r" qid:\d+", "", path.read_text()))
        (folder / f"part-{i}.txt.query").write_text("".join(f"{n}\n" for n in data.group_sizes))
        paths.append(path)
    return paths


@pytest.mark.parametrize("regroup", [False, True])
def test_a_glob_of_sidecar_files_keeps_every_files_queries_apart(client, tmp_path, regroup):
    """Each file's .query sidecar numbers its groups from 0: a glob of two such files used to be
    refused (``qid 0 has rows in …``) or, with regroup, to merge query 0 of every file into one. The
    workers' queries are now LightGBM's groups of the concatenated files and sidecars; the sidecars
    themselves are not read as data files."""
    import lightgbm as lgb

    from ltr.distributed.shards import load_sharded

    paths = _sidecar_files(tmp_path, 2)
    both = tmp_path.parent / f"{tmp_path.name}-both" / "all.txt"
    both.parent.mkdir()
    both.write_text("".join(p.read_text() for p in paths))
    both.with_name("all.txt.query").write_text("".join((Path(f"{p}.query")).read_text() for p in paths))
    peer = lgb.Dataset(str(both), params={"verbose": -1}).construct().get_group()
    for spec in (str(tmp_path / "part-*.txt"), str(tmp_path / "part-*"), tmp_path):
        split = load_sharded(client, spec, {"regroup": regroup}, name="train")
        assert split.sources == [str(p) for p in paths]  # the .query files are not shards
        np.testing.assert_array_equal(split.group_sizes, peer)
        assert split.n_queries == len(peer) == 3 + 4


def test_a_parse_error_on_a_worker_names_file_and_line(client, tmp_path):
    from ltr.distributed.shards import load_sharded

    paths = _write_shards(tmp_path, 3, 4)
    lines = paths[2].read_bytes().splitlines(keepends=True)
    lines[4] = b"1 qid:9 3:0.5 2:0.1\n"  # unsorted indices on line 5
    paths[2].write_bytes(b"".join(lines))
    with pytest.raises(DataError, match=re.escape(f"{paths[2]}:5: ")):
        load_sharded(client, str(tmp_path / "train-*.txt"))


def test_the_cache_keeps_one_entry_per_file_shard(client, tmp_path):
    from ltr.distributed.shards import gather_split, load_sharded

    _write_shards(tmp_path, 3, 4)
    cache = tmp_path / "cache"
    first = gather_split(
        client, load_sharded(client, str(tmp_path / "train-*.txt"), {"cache_dir": str(cache)})
    )
    entries = sorted(p for p in cache.rglob("*") if p.is_file())
    assert len({p.parent for p in entries} | {p for p in entries}) >= 3
    again = gather_split(
        client, load_sharded(client, str(tmp_path / "train-*.txt"), {"cache_dir": str(cache)})
    )
    assert sorted(p for p in cache.rglob("*") if p.is_file()) == entries  # hits, nothing new written
    np.testing.assert_array_equal(again.dense(), first.dense())


@pytest.fixture(scope="module")
def fingerprint_file(tmp_path_factory) -> Path:
    """A small SVMlight file: 7 queries (qids out of order), sparse rows of up to 5 of 20 features
    (some rows have none; feature 20 only in the first query, so later shards infer a smaller
    width), one NaN value (read with ``nonfinite="keep"``), values float32 cannot hold exactly. Also
    ``part-0.txt`` + ``part-1.txt``: its first 3 and last 4 queries, the same bytes in two files."""
    root = tmp_path_factory.mktemp("fingerprint")
    rng = np.random.default_rng(11)
    queries = []
    for q in (31, 4, 17, 200, 9, 56, 8):
        rows = []
        for d in range(int(rng.integers(2, 7))):
            cols = sorted(rng.choice(np.arange(1, 20), int(rng.integers(0, 6)), replace=False).tolist())
            cols += [20] if (q, d) == (31, 0) else []
            values = [f"{rng.normal():.9g}" for _ in cols]
            if (q, d) == (200, 1) and values:
                values[0] = "nan"
            features = "".join(f" {c}:{v}" for c, v in zip(cols, values, strict=True))
            rows.append(f"{int(rng.integers(0, 3))} qid:{q}{features}\n")
        queries.append("".join(rows))
    (root / "part-0.txt").write_text("".join(queries[:3]))
    (root / "part-1.txt").write_text("".join(queries[3:]))
    (root / "all.txt").write_text("".join(queries))
    return root / "all.txt"


@pytest.mark.parametrize(
    "how", ["1 part", "2 parts", "3 parts", "glob of 2 files", "3 parts through the cache", "scattered"]
)
def test_a_file_read_by_the_workers_has_the_fingerprint_of_the_local_load(client, fingerprint_file, how):
    """The same rows have one fingerprint whoever reads them: a local parse, the parse cache, Dask
    workers parsing 1, 2 or 3 byte ranges or a glob of 2 files, or an in-memory split scattered to
    them. Before: a Dask split hashed its shards' fingerprints together (another value, and another
    for every cut), so ``ltr.compare --from-mlflow`` refused a local run and a Dask run of one file."""
    from ltr.distributed.shards import gather_split, load_sharded, scatter_split

    options = {"nonfinite": "keep"}
    local = load_svmlight(fingerprint_file, **options)
    assert sp.issparse(local.X) and local.n_features == 20 and np.isnan(local.X.data).any()
    if how == "scattered":
        split = scatter_split(client, local, 3, sorted(client.nthreads()))
    elif how == "glob of 2 files":
        split = load_sharded(client, str(fingerprint_file.parent / "part-*.txt"), options)
    else:
        parts = int(how[0])
        if "cache" in how:
            options |= {"cache_dir": str(fingerprint_file.parent / "cache")}
            load_sharded(client, fingerprint_file, options, n_parts=parts)  # fills the cache
        split = load_sharded(client, fingerprint_file, options, n_parts=parts)
        assert len(split.sources) == parts
    on_workers = gather_split(client, split)  # the same rows, not renumbered or retyped
    np.testing.assert_array_equal(on_workers.qid, local.qid)
    np.testing.assert_array_equal(on_workers.y, local.y)
    assert on_workers.n_features == local.n_features and on_workers.X.dtype == local.X.dtype
    assert split.fingerprint() == local.fingerprint()


def test_a_changed_value_in_one_row_changes_the_fingerprint_on_the_workers_as_locally(
    client, fingerprint_file, tmp_path
):
    """One value of the file's last row changed: the workers' fingerprint (2 byte ranges) changes, to
    the local fingerprint of the changed file."""
    from ltr.distributed.shards import load_sharded

    lines = fingerprint_file.read_text().splitlines(keepends=True)
    last = lines[-1].split()
    assert len(last) > 2, "the last row needs a feature value"
    index, value = last[-1].split(":")
    last[-1] = f"{index}:{float(value) + 0.5:.9g}"
    changed = tmp_path / "changed.txt"
    changed.write_text("".join(lines[:-1]) + " ".join(last) + "\n")
    options = {"nonfinite": "keep"}
    before = load_sharded(client, fingerprint_file, options, n_parts=2).fingerprint()
    after = load_sharded(client, changed, options, n_parts=2).fingerprint()
    assert before == load_svmlight(fingerprint_file, **options).fingerprint()
    assert after != before and after == load_svmlight(changed, **options).fingerprint()


def test_per_query_metrics_on_the_workers_equal_the_local_ones(client, tmp_path):
    from ltr.distributed.shards import gather_split, load_sharded, per_query_metrics
    from ltr.models import build_ranker

    _write_shards(tmp_path, 4, 10, seed=5)
    split = load_sharded(client, str(tmp_path / "train-*.txt"), {"output": "csr"}, name="test")
    local = gather_split(client, split)
    assert sp.issparse(local.X)
    ranker = build_ranker({"name": "lambdamart", "params": {"n_trees": 5}}, seed=1, num_threads=1).fit(local)
    metrics = ["ndcg@10", "map", "err@5"]
    remote = per_query_metrics(client, split, ranker, metrics, "ltr")
    expected = evaluate(metrics, local.y, ranker.predict(local), local.offsets, preset="ltr")
    for m in metrics:
        assert remote[m].shape == (local.n_queries,)
        np.testing.assert_array_equal(remote[m], expected[m])


def _ndcg10(data, scores) -> float:
    return float(np.nanmean(evaluate(["ndcg@10"], data.y, scores, data.offsets)["ndcg@10"]))


@pytest.fixture(scope="module")
def shard_files(tmp_path_factory):
    """Train in 6 files, valid in 2 (parsed by the workers), test in memory."""
    root = tmp_path_factory.mktemp("shards")
    for i in range(6):
        write_svmlight(generate(50, seed=10 + i, max_docs=60, qid_start=1 + 50 * i), root / f"train-{i}.txt")
    for i in range(2):
        write_svmlight(
            generate(40, seed=20 + i, max_docs=60, qid_start=10_000 + 40 * i), root / f"valid-{i}.txt"
        )
    return root, generate(150, seed=3, max_docs=60, qid_start=1_000_000)


@pytest.mark.parametrize("objective", ["rank:ndcg", "rank:pairwise"])
def test_xgboost_on_dask_from_worker_shards_is_close_to_local_xgboost(
    client, shard_files, objective, tmp_path
):
    from ltr.distributed.backend import build_dask_ranker
    from ltr.distributed.shards import gather_split, load_sharded
    from ltr.models import build_ranker, load_ranker

    root, test = shard_files
    train = load_sharded(client, str(root / "train-*.txt"), {"n_features": test.n_features}, name="train")
    cfg = {"name": "lambdamart_xgb", "params": {"n_trees": 40, "num_leaves": 15, "objective": objective}}
    dask = build_dask_ranker(cfg, {"name": "dask"}, seed=1, num_threads=1).fit(train)
    local = build_ranker(cfg, seed=1, num_threads=1).fit(gather_split(client, train))
    assert dask.booster_.num_boosted_rounds() == 40 and dask.engine_params_["objective"] == objective
    # same translation as locally, except the per-worker threads
    assert {k: v for k, v in local.engine_params_.items() if k != "nthread"} == {
        k: v for k, v in dask.engine_params_.items() if k != "nthread"
    }
    assert abs(_ndcg10(test, dask.predict(test)) - _ndcg10(test, local.predict(test))) <= 0.01
    dask.save(tmp_path / "m")
    again = load_ranker(tmp_path / "m")
    assert type(again).__name__ == "XGBoostLambdaMART"
    np.testing.assert_array_equal(again.predict(test), dask.predict(test))


@pytest.mark.parametrize("model", ["lambdamart", "lambdamart_xgb"])
def test_early_stopping_on_worker_shards_uses_the_exact_validation_curve(client, shard_files, model):
    from ltr.distributed.backend import build_dask_ranker, curve_sums
    from ltr.distributed.lgbm import BoosterRounds
    from ltr.distributed.shards import gather_split, load_sharded
    from ltr.distributed.xgb import XGBoostRounds

    root, test = shard_files
    opts = {"n_features": test.n_features}
    train = load_sharded(client, str(root / "train-*.txt"), opts, name="train")
    valid = load_sharded(client, str(root / "valid-*.txt"), opts, name="valid")
    cfg = {"name": model, "params": {"n_trees": 60, "num_leaves": 7}, "early_stopping": {"patience": 8}}
    dask = build_dask_ranker(cfg, {"name": "dask"}, seed=2, num_threads=1).fit(train, valid)
    curve = np.array(dask.evals_result_["valid"]["ndcg@10"])
    assert dask.best_iteration_ == int(np.argmax(curve)) and curve.size == min(60, dask.best_iteration_ + 9)
    # recomputed on the driver from the kept rounds of the final model and the gathered validation rows
    whole = gather_split(client, valid)
    if model == "lambdamart":
        rounds = BoosterRounds(dask.booster_.model_to_string())
    else:
        rounds = XGBoostRounds(bytes(dask.booster_.save_raw("ubj")))
    sums, counts = curve_sums(rounds(whole.dense()), whole.y, whole.offsets, "ndcg@10", "ltr", {})
    n = dask.best_iteration_ + 1
    np.testing.assert_allclose(curve[:n], (sums / counts)[:n], rtol=1e-9)
    assert dask.n_iterations_ == n


def test_fit_refuses_mixed_inputs(client, shard_files):
    from ltr.distributed.backend import build_dask_ranker
    from ltr.distributed.shards import load_sharded

    root, test = shard_files
    train = load_sharded(client, str(root / "train-*.txt"), {"n_features": test.n_features})
    ranker = build_dask_ranker({"name": "lambdamart"}, {"name": "dask"}, seed=0, num_threads=1)
    with pytest.raises(DataError, match="must both be RankingData or both ShardedSplit"):
        ranker.fit(train, test)


@pytest.mark.parametrize("model", PIPELINE_MODELS)
def test_the_pipeline_evaluates_worker_shards_into_the_same_outcome_form(
    client, configs, shard_files, tmp_path, model
):
    from ltr.distributed.shards import gather_split, load_sharded
    from ltr.experiment.conventions import EvalConventions
    from ltr.experiment.pipeline import SplitResult, ci_bounds, fit_and_evaluate, random_scores

    root, test = shard_files
    write_svmlight(test, tmp_path / "test.txt")
    opts = {"n_features": test.n_features}
    sharded = {
        "train": load_sharded(client, str(root / "train-*.txt"), opts, name="train"),
        "valid": load_sharded(client, str(root / "valid-*.txt"), opts, name="valid"),
        "test": load_sharded(client, tmp_path / "test.txt", opts, name="test", n_parts=3),  # byte ranges
    }
    cfg, local_cfg = configs[(model, "dask")], configs[(model, "local")]
    outcome = fit_and_evaluate(cfg, sharded)
    local = {s: gather_split(client, d) for s, d in sharded.items()}
    conventions = EvalConventions.from_config(cfg.eval)
    for split, data in local.items():
        expected = conventions.evaluate(["ndcg@10", "map"], data, outcome.ranker.predict(data))
        for m, values in expected.items():
            np.testing.assert_array_equal(outcome.results[split].per_query[m], values)
        assert outcome.cis[split] == ci_bounds(
            SplitResult(split, data.n_queries, expected), ["ndcg@10", "map"], cfg.eval, 5
        )
        np.testing.assert_array_equal(outcome.query_ids[split], data.query_ids)
    baseline = conventions.evaluate(["ndcg@10", "map"], local["test"], random_scores(local["test"].n_docs, 5))
    for m, values in baseline.items():
        np.testing.assert_array_equal(outcome.baseline.per_query[m], values)
    # the same form as a local run of the same config on the same rows
    reference = fit_and_evaluate(local_cfg, local)
    assert list(outcome.frames["test"].columns) == list(reference.frames["test"].columns)
    np.testing.assert_array_equal(outcome.frames["test"]["n_docs"], reference.frames["test"]["n_docs"])
    assert set(outcome.history) == set(reference.history) == {"valid"}
    assert outcome.value_split == reference.value_split == "valid"


@pytest.mark.parametrize("change", ["grown", "shrunk", "same size and mtime", "gone", "touched"])
def test_a_file_changed_after_its_shards_were_planned_is_refused_by_the_worker_naming_it(
    client, tmp_path, change
):
    """Issue 25: byte ranges planned on a 1,500-row file, then the file rewritten (1,000 rows, or the
    same size with other bytes at a cut and the old mtime restored, …) returned 1,000 rows, or a value
    cut mid-line, without an error. Each worker now checks the file against the plan's stamp."""
    import os

    path = tmp_path / "train.txt"
    write_svmlight(generate(150, seed=3, min_docs=10, max_docs=10), path)  # 1,500 rows
    shards = plan_shards(path, 3)
    assert len(shards) == 3 and all(s.stamp is not None for s in shards)
    before = os.stat(path)
    data = path.read_bytes()
    if change == "grown":
        path.write_bytes(data + data[: len(data) // 3])
    elif change == "shrunk":
        path.write_bytes(data[: len(data) * 2 // 3])
    elif change == "same size and mtime":
        cut = shards[1].start  # one byte after the cut changed, size and modification time as planned
        path.write_bytes(data[:cut] + (b"3" if data[cut : cut + 1] != b"3" else b"2") + data[cut + 1 :])
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    elif change == "gone":
        path.unlink()
    else:  # touched: same bytes, new modification time (a plan is for the file it saw: refused too)
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 10**9))
    future = client.submit(read_shard, shards[1], {"engine": "python"}, pure=False)
    with pytest.raises(DataError, match=re.escape(f"{path}: the file changed since its shards were planned")):
        future.result()
    assert read_shard(plan_shards(path, 3)[1], {"engine": "python"}).n_docs > 0 if change != "gone" else True


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_engines_get_the_features_in_the_dtype_the_workers_parsed(client, tmp_path, dtype):
    """LightGBM on Dask bins what the run parsed (float64 for LightGBM: the values its own loader
    reads), not a float32 narrowing of it: 100000.0123456789 and 100000.0123456 stay two values."""
    from ltr.distributed.lgbm import dask_arrays
    from ltr.distributed.shards import load_sharded

    path = tmp_path / "fine.txt"
    path.write_text("1 qid:1 1:100000.0123456789\n0 qid:1 1:100000.0123456\n2 qid:2 1:3.25\n")
    split = load_sharded(client, str(path), {"n_features": 1, "dtype": dtype}, name="train", n_parts=2)
    X, _, _ = dask_arrays(client, split)
    values = X.compute()
    assert split.dtype == np.dtype(dtype) and X.dtype == np.dtype(dtype) and values.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(values, load_svmlight(path, n_features=1, dtype=dtype).X)
    assert len(np.unique(values[:2])) == (2 if dtype == "float64" else 1)
