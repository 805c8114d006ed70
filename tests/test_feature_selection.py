"""``data.features``: which columns a run uses (ltr.data.features), and models of a selection scoring full rows.

Expected ids are worked out by hand from the rule ``(include items, or all) − exclude items``; the
models are checked against LightGBM trained directly on hand-sliced columns (same parameters), against
onnxruntime on the exported file, and against LightGBM's own contributions.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers import TINY_DATA, quick_model, run_train_cli, store_client

from ltr.core.errors import ConfigError, DataError
from ltr.data.config import check_data_block
from ltr.data.dataset import FeatureSelection, RankingData
from ltr.data.features import id_ranges, read_names, resolve_features, select_features
from ltr.data.registry import load_dataset
from ltr.models import build_ranker
from ltr.models.registry import load_ranker

SYNTHETIC = {"kind": "synthetic", "n_queries": {"train": 60, "valid": 20, "test": 20}, "max_docs": 40}


@pytest.fixture
def names_file(tmp_path) -> Path:
    path = tmp_path / "names.txt"
    path.write_text("bm25\ntf\nidf\npagerank\nurl_len\nclicks\n")
    return path


# --- resolution rules, worked by hand -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        ({}, [1, 2, 3, 4, 5, 6]),  # nothing selected: every feature
        ({"include": [2, "4-5"]}, [2, 4, 5]),  # ids and a dash range
        ({"include": ["5:6", 1]}, [1, 5, 6]),  # a colon range; ascending whatever the order given
        ({"exclude": ["2-5"]}, [1, 6]),  # all but 2..5
        ({"include": ["1-4"], "exclude": [2]}, [1, 3, 4]),  # exclude wins over include
        (
            {"groups": {"text": ["1-3"], "link": [4, "6"]}, "include": ["text", "link"], "exclude": ["idf"]},
            [1, 2, 4, 6],
        ),
        ({"groups": {"text": ["bm25", "tf"]}, "exclude": ["text", "clicks"]}, [3, 4, 5]),  # names in a group
        ({"include": ["pagerank", "bm25"]}, [1, 4]),  # names from the names file
        ({"include": ["2-3", "3-4"]}, [2, 3, 4]),  # overlapping include items: a union
    ],
)
def test_resolution_keeps_the_hand_worked_ids(block, expected, names_file):
    assert resolve_features({"names": str(names_file), **block}, 6) == expected


def test_id_ranges_write_ids_as_the_config_takes_them():
    assert id_ranges([1, 2, 3, 5, 9, 10]) == "1-3, 5, 9-10"
    ids = [1, 2, 3, 5, 9, 10]
    assert resolve_features({"include": [part.strip() for part in id_ranges(ids).split(",")]}, 10) == ids


@pytest.mark.parametrize(
    ("block", "message"),
    [
        (
            {"include": ["bm52"]},
            "data.features.include[0]: unknown feature or group name 'bm52'; did you mean bm25?",
        ),
        (
            {"exclude": [1, "pagerang"]},
            "data.features.exclude[1]: unknown feature or group name 'pagerang'; did you mean pagerank?",
        ),
        (
            {"include": [7]},
            "data.features.include[0]: feature id 7 is outside 1..6 (the data has 6 features)",
        ),
        ({"include": [0]}, "data.features.include[0]: feature id 0 is outside 1..6"),
        ({"include": ["3-9"]}, "data.features.include[0]: feature id 9 is outside 1..6"),
        ({"exclude": ["5-2"]}, "data.features.exclude[0]: range '5-2' runs backwards; write 2-5"),
        (
            {"exclude": ["1-6"]},
            "data.features: no feature left (data.features.exclude removes all 6 features); keep at least one",
        ),
        (
            {"groups": {"text": ["1-3"]}, "include": ["text", 5], "exclude": ["tf", "1:3"]},
            "data.features.include[0]: every feature it selects ('text': 1, 2, 3) is removed by "
            "data.features.exclude[0] ('tf'), data.features.exclude[1] ('1:3'); exclude wins over include, "
            "so this item selects nothing",
        ),
        ({"include": [True]}, "data.features.include[0]: expected a feature id, range or name, got True"),
        ({"include": [1.5]}, "data.features.include[0]: expected a feature id, range or name, got 1.5"),
        ({"include": "1-3"}, "data.features.include: expected a list, got '1-3'"),
        ({"groups": {"bm25": [1]}}, "data.features.groups.bm25: 'bm25' is also a feature name"),
        ({"groups": {"g": []}}, "data.features.groups.g: expected a non-empty list"),
        ({"groups": {"g": ["g2"]}, "include": ["g"]}, "data.features.groups.g[0]: unknown feature name 'g2'"),
        ({"inclde": [1]}, "data.features: unknown key(s) inclde; accepted: names, groups, include, exclude"),
    ],
)
def test_bad_selections_fail_with_one_clear_message(block, message, names_file):
    with pytest.raises(ConfigError) as err:
        resolve_features({"names": str(names_file), **block}, 6)
    assert message in str(err.value)


def test_names_without_a_names_file_say_so():
    with pytest.raises(
        ConfigError, match=r"unknown feature or group name 'bm25' \(no data.features.names file"
    ):
        resolve_features({"include": ["bm25"]}, 6)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("bm25\n\ntf\n", ":2: an empty line; every line names a feature"),
        ("bm25\ntf idf\n", ":2: a feature name has no whitespace, got 'tf idf'"),
        ("bm25\n7\n", ":2: '7' reads as a feature id or range, not a name"),
        ("bm25\n1-3\n", ":2: '1-3' reads as a feature id or range"),
        ("bm25\ntf\nbm25\n", ":3: feature name 'bm25' again (first on line 1)"),
        ("", ": no feature names"),
    ],
)
def test_names_file_errors_name_file_and_line(tmp_path, text, message):
    path = tmp_path / "n.txt"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        read_names(path)
    assert str(err.value).startswith(str(path)) and message in str(err.value)


def test_names_file_missing_or_longer_than_the_data(tmp_path, names_file):
    with pytest.raises(ConfigError, match=r"data.features.names: file not found: .*nope.txt"):
        resolve_features({"names": str(tmp_path / "nope.txt"), "include": [1]}, 6)
    with pytest.raises(ConfigError, match=r"names 6 features but the data has 4"):
        resolve_features({"names": str(names_file), "include": [1]}, 4)


def test_the_data_block_declares_the_features_keys():
    checked = check_data_block({"kind": "svmlight", "train": "a.txt", "features": {"exclude": ["1-3"]}})
    assert checked["features"] == {"names": None, "groups": {}, "include": [], "exclude": ["1-3"]}
    with pytest.raises(ConfigError, match=r"^data.features: unknown key\(s\) exlude"):
        check_data_block({"kind": "mq2007", "features": {"exlude": [1]}})


# --- loading ----------------------------------------------------------------------------------------------


def test_every_split_is_cut_right_after_loading(tmp_path):
    cfg = {**SYNTHETIC, "dir": str(tmp_path / "syn")}
    full = load_dataset(cfg)
    sel = load_dataset({**cfg, "features": {"groups": {"noise": ["23-42"]}, "exclude": ["noise", 1]}})
    kept = [i for i in range(2, 47) if not 23 <= i <= 42]
    for split in ("train", "valid", "test"):
        assert sel[split].n_features == len(kept) == 25
        np.testing.assert_array_equal(sel[split].dense(), full[split].dense()[:, np.array(kept) - 1])
        assert sel[split].features == FeatureSelection(ids=tuple(kept), n_features=46)
        assert sel[split].subset(np.array([1, 0])).features == sel[split].features  # kept by subsets


def test_every_fold_of_a_cross_validation_is_cut_too(tmp_path):
    from helpers import write_letor

    write_letor(tmp_path / "all.txt", 12, 1)  # 10 features
    cfg = {
        "kind": "svmlight",
        "train": str(tmp_path / "all.txt"),
        "cache_dir": None,
        "cv": {"folds": 3, "fold": 2},
    }
    full = load_dataset(cfg)
    sel = load_dataset({**cfg, "features": {"include": ["2-4", 9]}})
    assert set(sel) == set(full) == {"train", "valid", "test"}
    for split in full:
        np.testing.assert_array_equal(sel[split].dense(), full[split].dense()[:, [1, 2, 3, 8]])
        assert sel[split].features.ids == (2, 3, 4, 9)


def test_a_bad_selection_fails_before_any_file_is_read(tmp_path):
    cfg = {"kind": "svmlight", "train": str(tmp_path / "missing.txt"), "n_features": 10}
    with pytest.raises(ConfigError, match=r"data.features.exclude\[0\]: feature id 11 is outside 1..10"):
        load_dataset({**cfg, "features": {"exclude": [11]}})


def test_splits_of_different_widths_are_refused():
    a = RankingData(X=np.ones((2, 3)), y=[1, 0], qid=[1, 1])
    b = RankingData(X=np.ones((2, 4)), y=[1, 0], qid=[1, 1])
    with pytest.raises(
        DataError, match=r"data.features: the splits have different widths \(train 3, test 4\)"
    ):
        select_features({"train": a, "test": b}, {"exclude": [1]})


def test_dask_backend_refuses_a_selection():
    from omegaconf import OmegaConf

    from ltr.experiment.schemas import validate_config

    cfg = OmegaConf.create(
        {"backend": {"name": "dask"}, "data": {**SYNTHETIC, "dir": "d", "features": {"exclude": [1]}}}
    )
    with pytest.raises(
        ConfigError, match=r"^data.features: a feature selection .* not supported with backend=dask"
    ):
        validate_config(cfg)
    cfg.data.features = {"groups": {"a": [1]}}  # groups alone select nothing: accepted
    validate_config(cfg)


# --- models of a selection take full rows ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def selected(tmp_path_factory):
    """Synthetic splits in full and cut to features 1-5, 20 and 44; a LightGBM lambdamart fit on the cut ones."""
    root = tmp_path_factory.mktemp("sel")
    cfg = {**SYNTHETIC, "dir": str(root / "syn")}
    full = load_dataset(cfg)
    sel = load_dataset({**cfg, "features": {"include": ["1-5", 20, 44]}})
    ranker = build_ranker({"name": "lambdamart", "params": {"n_trees": 15}}, seed=3, num_threads=1)
    ranker.fit(sel["train"])
    return root, full, sel, ranker


COLUMNS = np.array([0, 1, 2, 3, 4, 19, 43])  # features 1-5, 20, 44 (0-based)


def test_model_of_a_selection_scores_full_rows_like_lightgbm_on_hand_sliced_columns(selected):
    import lightgbm as lgb

    _, full, _, ranker = selected
    train = full["train"]
    booster = lgb.train(  # the peer: LightGBM itself on the columns cut by hand, the same parameters
        dict(ranker.engine_params_),
        lgb.Dataset(train.dense()[:, COLUMNS], train.y, group=train.group_sizes),
        num_boost_round=ranker.engine_params_["num_iterations"],
    )
    want = booster.predict(full["test"].dense()[:, COLUMNS])
    np.testing.assert_allclose(ranker.predict(full["test"]), want, rtol=0, atol=1e-12)  # full rows
    np.testing.assert_allclose(ranker.predict(full["test"].X), want, rtol=0, atol=1e-12)  # a bare matrix
    assert ranker.input_width_ == 46 and ranker.n_features_in_ == 7
    with pytest.raises(DataError, match="has 10 feature columns but the model was trained on 7"):
        ranker.predict(np.zeros((1, 10)))


def test_saved_model_records_the_selection_and_scores_full_rows_after_loading(selected, tmp_path):
    _, full, sel, ranker = selected
    ranker.save(tmp_path / "m")
    manifest = json.loads((tmp_path / "m" / "manifest.json").read_text())
    assert manifest["feature_selection"] == {"ids": [1, 2, 3, 4, 5, 20, 44], "n_features": 46, "names": None}
    assert manifest["n_features"] == 7
    loaded = load_ranker(tmp_path / "m")
    np.testing.assert_array_equal(loaded.predict(full["test"]), ranker.predict(full["test"]))
    np.testing.assert_array_equal(
        loaded.predict(sel["test"]), ranker.predict(full["test"])
    )  # kept columns too


def test_pyfunc_model_takes_the_full_feature_columns(selected, tmp_path):
    from types import SimpleNamespace

    from ltr.models.pyfunc import ARTIFACT, RankerModel, as_frame, signature

    _, full, _, ranker = selected
    ranker.save(tmp_path / "m")
    model = RankerModel()
    model.load_context(SimpleNamespace(artifacts={ARTIFACT: str(tmp_path / "m")}))
    test = full["test"]
    scores = model.predict(None, as_frame(test.dense(), qid=test.qid))
    np.testing.assert_allclose(scores, ranker.predict(test), rtol=0, atol=1e-12)
    assert len(signature(ranker.input_width_).inputs.input_names()) == 47  # f1 … f46 + qid


def test_onnx_export_indexes_the_original_feature_ids(selected, tmp_path):
    import onnxruntime as ort

    from ltr.export.__main__ import main as export_main
    from ltr.export.reading import from_ranker

    root, full, _, ranker = selected
    ranker.save(tmp_path / "m")
    test_file = root / "syn" / "test.txt"
    out = tmp_path / "model.onnx"
    # the export's own parity check scores the full-width file both ways
    assert (
        export_main([str(tmp_path / "m"), "--format", "onnx", "--out", str(out), "--check", str(test_file)])
        == 0
    )
    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    (inp,) = session.get_inputs()
    assert inp.shape[-1] == 46  # the engine feeds the whole vector
    got = session.run(None, {inp.name: full["test"].dense().astype(np.float32)})[0].reshape(-1)
    np.testing.assert_allclose(got, ranker.predict(full["test"]), rtol=1e-5, atol=1e-5)
    used = {int(f) for t in from_ranker(ranker).trees for f in t.feature if f >= 0}
    assert used <= set(COLUMNS.tolist()) and 0 in used  # original 0-based columns


def test_linear_export_puts_each_weight_at_its_original_id(selected):
    from ltr.export.reading import from_ranker

    _, full, sel, _ = selected
    linear = build_ranker({"name": "linear"}, seed=0, num_threads=1).fit(sel["train"])
    exported = from_ranker(linear)
    assert exported.weights.shape == (46,)
    np.testing.assert_array_equal(exported.weights[COLUMNS], linear.weights_)
    assert not np.delete(exported.weights, COLUMNS).any()
    by_hand = full["test"].dense().astype(np.float64) @ exported.weights + exported.bias  # numpy, full rows
    np.testing.assert_allclose(by_hand, linear.predict(full["test"]), rtol=1e-6, atol=1e-6)


def test_an_ensemble_of_a_selection_scores_full_rows_after_saving(selected, tmp_path):
    _, full, sel, _ = selected
    spec = {"name": "ensemble_mean", "members": ["lambdamart", "linear"], "params": {"normalization": "none"}}
    ensemble = build_ranker(spec, seed=0, num_threads=1).fit(sel["train"])
    ensemble.save(tmp_path / "e")
    loaded = load_ranker(tmp_path / "e")
    want = ensemble.predict(sel["test"])
    np.testing.assert_allclose(loaded.predict(full["test"]), want, rtol=0, atol=1e-12)
    members = [m.predict(sel["test"]) for m in ensemble.rankers_]  # the mean of the members, by hand
    np.testing.assert_allclose(want, np.mean(members, axis=0), rtol=1e-9, atol=1e-9)


def test_the_feature_baseline_speaks_in_the_files_ids(selected):
    from ltr.models.engines.feature import feature_scores

    _, full, sel, _ = selected
    one = build_ranker({"name": "feature", "params": {"feature": 20, "direction": "desc"}}).fit(sel["train"])
    assert one.learned_choices()[0] == {"feature.id": 20, "feature.direction": "desc"}
    want = feature_scores(full["test"].dense()[:, 19], "desc")  # feature 20 of the file, by hand
    np.testing.assert_array_equal(one.predict(full["test"]), want)
    best = build_ranker({"name": "feature", "params": {"feature": "best"}}).fit(sel["train"], sel["valid"])
    params, metrics = best.learned_choices()
    assert params["feature.id"] in (1, 2, 3, 4, 5, 20, 44)
    assert {k.split("_")[0] for k in metrics} == {f"feature.selection.f{i}" for i in (1, 2, 3, 4, 5, 20, 44)}
    with pytest.raises(
        ConfigError, match=r"model.params.feature=6 is not one of the features data.features keeps \(7 of 46"
    ):
        build_ranker({"name": "feature", "params": {"feature": 6}}).fit(sel["train"])


def test_native_export_of_a_selection_is_refused(selected, tmp_path, capsys):
    from ltr.export.__main__ import main as export_main

    _, _, _, ranker = selected
    ranker.save(tmp_path / "m")
    assert export_main([str(tmp_path / "m"), "--format", "lightgbm", "--out", str(tmp_path / "m.txt")]) == 2
    err = capsys.readouterr().err
    assert "--format lightgbm: the model was trained on a feature selection (7 of 46 features" in err
    assert "use --format onnx" in err.lower() or "Use --format onnx" in err


def test_contributions_of_full_rows_are_lightgbms_on_the_kept_columns(selected):
    from ltr.attribution.contributions import explain_ranker

    _, full, _, ranker = selected
    test = full["test"]
    c = explain_ranker(ranker, test)
    assert c.values.shape == (test.n_docs, 46)
    want = ranker.booster_.predict(test.dense()[:, COLUMNS], pred_contrib=True)  # LightGBM's own TreeSHAP
    np.testing.assert_allclose(c.values[:, COLUMNS], want[:, :-1], atol=1e-9)
    unused = np.setdiff1d(np.arange(46), COLUMNS)
    assert not c.values[:, unused].any()
    np.testing.assert_allclose(c.values.sum(axis=1) + c.bias, ranker.predict(test), atol=1e-9)


def test_importance_plot_names_the_files_feature_ids(selected, tmp_path, monkeypatch):
    from types import SimpleNamespace

    import ltr.experiment.record as record

    _, _, sel, ranker = selected
    plotted = {}

    def capture(importance, path, **kw):  # the values the plot would draw, bar j+1 = column j
        plotted["gain"] = importance
        return path

    monkeypatch.setattr(record, "plot_feature_importance", capture)
    tracker = SimpleNamespace(log_artifact=lambda *a: None)
    outcome = SimpleNamespace(history={}, best_iteration=None, ranker=ranker)
    record.log_run_plots(tracker, outcome, sel["train"].n_features, tmp_path, "m")
    gain = plotted["gain"]
    assert gain.shape == (46,)  # bar f{j} is feature j of the file
    np.testing.assert_allclose(gain[COLUMNS], ranker.booster_.feature_importance(importance_type="gain"))
    assert not np.delete(gain, COLUMNS).any()


def test_data_summary_says_which_features_were_kept(selected):
    from io import StringIO

    from rich.console import Console

    from ltr.experiment.console import print_feature_selection

    _, _, sel, _ = selected
    out = StringIO()
    print_feature_selection(Console(file=out, width=200), sel)
    assert out.getvalue().strip() == "features: 7 of 46 kept (data.features): 1-5, 20, 44"


# --- a real training run: python -m ltr.train, then ltr.evaluate --model on the original file ----------------


@pytest.mark.slow  # a real ltr.train run with MLflow logging (~15 s)
def test_train_cli_with_a_selection_then_evaluate_the_model_on_the_original_file(tmp_path, capsys):
    from ltr.evaluate import main as evaluate_main

    args = ["+model=lambdamart", *TINY_DATA, *quick_model(20), "num_threads=1",
            "+data.features.groups.noise=[23-42]", "data.features.exclude=[noise,1]"]  # fmt: skip
    proc = run_train_cli(args, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "features: 25 of 46 kept (data.features): 2-22, 43-46" in proc.stdout
    client = store_client(tmp_path)
    (run,) = client.search_runs([client.get_experiment_by_name("ltr").experiment_id])
    uri = f"sqlite:///{tmp_path.resolve()}/mlflow.db"
    test_file = tmp_path / "data" / "synthetic" / "test.txt"
    assert " 46:" in test_file.read_text().split("\n", 1)[0]  # the original, full-width file
    code = evaluate_main(["--data", str(test_file), "--model", f"runs:/{run.info.run_id}/model",
                          "--tracking-uri", uri, "-m", "ndcg@10", "--json"])  # fmt: skip
    out = capsys.readouterr()
    assert code == 0, out.err
    assert json.loads(out.out)["mean"]["ndcg@10"] == pytest.approx(
        run.data.metrics["test/ndcg_at_10"], abs=1e-12
    )


# --- with data.normalize: the columns first, then the normaliser fitted on them ------------------------------


def test_selection_then_zscore_scores_full_rows_like_lightgbm_on_hand_normalised_columns(selected, tmp_path):
    import lightgbm as lgb

    from ltr.experiment.normalization import normalize_run_splits
    from ltr.export.reading import raw_feature_model
    from ltr.models.normalized import predict_raw

    _, full, sel, _ = selected
    splits, norm = normalize_run_splits(sel, "zscore")  # what the pipeline does after loading
    ranker = build_ranker({"name": "lambdamart", "params": {"n_trees": 15}}, seed=3, num_threads=1)
    ranker.fit(splits["train"])
    ranker.normalize_ = norm
    assert ranker.feature_selection_ is not None  # normalising kept the split's selection
    kept = full["train"].dense()[:, COLUMNS].astype(np.float64)
    mean, std = kept.mean(axis=0), kept.std(axis=0)  # numpy by hand: population std of train's kept columns
    hand = lambda d: ((d.dense()[:, COLUMNS] - mean) / std).astype(np.float32)  # noqa: E731
    booster = lgb.train(
        dict(ranker.engine_params_),
        lgb.Dataset(hand(full["train"]), full["train"].y, group=full["train"].group_sizes),
        num_boost_round=ranker.engine_params_["num_iterations"],
    )
    want = booster.predict(hand(full["test"]))
    np.testing.assert_allclose(predict_raw(ranker, full["test"]), want, rtol=0, atol=1e-6)  # full raw rows
    ranker.save(tmp_path / "m")
    loaded = load_ranker(tmp_path / "m")
    np.testing.assert_allclose(predict_raw(loaded, full["test"].X), want, rtol=0, atol=1e-6)  # a bare matrix
    exported = raw_feature_model(loaded)  # normaliser folded into the kept-column model, then widened
    assert exported.n_features == 46
    np.testing.assert_allclose(exported.predict(full["test"].dense()), want, rtol=1e-5, atol=1e-5)


def test_a_bad_names_file_fails_even_when_nothing_is_selected(tmp_path):
    """A names file is checked when the data loads, not only when a name is looked up."""
    with pytest.raises(ConfigError, match="data.features.names: file not found"):
        load_dataset({**SYNTHETIC, "features": {"names": str(tmp_path / "missing.txt")}})
    (tmp_path / "dup.txt").write_text("a\nb\na\n")
    with pytest.raises(ConfigError, match="dup.txt:3: feature name 'a' again"):
        load_dataset({**SYNTHETIC, "features": {"names": str(tmp_path / "dup.txt")}})
    (tmp_path / "bom.txt").write_text("\ufeffa\nb\n", encoding="utf-8")
    from ltr.data.features import read_names

    assert read_names(tmp_path / "bom.txt") == ["a", "b"]
