"""The pipeline core: the pure fit-and-evaluate step against scikit-learn, and the log step read back from MLflow.

The data is built here (no generator): queries with graded labels (so exp2 and linear gains differ),
tied scores (so the tie convention matters) and test queries without any relevant document (so the
``no_relevant`` convention matters). The ranker is the single-feature model on column 0, so the
expected scores are ``X[:, 0]`` and every expected number comes from scikit-learn's ``ndcg_score``.
"""

from __future__ import annotations

import io
import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import compose_config
from mlflow.tracking import MlflowClient
from sklearn.metrics import ndcg_score

from ltr.data import RankingData
from ltr.experiment.conventions import EvalConventions
from ltr.experiment.pipeline import fit_and_evaluate
from ltr.experiment.record import log_outcome, train_and_record
from ltr.stats import bootstrap_ci
from ltr.tracking.writer import NullTracker, Tracker

NO_RELEVANT_TEST_QUERIES = (2, 5)  # indices of test queries whose labels are all 0


def _split(rng: np.random.Generator, n_queries: int, name: str, empty: tuple[int, ...] = ()) -> RankingData:
    sizes = rng.integers(4, 12, n_queries)
    qid = np.repeat(np.arange(n_queries) + 100, sizes)
    # column 0 on a coarse grid: ties inside queries; the other columns are noise
    X = np.column_stack([rng.integers(0, 4, qid.size), rng.random((qid.size, 2))]).astype(np.float32)
    y = rng.integers(0, 4, qid.size).astype(float)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    for q in range(n_queries):
        if q in empty:
            y[offsets[q] : offsets[q + 1]] = 0.0
        elif not y[offsets[q] : offsets[q + 1]].any():
            y[offsets[q]] = 2.0
    return RankingData(X, y, qid, name=name)


@pytest.fixture(scope="module")
def splits() -> dict[str, RankingData]:
    rng = np.random.default_rng(11)
    return {
        "train": _split(rng, 15, "train"),
        "valid": _split(rng, 10, "valid"),
        "test": _split(rng, 12, "test", NO_RELEVANT_TEST_QUERIES),
    }


def _config(root: Path, *extra: str):
    return compose_config(
        [
            "+model=feature",
            "model.params.feature=1",  # 1-based: column 0
            "model.params.direction=desc",
            "eval.preset=sklearn",
            "eval.metrics=[ndcg@5,ndcg@10]",
            "eval.bootstrap.method=percentile",
            "eval.bootstrap.B=300",
            "eval.bootstrap.confidence=0.9",
            "eval.curve.max_k=3",
            "seed=5",
            "tracking=none",
            f"paths.root={root}",
            *extra,
        ]
    )


def sklearn_ndcg(data: RankingData, scores: np.ndarray, k: int) -> np.ndarray:
    """scikit-learn's NDCG@k per query (linear gain, ties averaged, 0 for a query without relevance)."""
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sklearn warns that NDCG is ill-defined for all-zero queries
        for a, b in zip(data.offsets[:-1], data.offsets[1:], strict=True):
            out.append(ndcg_score([data.y[a:b]], [scores[a:b]], k=k))
    return np.array(out)


@pytest.fixture(scope="module")
def outcome(splits, tmp_path_factory):
    return fit_and_evaluate(_config(tmp_path_factory.mktemp("root")), splits)


def test_outcome_values_equal_scikit_learn_under_the_configured_preset(outcome, splits):
    for split, data in splits.items():
        scores = np.asarray(data.X[:, 0], dtype=float)
        for k in (5, 10):
            np.testing.assert_allclose(
                outcome.results[split].per_query[f"ndcg@{k}"], sklearn_ndcg(data, scores, k), atol=1e-12
            )
    test = splits["test"]
    # the @k columns of the test frame use the same conventions
    for k in (1, 2, 3):
        np.testing.assert_allclose(
            outcome.frames["test"][f"ndcg@{k}"], sklearn_ndcg(test, test.X[:, 0].astype(float), k), atol=1e-12
        )
    assert outcome.frames["test"]["qid"].tolist() == list(np.unique(test.qid))
    assert outcome.frames["test"]["n_docs"].tolist() == np.diff(test.offsets).tolist()
    # the optimised value: the early-stopping metric (ndcg@10) averaged over the validation queries
    assert (outcome.target, outcome.value_split) == ("ndcg@10", "valid")
    valid = splits["valid"]
    assert outcome.value == pytest.approx(
        sklearn_ndcg(valid, valid.X[:, 0].astype(float), 10).mean(), abs=1e-12
    )


def test_random_baseline_is_seeded_uniform_scores_on_the_test_queries(outcome, splits):
    test = splits["test"]
    random_scores = np.random.default_rng(5).random(test.n_docs)  # seed=5 in the config
    assert outcome.baseline.split == "test" == outcome.report_split
    np.testing.assert_allclose(
        outcome.baseline.per_query["ndcg@10"], sklearn_ndcg(test, random_scores, 10), atol=1e-12
    )


