"""backend=dask reads every file-based data kind on the workers: registry datasets, synthetic data, data.cv.

The fast tests use an in-process 2-worker LocalCluster: the splits the workers parse equal a local
``load_dataset`` row for row (parse options included), no ``RankingData`` with rows is ever built
outside a worker task (the driver reads no data), and a run on worker splits gives the per-query
values a local evaluation gives. The slow tests use worker processes (the driver process's parser and
unpickling of ``RankingData`` are made to fail) and the command line.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from helpers import compose_config, run_train_cli, write_fold_standin

from ltr.core.errors import ConfigError, DataError
from ltr.data import RankingData
from ltr.data.registry import load_dataset

distributed = pytest.importorskip("distributed")

SENTINEL = "1.79769e+308"  # Istella's "missing" value, above parse.huge


@pytest.fixture(scope="module")
def client():
    from helpers import in_process_dask_client

    with in_process_dask_client() as c:
        yield c


@pytest.fixture(scope="module")
def standin(tmp_path_factory) -> Path:
    """MQ2008-shaped folders (Fold1..Fold5, 46 features, labels 0-2), and the Fold1 files in the Yahoo
    and Istella-s layouts (Istella's with its 1.79e308 sentinel in some rows)."""
    root = tmp_path_factory.mktemp("standin")
    letor = write_fold_standin(root / "letor", n_queries=80, max_docs=25, seed=3)
    (root / "yahoo").mkdir()
    (root / "istella" / "sample").mkdir(parents=True)
    for split, letor_name in (("train", "train"), ("valid", "vali"), ("test", "test")):
        text = (letor / "Fold1" / f"{letor_name}.txt").read_text()
        (root / "yahoo" / f"set1.{split}.txt").write_text(text)
        lines = text.splitlines()
        lines[1::7] = [re.sub(r" 5:\S+", f" 5:{SENTINEL}", line) for line in lines[1::7]]
        (root / "istella" / "sample" / f"{letor_name}.txt").write_text("\n".join(lines) + "\n")
    return root


def _data_configs(standin: Path) -> dict[str, dict]:
    letor = str(standin / "letor")
    return {
        "mq2008 fold 2": {"name": "mq2008", "dir": letor, "fold": 2, "cache_dir": None},
        "mslr_web10k fold 5, two splits": {
            "name": "mslr_web10k",
            "dir": letor,
            "fold": 5,
            "splits": ["train", "test"],
            "cache_dir": None,
        },
        "yahoo_set1, sparse": {
            "name": "yahoo_set1",
            "dir": str(standin / "yahoo"),
            "parse": {"output": "csr"},
        },
        "istella s, sentinels missing": {
            "name": "istella",
            "dir": str(standin / "istella"),
            "variant": "s",
            "parse": {"nonfinite": "missing"},
            "cache_dir": None,
        },
        "svmlight data.cv fold 3 of 4": {
            "name": "svmlight",
            "train": f"{letor}/Fold1/train.txt",
            "cv": {"folds": 4, "fold": 3, "seed": 7},
            "cache_dir": None,
        },
        "svmlight data.cv fold 2 of 3 without valid": {
            "name": "svmlight",
            "train": f"{letor}/Fold2/train.txt",
            "cv": {"folds": 3, "fold": 2, "valid": False},
            "cache_dir": None,
        },
    }


@pytest.fixture
def driver_builds(monkeypatch) -> list[str]:
    """Every ``RankingData`` with rows built outside a Dask worker task (on the driver), by name."""
    from distributed import get_worker

    built: list[str] = []
    original = RankingData.__post_init__

    def watched(self) -> None:  # noqa: ANN001
        original(self)
        try:
            get_worker()
        except ValueError:
            if self.n_docs:
                built.append(self.name)

    monkeypatch.setattr(RankingData, "__post_init__", watched)
    return built


def _assert_same_rows(client, sharded, local) -> None:
    from ltr.distributed.shards import gather_split

    assert list(sharded) == list(local)
    for split, data in local.items():
        got = gather_split(client, sharded[split])
        assert sharded[split].n_features == data.n_features, split
        np.testing.assert_array_equal(got.dense(), data.dense(), err_msg=split)  # NaN == NaN here
        np.testing.assert_array_equal(got.y, data.y, err_msg=split)
        np.testing.assert_array_equal(got.qid, data.qid, err_msg=split)
        np.testing.assert_array_equal(sharded[split].group_sizes, data.group_sizes)


@pytest.mark.parametrize("case", list(_data_configs(Path("."))))
def test_workers_parse_every_file_kind_as_a_local_load_does(client, standin, driver_builds, case):
    from ltr.distributed.data import load_worker_dataset

    data_cfg = _data_configs(standin)[case]
    sharded = load_worker_dataset(client, data_cfg, n_parts=3)  # single files: 3 byte ranges each
    assert driver_builds == []  # parsed on the workers only
    assert all(len(s.futures) >= 2 for s in sharded.values())  # really spread over shards
    _assert_same_rows(client, sharded, load_dataset(data_cfg))


def test_the_istella_sentinel_is_turned_missing_on_the_workers(client, standin):
    from ltr.distributed.data import load_worker_dataset
    from ltr.distributed.shards import gather_split

    data_cfg = _data_configs(standin)["istella s, sentinels missing"]
    train = gather_split(client, load_worker_dataset(client, data_cfg, n_parts=2)["train"])
    assert np.isnan(train.dense()[:, 4]).sum() > 5  # the parse option is applied, not skipped
    with pytest.raises(DataError, match=r"sample/train\.txt:(\d+): feature 5 has the non-finite") as info:
        load_worker_dataset(client, {**data_cfg, "parse": {}}, n_parts=2)  # default nonfinite=error
    line = int(re.search(r"train\.txt:(\d+):", str(info.value)).group(1))  # whichever shard failed first:
    text = (standin / "istella" / "sample" / "train.txt").read_text().splitlines()
    assert SENTINEL in text[line - 1]  # the line named is one of the file's sentinel lines


def test_registry_errors_are_the_local_ones(client, standin, tmp_path):
    from ltr.distributed.data import load_worker_dataset

    with pytest.raises(DataError, match=r"mq2008: expected file\(s\) not found: .*Fold1/train\.txt.*MQ2008"):
        load_worker_dataset(client, {"name": "mq2008", "dir": str(tmp_path)}, n_parts=2)
    with pytest.raises(ConfigError, match="data.parse.n_features: mq2008 has 46 features, got 40"):
        load_worker_dataset(
            client, {"name": "mq2008", "dir": str(standin / "letor"), "parse": {"n_features": 40}}, 2
        )
    # a label above the declared range is the parser's error, raised on a worker, at the file's line
    bad = tmp_path / "bad"
    shutil.copytree(standin / "letor" / "Fold1", bad / "Fold1")
    lines = (bad / "Fold1" / "test.txt").read_text().splitlines()
    lines[-1] = "7" + lines[-1][1:]
    (bad / "Fold1" / "test.txt").write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match=rf"Fold1/test\.txt:{len(lines)}: label 7"):
        load_worker_dataset(client, {"name": "mq2008", "dir": str(bad), "cache_dir": None}, n_parts=2)
    with pytest.raises(ConfigError, match="data.cv.folds=3 with no data.cv.fold is the fold protocol"):
        load_worker_dataset(
            client, {"name": "svmlight", "train": str(bad / "Fold1/train.txt"), "cv": {"folds": 3}}, 2
        )


