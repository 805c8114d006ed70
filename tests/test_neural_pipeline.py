"""The neural rankers in the pipeline: ``python -m ltr.train +model=neural_*`` into a real MLflow store,
the logged model through MLflow's pyfunc loader (with and without ``qid``) and ``ltr.evaluate --model``,
an ensemble with a GBDT, and every bad config as one ``error:`` line before any training."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import TINY_DATA, run_train_cli, store_client, train_main_in_process

pytest.importorskip("jax", reason="the neural extra (jax, optax, rax) is not installed")

from ltr.data.synthetic import generate  # noqa: E402
from ltr.models import build_ranker, load_ranker  # noqa: E402
from ltr.tracking.store import process_uris  # noqa: E402

SMALL = [
    "model.params.n_epochs=3",
    "model.params.hidden_units=[8,4]",
    "model.params.batch_size=8",
    "num_threads=1",
]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["+model=neural_softmax", "model.params.loss=ranknet"],
         "error: model.params.loss: expected one of ['softmax', 'listmle', 'approxndcg', 'pairwise', 'lambdaloss'], got 'ranknet'"),
        (["+model=neural_listmle", "model.params.max_list_size=0"],
         "error: model.params.max_list_size: must be in [1, inf], got 0"),
        (["+model=neural_attention", "model.params.hidden_units=[10]", "model.params.attention_heads=4"],
         "error: model.params.attention_heads: 4 heads must divide the attention width, the last of hidden_units (10)"),
        (["+model=neural_pairwise", "model.params.batch_size=0"], "error: model.params.batch_size: must be in [1, inf], got 0"),
    ],
)  # fmt: skip
def test_a_bad_config_is_one_error_line_before_any_data_or_training(
    overrides, message, tmp_path, monkeypatch, capsys
):
    code = train_main_in_process([*overrides, *TINY_DATA, "tracking=none"], tmp_path, monkeypatch)
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.strip().splitlines() == [message]
    assert not (tmp_path / "data").exists()  # refused before the synthetic data was even generated


@pytest.mark.parametrize("module", ["jax", "optax", "rax"])
def test_without_the_neural_extra_the_error_names_the_install(module, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, module, None)  # as if the package were not installed
    code = train_main_in_process(
        ["+model=neural_softmax", *TINY_DATA, "tracking=none"], tmp_path, monkeypatch
    )
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.strip().splitlines() == [
        f"error: model neural_softmax needs the optional package {module} (extra 'neural'): "
        "pip install 'ltr-workbench[neural]' (in this checkout: uv sync --extra neural)"
    ]
    assert not (tmp_path / "data").exists()


def test_a_blend_of_lambdamart_and_a_neural_ranker_saves_and_scores(tmp_path):
    """Inside an ensemble: the neural member is trained, weighted, saved and loaded like any member."""
    train = generate(40, seed=1, max_docs=30)
    valid = generate(15, seed=2, max_docs=30, qid_start=900)
    test = generate(15, seed=3, max_docs=30, qid_start=2000)
    cfg = {
        "name": "ensemble_blend",
        "members": [
            {"model": "lambdamart", "params": {"n_trees": 10, "num_leaves": 7}},
            {"model": "neural_softmax", "params": {"n_epochs": 3, "hidden_units": [8, 4], "batch_size": 8}},
        ],
        "params": {"n_restarts": 1, "max_steps": 5},
        "n_jobs": 1,
    }
    blend = build_ranker(cfg, seed=0, num_threads=1).fit(train, valid)
    assert [type(m).__name__ for m in blend.rankers_] == ["LambdaMART", "NeuralSoftmax"]
    blend.save(tmp_path / "blend")
    assert len(list((tmp_path / "blend").rglob("model.npz"))) == 1
    loaded = load_ranker(tmp_path / "blend")
    np.testing.assert_array_equal(loaded.predict(test), blend.predict(test))
    np.testing.assert_array_equal(loaded.rankers_[1].predict(test), blend.rankers_[1].predict(test))


@pytest.mark.parametrize("name", ["neural_softmax", "neural_attention"])
def test_explain_refuses_a_neural_ranker_with_the_reason(name):
    from ltr.attribution.contributions import NotExplainable, check_explainable

    ranker = build_ranker({"name": name}, seed=0, num_threads=1)
    with pytest.raises(
        NotExplainable,
        match=rf"the model \({name}\) cannot be explained exactly: a neural network's score is no exact sum",
    ):
        check_explainable(ranker)


@pytest.mark.slow  # three neural trials through the Optuna sweeper: ~30 s
def test_a_neural_search_runs_its_trials_with_distinct_proposals(tmp_path, monkeypatch, capsys):
    """hparams_search=neural_optuna: every trial trains with its proposed learning rate, weight decay,
    dropout, batch size and list cap, and the study records one validation value per trial."""
    import optuna

    db = tmp_path / "optuna.db"
    args = ["-m", "+model=neural_softmax", "hparams_search=neural_optuna", *TINY_DATA, *SMALL[:2], "tracking=none",
            "num_threads=1", f"hydra.sweeper.storage=sqlite:///{db}", "hydra.sweeper.study_name=neural",
            "hydra.sweeper.n_trials=3"]  # fmt: skip
    code = train_main_in_process(args, tmp_path, monkeypatch)
    assert code == 0, capsys.readouterr().err[-3000:]
    trials = optuna.load_study(study_name="neural", storage=f"sqlite:///{db}").trials
    assert [t.state.name for t in trials] == ["COMPLETE"] * 3
    assert len({t.params["model.params.learning_rate"] for t in trials}) == 3
    searched = {"learning_rate", "weight_decay", "dropout", "batch_size", "max_list_size"}
    assert {f"model.params.{key}" for key in searched} == set(trials[0].params)
    assert all(0.0 <= t.value <= 1.0 for t in trials)


# --- a real run: python -m ltr.train into a real SQLite MLflow store -----------------------------------------


@pytest.fixture(scope="module")
def logged(tmp_path_factory):
    root = tmp_path_factory.mktemp("neural")
    proc = run_train_cli(["+model=neural_attention", *TINY_DATA, *SMALL], root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    client = store_client(root)
    (run,) = client.search_runs([client.get_experiment_by_name("ltr").experiment_id])
    return root, run, f"sqlite:///{root.resolve()}/mlflow.db"


@pytest.mark.slow  # a real training process (JAX start-up and compilation) and MLflow model loading: ~40 s
def test_the_logged_neural_model_scores_through_pyfunc_and_ltr_evaluate(logged, tmp_path, capsys):
    import json

    import mlflow
    from sklearn.datasets import load_svmlight_file

    from ltr.evaluate import main
    from ltr.models.base import OneQueryWarning
    from ltr.models.pyfunc import as_frame

    root, run, uri = logged
    assert run.data.params["model.name"] == "neural_attention"
    assert {"curve/valid/ndcg_at_10", "curve/train/softmax_loss", "test/ndcg_at_10"} <= set(run.data.metrics)
    test_file = root / "data" / "synthetic" / "test.txt"
    source = f"runs:/{run.info.run_id}/model"
    args = ["--data", str(test_file), "--model", source, "--tracking-uri", uri, "-m", "ndcg@10"]
    assert main([*args, "--json", "--write-scores", str(tmp_path / "s.txt")]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["mean"]["ndcg@10"] == pytest.approx(run.data.metrics["test/ndcg_at_10"], abs=1e-6)
    scores = np.loadtxt(tmp_path / "s.txt")
    with process_uris(uri):
        local = Path(mlflow.artifacts.download_artifacts(artifact_uri=source, dst_path=str(tmp_path / "m")))
    X, _, qid = load_svmlight_file(str(test_file), n_features=46, query_id=True)
    pyfunc = mlflow.pyfunc.load_model(str(local))
    with_qid = np.asarray(pyfunc.predict(as_frame(X.toarray(), qid=qid)), dtype=np.float64)
    np.testing.assert_allclose(with_qid, scores, rtol=1e-6, atol=1e-6)
    # without qid the attention scorer sees one list: one query's rows alone give that query's scores ...
    first = qid == qid[0]
    with pytest.warns(OneQueryWarning):
        alone = np.asarray(pyfunc.predict(as_frame(X.toarray()[first])), dtype=np.float64)
    np.testing.assert_allclose(alone, scores[first], rtol=1e-6, atol=1e-6)
    # ... and every query's rows together, without qid, are one list: other scores, with the warning
    with pytest.warns(OneQueryWarning, match="neural_attention scores per query"):
        mixed = np.asarray(pyfunc.predict(as_frame(X.toarray())), dtype=np.float64)
    assert not np.allclose(mixed, scores)