def test_ci_bounds_use_the_bootstrap_settings_and_the_run_seed(outcome):
    values = outcome.results["test"].per_query["ndcg@5"]
    ci = bootstrap_ci(values, method="percentile", B=300, confidence=0.9, seed=5)
    assert outcome.cis["test"]["ndcg@5"] == (ci.low, ci.high)
    other = bootstrap_ci(values, method="percentile", B=300, confidence=0.9, seed=6)
    assert (other.low, other.high) != (ci.low, ci.high)  # so the seed is really checked


def test_changing_a_convention_changes_the_numbers(splits, tmp_path):
    skip = fit_and_evaluate(_config(tmp_path, "+eval.conventions.no_relevant=skip"), splits)
    assert skip.conventions.describe()["no_relevant"] == "skip"
    values = skip.results["test"].per_query["ndcg@10"]
    test = splits["test"]
    expected = sklearn_ndcg(test, test.X[:, 0].astype(float), 10)
    expected[list(NO_RELEVANT_TEST_QUERIES)] = np.nan
    np.testing.assert_allclose(values, expected, atol=1e-12)
    assert skip.results["test"].n_skipped("ndcg@10") == len(NO_RELEVANT_TEST_QUERIES)
    assert np.isnan(skip.baseline.per_query["ndcg@10"][list(NO_RELEVANT_TEST_QUERIES)]).all()
    assert np.isnan(skip.frames["test"]["ndcg@1"].to_numpy()[list(NO_RELEVANT_TEST_QUERIES)]).all()


def test_eval_conventions_are_read_once_into_one_object():
    conv = EvalConventions.from_config({"preset": "trec", "conventions": {"ties": "stable"}})
    assert conv.resolved.gain == "linear" and conv.resolved.ties == "stable"
    assert conv.describe()["preset"] == "trec+overrides"
    with pytest.raises(TypeError):
        conv.overrides["ties"] = "average"  # read-only: nothing downstream can change them


def test_log_step_writes_the_outcome_to_mlflow(splits, tmp_path):
    cfg = _config(tmp_path, "+eval.conventions.no_relevant=skip", "tracking.log_plots=false")
    result = fit_and_evaluate(cfg, splits)
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    tracker = Tracker(uri, "pipeline", artifact_root=tmp_path / "art")
    with tracker.start(run_name="logged"):
        log_outcome(tracker, cfg, result, splits)
    client = MlflowClient(uri)
    run = client.get_run(tracker.run_id)
    metrics, params = run.data.metrics, run.data.params
    test = splits["test"]
    expected = sklearn_ndcg(test, test.X[:, 0].astype(float), 10)
    kept = np.setdiff1d(np.arange(test.n_queries), NO_RELEVANT_TEST_QUERIES)
    assert metrics["test/ndcg_at_10"] == pytest.approx(expected[kept].mean(), abs=1e-12)
    # CI bounds and counts are rows of one table artifact, not metrics (no chart each)
    assert not [k for k in metrics if k.endswith(("_ci_low", "_ci_high", "_n_skipped", "n_queries"))]
    local = client.download_artifacts(tracker.run_id, "summary/metrics.json", str(tmp_path / "dl"))
    table = pd.read_json(local, orient="split").set_index(["split", "metric"])
    assert table.loc[("test", "ndcg@10"), "n_skipped"] == len(NO_RELEVANT_TEST_QUERIES)
    assert table.loc[("test", "ndcg@10"), "n_queries"] == test.n_queries
    assert table.loc[("test", "ndcg@10"), "mean"] == pytest.approx(metrics["test/ndcg_at_10"], abs=1e-12)
    assert tuple(table.loc[("test", "ndcg@5"), ["ci_low", "ci_high"]]) == pytest.approx(
        result.cis["test"]["ndcg@5"]
    )
    assert {"path": "summary/metrics.json", "type": "table"} in json.loads(
        run.data.tags["mlflow.loggedArtifacts"]
    )
    # the description states the headline result (the optimised metric, ndcg@10) with its 90 % CI
    assert result.target == "ndcg@10"
    low, high = result.cis["test"]["ndcg@10"]
    assert run.data.tags["mlflow.note.content"] == (
        f"feature on {cfg.data.name}: test ndcg@10 = {metrics['test/ndcg_at_10']:.4f}, 90% CI [{low:.4f}, "
        f"{high:.4f}] over {test.n_queries - len(NO_RELEVANT_TEST_QUERIES)} queries ({len(NO_RELEVANT_TEST_QUERIES)} "
        "skipped: ndcg@10 undefined, e.g. no relevant document) (random scores: "
        f"{metrics['test/baseline_random/ndcg_at_10']:.4f}); valid ndcg@10 = {metrics['valid/ndcg_at_10']:.4f} (optimised)."
    )
    random_scores = np.random.default_rng(5).random(test.n_docs)
    assert metrics["test/baseline_random/ndcg_at_10"] == pytest.approx(
        np.nanmean(sklearn_ndcg(test, random_scores, 10)[kept]), abs=1e-12
    )
    assert params["metric_conventions.no_relevant"] == "skip"
    assert params["metric_conventions.preset"] == "sklearn+overrides"
    assert params["metric_conventions.gain"] == "linear"
    assert "best_iteration" not in metrics  # the feature model has no rounds
    local = client.download_artifacts(run.info.run_id, "per_query/test.parquet", str(tmp_path / "dl"))
    pd.testing.assert_frame_equal(pd.read_parquet(local), result.frames["test"])
    assert {a.path for a in client.list_artifacts(run.info.run_id)} >= {"per_query"}
    assert not client.list_artifacts(run.info.run_id, "plots")  # log_plots=false