def test_the_synthetic_files_are_generated_and_parsed_on_the_workers(client, tmp_path, driver_builds):
    from ltr.distributed.data import load_worker_dataset

    data_cfg = {"name": "synthetic", "synthetic": True, "dir": str(tmp_path / "syn"), "seed": 4}
    data_cfg["n_queries"] = {"train": 40, "valid": 15, "test": 15}
    sharded = load_worker_dataset(client, data_cfg, n_parts=2)
    assert driver_builds == []  # generate() ran in a worker task, and so did the parsing
    assert (tmp_path / "syn" / "manifest.json").is_file()
    _assert_same_rows(client, sharded, load_dataset(data_cfg))  # local: reuses the worker's files
    assert driver_builds  # (the watcher sees driver-side loads: the local load above)


@pytest.mark.parametrize("protocol", ["registry folds [2,4]", "data.cv 3 folds"])
def test_every_fold_of_a_protocol_is_loaded_on_the_workers(
    client, standin, tmp_path, driver_builds, protocol
):
    from ltr.experiment.folds import fold_plan, load_fold

    letor = standin / "letor"
    data = {
        "registry folds [2,4]": ["data=mq2008", f"data.dir={letor}", "data.fold=[2,4]"],
        "data.cv 3 folds": ["data=svmlight", f"data.train={letor}/Fold3/test.txt", "data.cv.folds=3"],
    }[protocol]
    cfg = compose_config(
        ["+model=lambdamart", "backend=dask", "data.cache_dir=null", f"paths.root={tmp_path}", *data]
    )
    plan = fold_plan(cfg.data)
    assert len(plan.folds) in (2, 3)
    for fold in plan.folds:
        sharded = load_fold(plan, cfg, fold, client)
        assert driver_builds == []
        _assert_same_rows(client, sharded, load_dataset(plan.fold_config(cfg, fold).data))
        driver_builds.clear()  # (the local reference load above)


