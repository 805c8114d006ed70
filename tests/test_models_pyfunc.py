"""MLflow pyfunc wrapper: log any ranker to a temporary SQLite store, load it back with
``mlflow.pyfunc.load_model`` and get identical scores from a DataFrame."""

from __future__ import annotations

import os

import numpy as np
import pytest

from ltr.core.errors import DataError
from ltr.data.synthetic import generate
from ltr.models import build_ranker
from ltr.tracking.store import process_uris

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
mlflow = pytest.importorskip("mlflow")

FAST = {
    "lambdamart": {"n_trees": 10, "num_leaves": 7, "min_data_in_leaf": 5},
    "lambdamart_xgb": {"n_trees": 10, "max_depth": 3},
    "random_forest": {"n_trees": 4},
    "linear": {},
    "feature": {},
}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("mlflow")
    with process_uris(f"sqlite:///{root}/mlflow.db"):
        yield mlflow.create_experiment("pyfunc-test", artifact_location=(root / "artifacts").as_uri())


def round_trip(store, models: list[str]) -> None:
    from ltr.models.pyfunc import as_frame, log_pyfunc_model

    train = generate(n_queries=40, seed=1, max_docs=20)
    test = generate(n_queries=20, seed=2, max_docs=20)
    rankers = {
        name: build_ranker({"name": name, "params": params}, seed=0, num_threads=1).fit(train)
        for name, params in FAST.items()
        if name in models
    }
    uris = {}
    with mlflow.start_run(experiment_id=store):
        for name, ranker in rankers.items():
            info = log_pyfunc_model(ranker, name=name, input_example=test.dense()[:3])
            uris[name] = info.model_uri
    assert set(rankers) == set(models) and set(uris) == set(models)
    frame = as_frame(test.dense())
    # every check runs for every logged model (not only for the last one of a loop)
    for name, ranker in rankers.items():
        loaded = mlflow.pyfunc.load_model(uris[name])
        expected = ranker.predict(test)
        scores = np.asarray(loaded.predict(frame), dtype=np.float64)
        np.testing.assert_array_equal(scores, expected, err_msg=name)
        # columns may come in any order; a missing column is named (MLflow enforces the logged signature)
        shuffled = frame[frame.columns[::-1]]
        np.testing.assert_array_equal(np.asarray(loaded.predict(shuffled)), expected, err_msg=name)
        # the optional qid column is accepted and, for a row-wise model, changes nothing
        with_qid = as_frame(test.dense(), qid=test.qid)
        np.testing.assert_array_equal(np.asarray(loaded.predict(with_qid)), expected, err_msg=name)
        # float64 features pass the (double) signature too, with the same scores
        np.testing.assert_array_equal(
            np.asarray(loaded.predict(frame.astype("float64"))), expected, err_msg=name
        )
        assert loaded.metadata.get_input_schema().input_names()[-1] == "qid", name
        with pytest.raises(Exception, match="f1"):
            loaded.predict(frame.drop(columns=["f1"]))


def test_pyfunc_round_trip_gives_identical_scores(store):
    round_trip(store, ["lambdamart", "linear"])


@pytest.mark.slow
def test_pyfunc_round_trip_every_engine(store):
    round_trip(store, ["lambdamart_xgb", "random_forest", "feature"])


def test_score_by_query_groups_rows_and_restores_order():
    """A per-query ensemble scored through the pyfunc path: any row order, queries interleaved."""
    from ltr.models.base import OneQueryWarning
    from ltr.models.pyfunc import as_frame, input_matrix, input_qid, score_by_query

    train = generate(n_queries=30, seed=1, max_docs=15)
    test = generate(n_queries=12, seed=2, max_docs=15)
    cfg = {"name": "ensemble_mean", "members": ["linear", "feature"], "params": {"normalization": "zscore"}}
    ens = build_ranker(cfg, seed=0, num_threads=1).fit(train, train)
    expected = ens.predict(test)
    perm = np.random.default_rng(1).permutation(test.n_docs)
    frame = as_frame(test.dense()[perm], qid=test.qid[perm])
    got = score_by_query(ens, input_matrix(frame, test.n_features), input_qid(frame))
    np.testing.assert_allclose(got, expected[perm], rtol=0, atol=1e-12)
    # one query's rows alone score the same as inside the whole frame
    q = test.qid[perm][0]
    own = test.qid[perm] == q
    with pytest.warns(OneQueryWarning, match="scored as ONE query"):
        alone = score_by_query(ens, test.dense()[perm][own], None)
    np.testing.assert_allclose(alone, got[own], rtol=0, atol=1e-12)


