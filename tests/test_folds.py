"""Fold protocols (ltr/experiment/folds.py): ``data.fold=all`` on a LETOR-layout dataset and ``data.cv.folds=K`` on
one labelled file give one summary over the folds, logged to an MLflow parent run with one child per fold.

The truths here are computed independently of :mod:`ltr.experiment.folds`: separate single-fold runs
(``data.fold=k`` / ``data.cv.fold=k``), numpy's mean and standard deviation, and
:func:`ltr.stats.bootstrap_ci` (tested against SciPy in tests/test_stats_bootstrap.py) on the
concatenated per-query values of those separate runs.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import compose_config, store_client, train_main_in_process, write_fold_standin, write_letor

from ltr.core.errors import ConfigError, DataError
from ltr.data import RankingData
from ltr.data.registry import load_dataset
from ltr.data.splits import cv_folds, stratified_query_folds
from ltr.stats import bootstrap_ci

METRICS = ["ndcg@5", "ndcg@10", "map"]
B = 300
QUICK = [
    "+model=lambdamart",
    "model.params.n_trees=8",
    "model.early_stopping.patience=3",
    f"eval.metrics=[{','.join(METRICS)}]",
    f"eval.bootstrap.B={B}",
    "eval.curve.max_k=0",
    "tracking.log_model=false",
    "tracking.log_plots=false",
    "num_threads=1",
]


@pytest.fixture(scope="module")
def standin(tmp_path_factory) -> Path:
    """MQ2008-shaped stand-in: Fold1..Fold5/{train,vali,test}.txt, 46 features, labels 0-2, 50 queries."""
    return write_fold_standin(tmp_path_factory.mktemp("letor") / "MQ2008", n_queries=50, max_label=2)


@pytest.fixture(scope="module")
def labelled_file(tmp_path_factory) -> Path:
    """One labelled file of 45 queries (sizes 5..) for the k-fold split."""
    path = tmp_path_factory.mktemp("own") / "train.txt"
    write_letor(path, 45, 1)
    return path


def _execute(overrides: list[str]):
    from ltr.train import execute

    return execute(compose_config(overrides))


def _protocol_and_separate_runs(root: Path, data: list[str], key: str, folds: list[int]):
    """The fold protocol (``key=all``/K folds), logged to ``root``'s store, and separate single runs of each
    fold (not logged: the tests compare their outcomes, which tracking does not change)."""
    common = [*QUICK, *data, f"paths.root={root}"]
    protocol = _execute(common)
    separate = {k: _execute([*common, f"{key}={k}", "tracking=none"]) for k in folds}
    return protocol, separate


@pytest.fixture(scope="module")
def letor_runs(tmp_path_factory, standin):
    root = tmp_path_factory.mktemp("letor_runs")
    data = ["data=mq2008", f"data.dir={standin}", "data.fold=all"]
    protocol, separate = _protocol_and_separate_runs(root, data, "data.fold", [1, 2, 3, 4, 5])
    return root, protocol, separate


@pytest.fixture(scope="module")
def cv_runs(tmp_path_factory, labelled_file):
    root = tmp_path_factory.mktemp("cv_runs")
    data = ["data=svmlight", f"data.train={labelled_file}", "data.n_features=10", "data.cv.folds=3"]
    protocol, separate = _protocol_and_separate_runs(root, data, "data.cv.fold", [1, 2, 3])
    return root, protocol, separate


@pytest.mark.parametrize(
    "runs", [pytest.param("letor_runs", marks=pytest.mark.slow), "cv_runs"]
)  # LETOR folds: CI
def test_per_fold_values_equal_separate_single_fold_runs(runs, request):
    _, protocol, separate = request.getfixturevalue(runs)
    assert len(protocol.runs) == len(separate)
    for (label, child), (k, alone) in zip(protocol.runs.items(), separate.items(), strict=True):
        assert label.endswith(str(k))
        test = alone.outcome.results["test"]
        for m in METRICS:
            assert protocol.summary.per_fold[label][m] == test.mean(m)
            np.testing.assert_array_equal(child.outcome.results["test"].per_query[m], test.per_query[m])
        assert protocol.summary.n_queries[label] == test.n_queries


@pytest.mark.parametrize(
    "runs", [pytest.param("letor_runs", marks=pytest.mark.slow), "cv_runs"]
)  # LETOR folds: CI
def test_mean_sd_and_pooled_ci_match_numpy_and_the_bootstrap(runs, request):
    _, protocol, separate = request.getfixturevalue(runs)
    summary = protocol.summary
    for m in METRICS:
        per_fold = np.array([r.outcome.results["test"].mean(m) for r in separate.values()])
        assert summary.mean[m] == pytest.approx(np.mean(per_fold), abs=1e-15)
        assert summary.sd[m] == pytest.approx(np.std(per_fold, ddof=1), abs=1e-15)
        pooled = np.concatenate([r.outcome.results["test"].per_query[m] for r in separate.values()])
        assert summary.pooled[m] == pytest.approx(np.nanmean(pooled), abs=1e-15)
        ci = bootstrap_ci(pooled, method="bca", B=B, confidence=0.95, seed=42)
        assert summary.pooled_ci[m] == (ci.low, ci.high)
        # the pooled mean is not the mean of the fold means when folds differ in size
    assert summary.n_pooled == sum(r.outcome.results["test"].n_queries for r in separate.values())


def test_the_parent_run_holds_the_summary_and_one_child_per_fold(letor_runs):
    root, protocol, _ = letor_runs
    client = store_client(root)
    parent = client.get_run(protocol.run_id)
    assert parent.data.tags["ltr.folds.role"] == "parent"
    assert parent.info.run_name == "lambdamart-mq2008-folds"
    children = client.search_runs(
        [parent.info.experiment_id], filter_string=f"tags.mlflow.parentRunId = '{protocol.run_id}'"
    )
    by_fold = {c.data.tags["ltr.folds.fold"]: c for c in children}
    assert sorted(by_fold) == ["Fold1", "Fold2", "Fold3", "Fold4", "Fold5"]
    metrics = parent.data.metrics
    for label, child in by_fold.items():
        assert child.info.status == "FINISHED"
        assert child.data.params["data.fold"] == label[-1]  # each child's config is that fold's single run
        assert child.data.tags["ltr.command"].endswith(f"data.fold={label[-1]}")
        assert metrics[f"{label.lower()}/test/ndcg_at_10"] == child.data.metrics["test/ndcg_at_10"]
    fold_values = [by_fold[f"Fold{k}"].data.metrics["test/map"] for k in range(1, 6)]
    assert metrics["folds/test/map_mean"] == pytest.approx(np.mean(fold_values))
    table = pd.read_json(
        client.download_artifacts(protocol.run_id, "summary/metrics.json", str(root / "dl")), orient="split"
    ).set_index(["scope", "metric"])
    assert table.loc[("mean of 5 folds", "map"), "sd"] == pytest.approx(np.std(fold_values, ddof=1))
    assert table.loc[("pooled", "map"), "n_queries"] == 50
    assert table.loc[("Fold3", "map"), "mean"] == pytest.approx(
        by_fold["Fold3"].data.metrics["test/map"], abs=1e-9
    )
    pooled = table.loc[("pooled", "map")]
    assert pooled["mean"] == pytest.approx(metrics["pooled/test/map"], abs=1e-9)
    assert pooled["ci_low"] < metrics["pooled/test/map"] < pooled["ci_high"]
    assert not [
        k for k in metrics if k.endswith(("_sd", "_ci_low", "_ci_high", "n_queries"))
    ]  # no chart each
    assert parent.data.params["data.fold"] == "all"
    local = Path(client.download_artifacts(protocol.run_id, "per_query/test.parquet", str(root)))
    frame = pd.read_parquet(local)
    assert len(frame) == 50 and frame["qid"].is_unique
    assert frame.groupby("fold").size().to_dict() == protocol.summary.n_queries
    summary = json.loads(
        Path(client.download_artifacts(protocol.run_id, "folds/summary.json", str(root))).read_text()
    )
    assert summary["pooled_n_queries"] == 50 and summary["folds"] == [f"Fold{k}" for k in range(1, 6)]
    assert summary["sd"]["map"] == pytest.approx(np.std(fold_values, ddof=1))


def test_a_fold_subset_runs_only_those_folds(tmp_path, standin):
    ran = _execute(
        [
            *QUICK,
            "data=mq2008",
            f"data.dir={standin}",
            "data.fold=[4,2]",
            "tracking=none",
            f"paths.root={tmp_path}",
        ]
    )
    assert list(ran.runs) == ["Fold4", "Fold2"] and ran.run_id is None


# --- the k-fold split of one file -----------------------------------------------------------------------


def _sizes(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(1, 60, size=n)


@pytest.mark.parametrize(("n", "k"), [(50, 5), (53, 5), (10, 3), (7, 2)])
def test_stratified_folds_are_a_seeded_partition_of_the_queries(n, k):
    sizes = _sizes(n, n)
    folds = stratified_query_folds(sizes, k, seed=7)
    assert folds.shape == (n,) and set(folds.tolist()) == set(range(k))  # every query in exactly one fold
    counts = np.bincount(folds, minlength=k)
    assert counts.max() - counts.min() <= 1
    np.testing.assert_array_equal(folds, stratified_query_folds(sizes, k, seed=7))
    assert any(not np.array_equal(folds, stratified_query_folds(sizes, k, seed=s)) for s in (8, 9, 10))


def test_folds_are_stratified_by_query_size():
    # 40 queries, 8 of each size 1..5 (shuffled): a stratified 4-fold split puts 2 of each size in every fold
    sizes = np.random.default_rng(0).permutation(np.repeat([1, 2, 3, 4, 5], 8))
    for seed in range(20):
        folds = stratified_query_folds(sizes, 4, seed=seed)
        for f in range(4):
            assert np.bincount(sizes[folds == f], minlength=6)[1:].tolist() == [2, 2, 2, 2, 2]
    # a plain random split does not: the same check fails for some seed
    plain = [np.random.default_rng(s).permutation(40) % 4 for s in range(20)]
    assert any(np.bincount(sizes[p == 0], minlength=6)[1:].tolist() != [2] * 5 for p in plain)


def test_cv_folds_partition_test_queries_and_keep_splits_disjoint():
    sizes = _sizes(31, 1)
    data = RankingData(
        X=np.zeros((int(sizes.sum()), 1), np.float32),
        y=np.zeros(int(sizes.sum())),
        qid=np.repeat(np.arange(31) + 100, sizes),
    )
    for valid in (True, False):
        folds = cv_folds(data, 4, seed=3, valid=valid)
        tests = np.concatenate([np.unique(f["test"].qid) for f in folds])
        assert sorted(tests.tolist()) == list(range(100, 131))  # each query in exactly one test fold
        for i, f in enumerate(folds):
            ids = {s: set(np.unique(d.qid).tolist()) for s, d in f.items()}
            assert set().union(*ids.values()) == set(range(100, 131))
            assert sum(map(len, ids.values())) == 31  # train, valid and test are disjoint
            assert ("valid" in f) is valid
            if valid:  # fold i validates on the test part of fold i+1
                assert ids["valid"] == set(np.unique(folds[(i + 1) % 4]["test"].qid).tolist())
            assert np.all(np.diff(f["train"].qid) >= 0)  # the file's query order is kept


def test_cv_fold_of_load_dataset_is_the_protocols_fold(labelled_file):
    cfg = {
        "kind": "svmlight",
        "name": "own",
        "train": str(labelled_file),
        "n_features": 10,
        "cache_dir": None,
    }
    whole = load_dataset(cfg)["train"]
    expected = cv_folds(whole, 3, seed=5)[1]
    got = load_dataset({**cfg, "cv": {"folds": 3, "seed": 5, "fold": 2}})
    assert sorted(got) == ["test", "train", "valid"]
    for split in got:
        assert got[split].fingerprint() == expected[split].fingerprint()


# --- bad values: a clear error in the user's spelling, before any training --------------------------------


def _refuse_training(monkeypatch, *, tracker: bool = False) -> None:
    """Training (and, unless ``tracker``, opening the tracker) fails the test: the error must come first."""
    import ltr.experiment.folds
    import ltr.experiment.record

    def refuse(*args, **kwargs):
        raise AssertionError("training or the tracker started before the config error")

    monkeypatch.setattr(ltr.experiment.folds, "train_and_record", refuse)
    if not tracker:
        monkeypatch.setattr(ltr.experiment.folds, "make_tracker", refuse)
        monkeypatch.setattr(ltr.experiment.record, "make_tracker", refuse)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            ["data=mq2008", "data.fold=6"],
            r"^data.fold: expected a fold 1..5, all, or a list of folds such as \[1,3,5\]; got 6$",
        ),
        (["data=mq2008", "data.fold=0"], r"^data.fold: expected a fold 1..5, .*got 0$"),
        (["data=mq2008", "data.fold=al"], r"^data.fold: expected a fold 1..5, .*got 'al'$"),
        (["data=mq2008", "data.fold=[1,1]"], r"^data.fold: .*got \[1, 1\] \(fold 1 twice\)$"),
        (["data=mq2008", "data.fold=[]"], r"^data.fold: .*got \[\] \(an empty list\)$"),
        (["data=mq2008", "data.fold=[2,9]"], r"^data.fold: .*got \[2, 9\]$"),
        (["data=mq2008", "data.fold=true"], r"^data.fold: .*got True$"),
        (
            ["data=svmlight", "data.train=x.txt", "data.cv.folds=1"],
            r"^data.cv.folds: 1 fold is no cross-validation",
        ),
        (["data=svmlight", "data.train=x.txt", "data.cv.folds=3", "data.test=y.txt"], r"unset data.test"),
        (
            ["data=svmlight", "data.train=x.txt", "data.cv.folds=3", "data.cv.fold=4"],
            r"^data.cv.fold: must be in \[1, 3\]",
        ),
        (
            ["data=mq2008", "data.fold=all", "eval.splits=[valid]"],
            r"^eval.splits=\['valid'\]: a fold protocol summarises the test split",
        ),
    ],
)
def test_a_bad_fold_value_fails_before_training(tmp_path, monkeypatch, overrides, message):
    _refuse_training(monkeypatch)
    with pytest.raises(ConfigError, match=message):
        _execute([*QUICK, *overrides, f"paths.root={tmp_path}"])


def test_a_missing_fold_file_fails_before_the_first_fold_trains(tmp_path, monkeypatch):
    data = write_fold_standin(tmp_path / "MQ2008", n_queries=20)
    (data / "Fold4" / "test.txt").unlink()
    _refuse_training(monkeypatch)
    with pytest.raises(DataError, match=r"data.fold=all needs file\(s\) not found: .*Fold4/test.txt"):
        _execute([*QUICK, "data=mq2008", f"data.dir={data}", "data.fold=all", f"paths.root={tmp_path}"])


@pytest.mark.parametrize(
    ("fold", "split", "line", "says"),
    [
        (3, "test.txt", "2 qid:x 1:0.5", "qid"),  # a malformed qid
        (5, "train.txt", "7 qid:9 1:0.5", "label"),  # a label outside MQ2008's 0-2
        (2, "vali.txt", "1 qid:9 1:0.5 1:0.7", "appears twice"),  # a repeated feature index
    ],
)
def test_a_bad_line_in_a_later_fold_fails_before_any_fold_trains(
    tmp_path, monkeypatch, fold, split, line, says
):
    """``data.fold=all`` with one bad line in Fold3 (5, 2): the parser's error naming that file and line,
    before Fold1 trains and before the parent run opens."""
    data = write_fold_standin(tmp_path / "MQ2008", n_queries=20)
    path = data / f"Fold{fold}" / split
    n_lines = len(path.read_text().splitlines())
    with path.open("a") as f:
        f.write(line + "\n")
    _refuse_training(monkeypatch, tracker=True)
    with pytest.raises(DataError, match=rf"Fold{fold}/{split}:{n_lines + 1}:.*{says}"):
        _execute([*QUICK, "data=mq2008", f"data.dir={data}", "data.fold=all", f"paths.root={tmp_path}"])
    client = store_client(tmp_path)
    assert client.search_runs([e.experiment_id for e in client.search_experiments()]) == []


def test_too_few_queries_for_the_folds_fails_before_training(tmp_path, monkeypatch):
    path = tmp_path / "small.txt"
    write_letor(path, 4, 1)
    _refuse_training(monkeypatch, tracker=True)  # the data is read after the tracker, before the parent run
    with pytest.raises(ConfigError, match="cannot make 5 folds from 4 queries"):
        _execute(
            [
                *QUICK,
                "data=svmlight",
                f"data.train={path}",
                "data.n_features=10",
                "data.cv.folds=5",
                f"paths.root={tmp_path}",
            ]
        )
    runs = store_client(tmp_path).search_runs(
        [e.experiment_id for e in store_client(tmp_path).search_experiments()]
    )
    assert runs == []  # no parent run was opened


def test_loading_several_folds_at_once_names_the_protocol():
    with pytest.raises(
        ConfigError, match=r"data.fold=all: several folds are a fold protocol.*python -m ltr.train"
    ):
        load_dataset({"kind": "mq2008", "name": "mq2008", "fold": "all", "dir": "nowhere"})


def test_the_command_line_reports_a_bad_fold_in_its_spelling(tmp_path, monkeypatch, capsys):
    """``python -m ltr.train`` (its main in-process): exit 2, the fold named as the command line spells it."""
    args = ["+model=linear", "data=mq2008", "data.fold=[1,7]", f"paths.root={tmp_path}"]
    code = train_main_in_process(args, tmp_path, monkeypatch)
    out, err = capsys.readouterr()
    assert code == 2, err
    assert err.strip().splitlines()[-1] == (
        "error: data.fold: expected a fold 1..5, all, or a list of folds such as [1,3,5]; got [1, 7]"
    )
    assert "Training" not in out and not (tmp_path / "mlflow.db").exists()


def test_a_sweep_job_of_the_protocol_reports_the_means_over_folds(letor_runs, tmp_path):
    # `-m data.fold=all model.params.num_leaves=7,15`: each job's value and ltr_result.json are over folds
    from ltr.train import optimised_value, write_job_result

    _, protocol, separate = letor_runs
    assert optimised_value(protocol) == pytest.approx(np.mean([r.outcome.value for r in separate.values()]))
    record = json.loads(write_job_result(protocol, tmp_path).read_text())
    assert record["run_id"] == protocol.run_id and record["target"] == "ndcg@10"
    for m in METRICS:
        fold_means = [r.outcome.results["test"].mean(m) for r in separate.values()]
        assert record["test"][m] == pytest.approx(np.mean(fold_means))