def test_every_file_kind_has_the_workers_read_the_data_with_backend_dask():
    from omegaconf import OmegaConf

    from ltr.distributed.backend import resolve_backend
    from ltr.experiment.splits import data_cluster, workers_read_data

    def cfg(backend: str, kind: str):
        return OmegaConf.create({"backend": {"name": backend}, "data": {"name": kind}})

    for kind in ("svmlight", "synthetic", "mslr_web30k", "mq2008", "istella", "yahoo_set2"):
        assert workers_read_data(cfg("dask", kind)), kind
        assert not workers_read_data(cfg("local", kind)), kind
    assert not workers_read_data(cfg("dask", "my_own_kind"))  # unknown kind: its own loader, not ours
    with data_cluster(cfg("local", "synthetic")) as client:
        assert client is None
    assert resolve_backend({"memory_limit": "2GB"})["memory_limit"] == "2GB"


def _overrides(model: str, backend: str, root: Path, letor: Path, n_trees: int = 15) -> list[str]:
    return [
        f"+model={model}",
        f"backend={backend}",
        "data=mq2008",
        f"data.dir={letor}",
        "data.fold=3",
        "data.cache_dir=null",
        f"model.params.n_trees={n_trees}",
        "eval.metrics=[ndcg@10,map]",
        "eval.bootstrap.B=100",
        "seed=3",
        "tracking=none",
        f"paths.root={root}",
    ]


def _assert_local_values(outcome, local_cfg) -> dict:
    """The per-query values of ``outcome`` equal a local evaluation of its ranker on a local load."""
    from ltr.experiment.conventions import EvalConventions

    local = load_dataset(local_cfg.data)
    conventions = EvalConventions.from_config(local_cfg.eval)
    for split, data in local.items():
        expected = conventions.evaluate(["ndcg@10", "map"], data, outcome.ranker.predict(data))
        for metric, values in expected.items():
            np.testing.assert_array_equal(outcome.results[split].per_query[metric], values)
        np.testing.assert_array_equal(outcome.query_ids[split], data.query_ids)
    return local


@pytest.mark.parametrize("model", ["lambdamart", "lambdamart_xgb"])
def test_a_registry_run_on_worker_splits_is_evaluated_as_locally(
    client, standin, tmp_path, driver_builds, model
):
    from ltr.experiment.pipeline import fit_and_evaluate
    from ltr.experiment.splits import load_splits

    letor = standin / "letor"
    dask_cfg = compose_config(_overrides(model, "dask", tmp_path, letor))
    outcome = fit_and_evaluate(dask_cfg, load_splits(dask_cfg, client))
    assert driver_builds == []  # loading, training and evaluating: no rows on the driver
    assert set(outcome.results) == {"train", "valid", "test"} and outcome.best_iteration is not None
    _assert_local_values(outcome, compose_config(_overrides(model, "local", tmp_path, letor)))