def test_train_and_record_without_a_tracker_returns_the_same_outcome(splits, tmp_path, outcome):
    from rich.console import Console

    out = io.StringIO()
    cfg = _config(tmp_path)
    recorded = train_and_record(
        cfg, splits, NullTracker(), run_name="x", tags={}, console=Console(file=out, width=120)
    )
    assert recorded.run_id is None and recorded.label == "feature"
    assert recorded.outcome.value == outcome.value
    np.testing.assert_array_equal(
        recorded.outcome.results["test"].per_query["ndcg@5"], outcome.results["test"].per_query["ndcg@5"]
    )
    assert "Training feature (seed 5" in out.getvalue()


def test_no_module_imports_an_entry_point():
    """Entry points are thin CLIs over the core: no module of ``ltr`` imports one of them (at any depth)."""
    import ast

    import ltr

    package = Path(ltr.__file__).parent
    entry_points = {"ltr.train", "ltr.compare", "ltr.evaluate", "ltr.data.__main__"}
    offenders = []
    for path in package.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = {node.module} | {f"{node.module}.{a.name}" for a in node.names}
            elif isinstance(node, ast.Import):
                names = {a.name for a in node.names}
            else:
                continue
            if names & entry_points:
                offenders.append(f"{path.relative_to(package.parent)}:{node.lineno}")
    assert not offenders, f"entry points imported by: {', '.join(offenders)}"


def test_bad_splits_fail_with_config_errors(splits, tmp_path, monkeypatch):
    import ltr.experiment.pipeline
    from ltr.core.errors import ConfigError

    with monkeypatch.context() as patch:  # eval.splits is checked before the ranker is built and fitted
        patch.setattr(
            ltr.experiment.pipeline,
            "make_ranker",
            lambda cfg: pytest.fail("built before eval.splits was checked"),
        )
        with pytest.raises(ConfigError, match="eval.splits=\\['dev'\\]: none of them is a split"):
            fit_and_evaluate(_config(tmp_path, "eval.splits=[dev]"), splits)
    with pytest.raises(ConfigError, match="data 'synthetic' has no train split"):
        fit_and_evaluate(_config(tmp_path), {"test": splits["test"]})


def _renumbered(data: RankingData, start: int) -> RankingData:
    """The same rows with query ids ``start, start + 1, ...`` (so splits share no query id)."""
    qid = np.repeat(np.arange(data.n_queries) + start, data.group_sizes)
    return RankingData(data.X, data.y, qid, name=data.name)


def test_a_test_split_overlapping_train_is_warned_about_and_tagged(splits, tmp_path, caplog):
    """Leakage: the test split is the training data (same fingerprint, even as another object), or
    shares query ids with it → a warning naming the split and an ``ltr.leakage.<split>`` tag; clean
    splits get neither."""
    train = _renumbered(splits["train"], 1000)
    clean = {
        "train": train,
        "valid": _renumbered(splits["valid"], 2000),
        "test": _renumbered(splits["test"], 3000),
    }
    copy = RankingData(train.X.copy(), train.y.copy(), train.qid.copy(), name="copy of train")
    shared_ids = np.concatenate([train.query_ids[:3], np.arange(3) + 5000])
    sizes = splits["test"].group_sizes[:6]
    partial = RankingData(splits["test"].X[: sizes.sum()], splits["test"].y[: sizes.sum()],
                          np.repeat(shared_ids, sizes), name="partial")  # fmt: skip
    cfg = _config(tmp_path, "tracking.log_plots=false", "tracking.log_model=false")
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    tracker = Tracker(uri, "pipeline", artifact_root=tmp_path / "art")
    tags = {}
    for name, test in (("clean", clean["test"]), ("identical", copy), ("partial", partial)):
        case = {**clean, "test": test}
        outcome = fit_and_evaluate(cfg, case)
        caplog.clear()
        with tracker.start(run_name=name):
            log_outcome(tracker, cfg, outcome, case)
        tags[name] = {
            k: v
            for k, v in MlflowClient(uri).get_run(tracker.run_id).data.tags.items()
            if k.startswith("ltr.leak")
        }
        warned = [r.getMessage() for r in caplog.records if "leakage" in r.getMessage()]
        assert len(warned) == len(tags[name])
    assert tags["clean"] == {}
    assert tags["identical"] == {
        "ltr.leakage.test": "the test split is identical to train (same data fingerprint)"
    }
    assert tags["partial"] == {"ltr.leakage.test": "the test split shares 3 of its 6 query ids with train"}
    valid_is_train = fit_and_evaluate(cfg, {**clean, "valid": train}).overlaps
    assert [(o.split, o.identical, o.shared) for o in valid_is_train] == [("valid", True, train.n_queries)]