def test_qid_column_errors():
    import pandas as pd

    from ltr.models.pyfunc import as_frame, input_qid

    with pytest.raises(DataError, match=r"column 'qid' must hold integer query ids; row 1 has 2.5"):
        input_qid(pd.DataFrame({"f1": [1.0, 2.0], "qid": [1.0, 2.5]}))
    with pytest.raises(DataError, match=r"row 0 has 'a'"):
        input_qid(pd.DataFrame({"f1": [1.0], "qid": ["a"]}))
    with pytest.raises(DataError, match=r"qid must hold one integer per row \(2\)"):
        as_frame(np.eye(2), qid=[1])
    with pytest.raises(DataError, match=r"row 0 has True"):
        input_qid(pd.DataFrame({"f1": [1.0], "qid": [True]}))
    with pytest.raises(DataError, match=r"row 1 has 9007199254740992.0"):  # 2^53: ids may merge
        input_qid(pd.DataFrame({"f1": [1.0, 2.0], "qid": [1.0, 2.0**53]}))
    with pytest.raises(DataError, match="beyond the int64 range"):
        input_qid(pd.DataFrame({"f1": [1.0], "qid": np.array([2**63], dtype=np.uint64)}))


def test_input_matrix_errors():
    import pandas as pd

    from ltr.models.pyfunc import input_matrix

    with pytest.raises(DataError, match=r"missing feature column\(s\) \['f2'\]; expected columns f1 … f2"):
        input_matrix(pd.DataFrame({"f1": [1.0]}), 2)
    # called directly (not through MLflow), an array framed with integer columns is taken positionally
    assert input_matrix(pd.DataFrame(np.eye(2)), 2).tolist() == [[1.0, 0.0], [0.0, 1.0]]


# --- every model ltr logs takes the README's input: Tracker.log_ranker → mlflow.pyfunc.load_model ---

FAMILIES = {
    "lambdamart": {"name": "lambdamart", "params": {"n_trees": 8, "num_leaves": 7}},
    "lambdamart_xgb": {"name": "lambdamart_xgb", "params": {"n_trees": 8, "max_depth": 3}},
    "regression": {"name": "regression", "params": {"n_trees": 8, "num_leaves": 7}},
    "linear": {"name": "linear"},
    "feature": {"name": "feature"},
    "catboost": {"name": "catboost", "params": {"n_trees": 8}},
    "ensemble_blend": {
        "name": "ensemble_blend",
        "members": ["linear", "feature"],
        "params": {"n_restarts": 1, "max_steps": 5},
        "n_jobs": 1,
    },
}


@pytest.fixture(scope="module")
def tracked(store, tmp_path_factory):
    """A real ltr Tracker on the module's SQLite store, and small train / valid / test splits."""
    from ltr.tracking.writer import Tracker

    root = tmp_path_factory.mktemp("tracked")
    tracker = Tracker(mlflow.get_tracking_uri(), "pyfunc-families", artifact_root=root / "artifacts")
    splits = (
        generate(n_queries=30, seed=1, max_docs=15),
        generate(n_queries=12, seed=2, max_docs=15, qid_start=500),
        generate(n_queries=8, seed=3, max_docs=15, qid_start=900),
    )
    return tracker, splits


@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_logged_model_scores_the_readme_input(family, tracked):
    """README: ``mlflow.pyfunc.load_model("runs:/<id>/model").predict(as_frame(X, qid=qid))`` — on
    today's main the native LightGBM / XGBoost flavours reject the ``qid`` column."""
    from ltr.experiment.record import model_example
    from ltr.models.base import OneQueryWarning
    from ltr.models.pyfunc import as_frame

    tracker, (train, valid, test) = tracked
    if family == "catboost":
        pytest.importorskip("catboost")
    ranker = build_ranker(FAMILIES[family], seed=0, num_threads=1).fit(train, valid)
    with tracker.start(run_name=family):
        tracker.log_ranker(ranker, example=model_example(test))
    loaded = mlflow.pyfunc.load_model(f"runs:/{tracker.run_id}/model")
    expected = ranker.predict(test)
    perm = np.random.default_rng(4).permutation(test.n_docs)
    with_qid = np.asarray(loaded.predict(as_frame(test.dense()[perm], qid=test.qid[perm])), dtype=np.float64)
    np.testing.assert_allclose(with_qid, expected[perm], rtol=0, atol=1e-12)
    # without qid: a row-wise model scores the same; a per-query one scores one query's rows the same
    # and warns when it cannot tell the queries apart
    if not ranker.scores_per_query:
        np.testing.assert_array_equal(np.asarray(loaded.predict(as_frame(test.dense()))), expected)
    else:
        rows = slice(int(test.offsets[0]), int(test.offsets[1]))
        with pytest.warns(OneQueryWarning):  # one query's rows: right, but it cannot know that
            one = np.asarray(loaded.predict(as_frame(test.dense()[rows])))
        np.testing.assert_allclose(one, expected[rows], rtol=0, atol=1e-12)
        with pytest.warns(
            OneQueryWarning, match=r"ensemble_blend scores per query, but \d+ rows came without"
        ):
            loaded.predict(as_frame(test.dense()))
    # the logged example is the README input: features f1 … fn and the qid column
    example = loaded.input_example
    assert list(example.columns) == [f"f{j}" for j in range(1, test.n_features + 1)] + ["qid"]