def refuse_data_in_this_process(monkeypatch) -> None:
    """In this (the driver) process: parsing a file, building a ``RankingData`` with rows or unpickling
    one raises. LocalCluster workers are spawned processes with their own, untouched, modules."""
    from ltr.data import reading, shards, svmlight

    def refuse(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise AssertionError("the driver read data")

    original = RankingData.__post_init__

    def no_rows(self) -> None:  # noqa: ANN001
        original(self)
        if self.n_docs:
            refuse()

    for module, name in ((reading, "parse_file"), (svmlight, "parse_file"), (shards, "_parse_range")):
        monkeypatch.setattr(module, name, refuse)
    monkeypatch.setattr(RankingData, "__setstate__", refuse, raising=False)
    monkeypatch.setattr(RankingData, "__post_init__", no_rows)


@pytest.mark.slow  # two worker processes, and local training of both engines for the comparison
@pytest.mark.parametrize("model", ["lambdamart", "lambdamart_xgb"])
def test_worker_processes_train_a_registry_fold_as_local_training_does(tmp_path, model, monkeypatch):
    """A 2-process LocalCluster reads an MQ2008-shaped fold the driver cannot read, and its test NDCG@10
    is within 0.01 of local training on the same fold (the tolerance of tests/test_dask_lightgbm.py)."""
    from ltr.experiment.pipeline import fit_and_evaluate
    from ltr.experiment.splits import data_cluster, load_splits

    letor = write_fold_standin(tmp_path / "letor", n_queries=600, max_docs=60, seed=11)
    args = ["model.params.num_leaves=15"] if model == "lambdamart" else []
    dask_cfg = compose_config(_overrides(model, "dask", tmp_path, letor, n_trees=100) + args)
    local_cfg = compose_config(_overrides(model, "local", tmp_path, letor, n_trees=100) + args)
    with monkeypatch.context() as patch:
        refuse_data_in_this_process(patch)
        with pytest.raises(AssertionError, match="the driver read data"):
            load_dataset(local_cfg.data)  # the guard works
        with data_cluster(dask_cfg) as client:
            outcome = fit_and_evaluate(dask_cfg, load_splits(dask_cfg, client))
    local = _assert_local_values(outcome, local_cfg)
    reference = fit_and_evaluate(local_cfg, local)
    dask_ndcg, local_ndcg = (o.results["test"].mean("ndcg@10") for o in (outcome, reference))
    assert abs(dask_ndcg - local_ndcg) <= 0.01, (dask_ndcg, local_ndcg)


@pytest.mark.slow  # two `python -m ltr.train` runs, each with a 2-process LocalCluster
def test_train_cli_with_backend_dask_reads_a_fold_protocol_and_the_synthetic_data_on_the_workers(tmp_path):
    from helpers import store_client

    letor = write_fold_standin(tmp_path / "MQ2008", n_queries=60, seed=2)
    common = ["+model=lambdamart", "backend=dask", "model.params.n_trees=8", f"paths.root={tmp_path}"]
    folds = run_train_cli(
        [*common, "data=mq2008", f"data.dir={letor}", "data.fold=[1,2]"], tmp_path, timeout=900
    )
    assert folds.returncode == 0, folds.stderr[-3000:]
    assert "Fold protocol" in folds.stdout and re.search(r"Fold2.*\n.*\n\s+train\s+36 queries", folds.stdout)
    runs = store_client(tmp_path).search_runs(
        [e.experiment_id for e in store_client(tmp_path).search_experiments() if e.name == "ltr"]
    )
    children = [r for r in runs if r.data.tags.get("ltr.folds.role") != "parent"]
    assert len(children) == 2 and all("test/ndcg_at_10" in r.data.metrics for r in children)
    synthetic = [f"data.dir={tmp_path / 'synthetic'}", "data.n_queries.train=60", "data.n_queries.valid=20"]
    done = run_train_cli([*common, *synthetic, "data.n_queries.test=20"], tmp_path, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert re.search(r"train\s+60 queries", done.stdout) and "SYNTHETIC" in done.stdout
    assert (tmp_path / "synthetic" / "manifest.json").is_file()