@pytest.mark.parametrize(("family", "file"), [("lambdamart", "model.txt"), ("lambdamart_xgb", "model.ubj")])
def test_native_engine_file_stays_loadable(family, file, tracked):
    """The engine's own model file is inside the logged model and loads natively with equal scores."""
    tracker, (train, valid, test) = tracked
    ranker = build_ranker(FAMILIES[family], seed=0, num_threads=1).fit(train, valid)
    with tracker.start(run_name=f"{family}-native"):
        tracker.log_ranker(ranker)
    path = mlflow.artifacts.download_artifacts(f"runs:/{tracker.run_id}/model/artifacts/ranker/{file}")
    if family == "lambdamart":
        import lightgbm as lgb

        native = lgb.Booster(model_file=path).predict(test.dense())
    else:
        import xgboost as xgb

        native = xgb.Booster(model_file=path).inplace_predict(test.dense())
    np.testing.assert_allclose(native, ranker.predict(test), rtol=0, atol=1e-6)


# --- choices a model learned are printed and logged (params / metrics), not only in the manifest ----


def _printed_learned(out: str) -> dict[str, str]:
    """The ``learned …`` console lines read back: ``learned K = V`` and ``learned GROUP: a V, b V``."""
    printed = {}
    for line in out.splitlines():
        line = line.strip()
        if not line.startswith("learned "):
            continue
        body = line.removeprefix("learned ")
        if " = " in body:
            key, value = body.split(" = ", 1)
            printed[key] = value
        else:
            group, members = body.split(": ", 1)
            for member in members.split(", "):
                leaf, value = member.rsplit(" ", 1)
                printed[f"{group}.{leaf}"] = value
    return printed


@pytest.mark.parametrize(
    ("overrides", "params", "metric_prefix"),
    [
        (
            ["+model=feature"],
            {"learned.feature.id", "learned.feature.direction"},
            "learned.feature.selection.",
        ),
        (
            [
                "+model=ensemble_blend",
                "model.members=[linear,feature]",
                "model.params.n_restarts=1",
                "model.params.max_steps=5",
            ],
            {"learned.blend.weight.linear", "learned.blend.weight.feature"},
            "learned.blend.valid_score.",
        ),
    ],
)
def test_learned_choices_are_printed_and_logged(overrides, params, metric_prefix, tmp_path, capsys):
    from helpers import TINY_DATA, compose_config
    from mlflow.tracking import MlflowClient

    from ltr.train import run

    cfg = compose_config(
        [*overrides, *TINY_DATA, "num_threads=1", f"paths.root={tmp_path}", "tracking.log_model=false"]
    )
    run(cfg)
    out = capsys.readouterr().out
    client = MlflowClient(f"sqlite:///{tmp_path}/mlflow.db")
    (r,) = client.search_runs([client.get_experiment_by_name("ltr").experiment_id])
    assert params <= set(r.data.params)
    learned = {k: v for k, v in r.data.metrics.items() if k.startswith(metric_prefix)}
    assert learned
    printed = _printed_learned(out)
    for key in params:  # printed as logged (floats to 4 decimals)
        logged = r.data.params[key]
        shown = (
            f"{float(logged):.4f}"
            if "." in logged and logged.replace(".", "").lstrip("-").isdigit()
            else logged
        )
        assert printed[key.removeprefix("learned.")] == shown
    if "learned.feature.id" in params:
        # the chosen (1-based) feature and direction are the best candidate's
        best = max(learned, key=lambda k: (learned[k], -int(k.split(".")[-1][1:].split("_")[0])))
        assert (
            best.removeprefix(metric_prefix)
            == f"f{r.data.params['learned.feature.id']}_" + (r.data.params["learned.feature.direction"])
        )
    else:
        weights = [float(r.data.params[k]) for k in params]
        assert sum(abs(w) for w in weights) == pytest.approx(1.0)  # coordinate ascent's L1-normalised weights
        # the blend's validation score is never below its best member's
        assert (
            learned[metric_prefix + "blend"]
            >= max(v for k, v in learned.items() if k != metric_prefix + "blend") - 1e-12
        )
