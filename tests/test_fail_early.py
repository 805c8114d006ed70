"""Issue 11 item 6: a bad config fails before the long work, in one line naming the fix in the user's spelling.

Each class is checked where the user meets it: in-process with spies proving no data was read (or no
model fitted), and as real processes (exit code 2, one ``error:`` line, never a traceback; a closed
pipe; Ctrl-C during training into a real SQLite MLflow store).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import (
    PROJECT_ROOT,
    TINY_DATA,
    cli_env,
    command_in_process,
    compose_config,
    quick_model,
    run_train_cli,
    store_client,
    train_main_in_process,
)

import ltr.experiment.record
from ltr.core.errors import ConfigError, DataError, LtrError
from ltr.data.svmlight import load_svmlight
from ltr.train import execute

TINY = [*TINY_DATA, *quick_model(20), "num_threads=1", "tracking=none"]


def write_file(path: Path, labels: list[int], *, zero_based: bool = False, n_queries: int = 6) -> Path:
    """LETOR text: ``n_queries`` queries with one document per label, 3 features (index 0 when ``zero_based``)."""
    first = 0 if zero_based else 1
    lines = [
        f"{label} qid:{q + 1} " + " ".join(f"{first + f}:{(q * 5 + d * 3 + f) % 7 / 7:.3f}" for f in range(3))
        for q in range(n_queries)
        for d, label in enumerate(labels)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def spies(monkeypatch):
    """Record whether the data was loaded and whether a run was trained (neither may happen on a bad config)."""
    calls = {"load": 0, "train": 0}
    real_load, real_train = ltr.experiment.record.connect_and_load, ltr.experiment.record.train_and_record

    def load(*args, **kwargs):
        calls["load"] += 1
        return real_load(*args, **kwargs)

    def train(*args, **kwargs):
        calls["train"] += 1
        return real_train(*args, **kwargs)

    monkeypatch.setattr(ltr.experiment.record, "connect_and_load", load)
    monkeypatch.setattr(ltr.experiment.record, "train_and_record", train)
    return calls


# --- config-level errors: before the data is read ------------------------------------------------------

BEFORE_DATA = [
    # eval.preset=trec breaks ties by docno: today it trained fully, then failed needing docno=
    (["eval.preset=trec"], ["eval.conventions.ties=average", "data.parse.docid=true", "eval.preset=trec"]),
    (["eval.preset=gdeval"], ["eval.conventions.ties=average"]),
    (["seed=abc"], ["seed: expected an integer, got 'abc'"]),
    (["num_threads=-1"], ["num_threads: must be in [0"]),
    (["eval.metrics=[ndcg@10,errr@5]"], ["eval.metrics: unknown metric 'errr@5'"]),
    # the synthetic generator's labels are 0..4: ERR's top grade below that cannot work
    (["eval.conventions.err_gmax=2"], ["set eval.conventions.err_gmax=4", "data.label_range=[0, 4]"]),
    (
        ["data.label_range=[0,6]", "eval.preset=lightgbm"],
        ["set eval.conventions.err_gmax=6", "eval.preset=lightgbm"],
    ),
    (["eval.conventions.gain=[0,1,3]"], ["eval.conventions.gain", "labels 0..2", "0..4"]),
    (["eval.curve.metric=ndcp"], ["eval.curve.metric: unknown metric"]),
    (["eval.splits=[tset]"], ["eval.splits: unknown split(s) tset; splits are train, valid, test"]),
    # labels 0..4 and a threshold of 5: every query of map would silently have no relevant document
    (["eval.conventions.rel_threshold=5"], ["set eval.conventions.rel_threshold=1", "map"]),
    (["model.params.num_leaves=1"], ["model.params.num_leaves"]),
    # a typo in LightGBM's own parameters trained with the default, silently; LightGBM's spelling under params
    (["+model.engine_params.min_gain_to_splitt=0.5"], ["did you mean min_gain_to_split?"]),
    (["+model.params.num_iterations=50"], ["model.params.num_iterations is LightGBM's name for n_trees"]),
    # the synthetic generator's settings, named as the config spells them (numpy refuses negative seeds)
    (["data.seed=-1"], ["data.seed: must be in [0, inf], got -1"]),
    (["data.p_empty=1.0"], ["data.p_empty: must be in [0.0, 1.0), got 1.0"]),
]


@pytest.mark.parametrize(
    ("overrides", "expected"), BEFORE_DATA, ids=lambda v: " ".join(v) if isinstance(v, list) else None
)
def test_config_errors_fail_before_the_data_is_read(tmp_path, spies, overrides, expected):
    cfg = compose_config(["+model=lambdamart", *TINY, f"paths.root={tmp_path}", *overrides])
    with pytest.raises(ConfigError) as info:
        execute(cfg)
    for text in expected:
        assert text in str(info.value)
    assert spies == {"load": 0, "train": 0}


#: every engine's engine_params are checked against its own parameter list; its spelling under params names ltr's
ENGINE_PARAMS = [
    (
        "lambdamart_xgb",
        "+model.engine_params.max_bni=64",
        "model.engine_params.max_bni is not an XGBoost parameter with booster=gbtree, tree_method=hist, "
        "objective=rank:ndcg; did you mean max_bin?",
    ),
    (
        "lambdamart_xgb",
        "+model.params.reg_alpha=0.5",
        "model.params.reg_alpha is XGBoost's name for lambda_l1: use model.params.lambda_l1",
    ),
    (
        "catboost",
        "+model.engine_params.l2_leaf_regg=5",
        "model.engine_params.l2_leaf_regg is not a CatBoost parameter; did you mean l2_leaf_reg?",
    ),
    (
        "catboost",
        "+model.params.n_estimators=50",
        "model.params.n_estimators is CatBoost's name for n_trees: use model.params.n_trees",
    ),
    (
        "linear",
        "+model.engine_params.positve=true",
        "model.engine_params.positve is not a parameter of scikit-learn's Ridge; did you mean positive?",
    ),
    (
        "random_forest",
        "+model.engine_params.ccp_alpah=0.01",
        "model.engine_params.ccp_alpah is not a parameter of scikit-learn's RandomForestRegressor; "
        "did you mean ccp_alpha?",
    ),
]


@pytest.mark.parametrize(("model", "override", "expected"), ENGINE_PARAMS, ids=lambda v: v)
def test_every_engines_parameters_fail_before_the_data_is_read(tmp_path, spies, model, override, expected):
    if model == "catboost":
        pytest.importorskip("catboost")
    cfg = compose_config(
        [f"+model={model}", *TINY_DATA, "num_threads=1", "tracking=none", f"paths.root={tmp_path}", override]
    )
    with pytest.raises(ConfigError) as info:
        execute(cfg)
    assert expected in str(info.value)
    assert spies == {"load": 0, "train": 0}


def test_labels_above_err_gmax_fail_after_loading_before_training(tmp_path, spies):
    """Labels 0..6 in the user's file, lightgbm's ERR top grade 4: known once the file is read, before the fit."""
    train = write_file(tmp_path / "train.txt", [0, 3, 6, 1])
    test = write_file(tmp_path / "test.txt", [0, 1, 2, 4])
    data = [
        "data=svmlight",
        f"data.train={train}",
        f"data.valid={test}",
        f"data.test={test}",
        "data.n_features=3",
    ]
    cfg = compose_config(
        ["+model=lambdamart", *TINY[4:], f"paths.root={tmp_path}", *data, "eval.preset=lightgbm"]
    )
    with pytest.raises(ConfigError) as info:
        execute(cfg)
    message = str(info.value)
    assert "the train labels go up to 6" in message
    assert "above ERR's top grade 4 (the value of eval.preset=lightgbm)" in message
    assert message.endswith("set eval.conventions.err_gmax=6")
    assert spies == {"load": 1, "train": 0}


def test_the_ltr_preset_takes_gmax_6_from_those_labels_and_trains(tmp_path, spies, capsys):
    train = write_file(tmp_path / "train.txt", [0, 3, 6, 1])
    data = ["data=svmlight", f"data.train={train}", f"data.test={train}", "data.n_features=3"]
    cfg = compose_config(["+model=linear", "num_threads=1", "tracking=none", f"paths.root={tmp_path}", *data])
    recorded = execute(cfg)
    assert recorded.outcome.conventions.resolved.err_gmax == 6
    assert "ERR: gmax=6 from the training labels" in capsys.readouterr().out
    assert spies == {"load": 1, "train": 1}


def test_the_trec_preset_runs_on_files_with_document_ids(tmp_path, spies):
    """What eval.preset=trec needs (docids for its docno tie breaking) is loaded and used: the run completes."""
    train = write_file(tmp_path / "train.txt", [0, 1, 2, 1])
    lines = train.read_text().splitlines()
    train.write_text("".join(f"{line} # docid = D{i:03d}\n" for i, line in enumerate(lines)))
    data = [
        "data=svmlight",
        f"data.train={train}",
        f"data.test={train}",
        "data.n_features=3",
        "data.parse.docid=true",
    ]
    cfg = compose_config(["+model=linear", "num_threads=1", "tracking=none", f"paths.root={tmp_path}", *data])
    cfg.eval.preset = "trec"
    recorded = execute(cfg)
    assert recorded.outcome.conventions.resolved.ties == "docno_desc"
    assert 0 < recorded.outcome.results["test"].mean("ndcg@10") <= 1
    assert spies == {"load": 1, "train": 1}


# --- the spelling follows the interface ----------------------------------------------------------------


def test_a_parse_option_is_spelled_as_each_interface_spells_it(tmp_path, monkeypatch, capsys):
    zero = write_file(tmp_path / "zero.txt", [0, 1, 2], zero_based=True)
    # Python: the keyword
    with pytest.raises(DataError, match=r"load with zero_based=True if the file is 0-based"):
        load_svmlight(zero)
    # python -m ltr.data: the flag (its main in-process; the real process below)
    assert command_in_process("ltr.data", ["info", str(zero)]) == 2
    err = capsys.readouterr().err
    assert "load with --zero-based if the file is 0-based" in err
    assert "zero_based" not in err and "Traceback" not in err
    # the Hydra command line: the override (top level for your own files), from a real process
    data = ["data=svmlight", f"data.train={zero}", "data.n_features=3"]
    proc = run_train_cli(["+model=linear", "tracking=none", *data], tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "load with data.zero_based=true if the file is 0-based" in proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


def test_ltr_data_flags_exist_for_every_option_its_messages_name(tmp_path, capsys):
    """A label 1.5 / a negative label: the message names a flag the command really has, and it works
    (``python -m ltr.data``'s main in-process: argparse refuses a flag it lacks with exit 2)."""
    path = tmp_path / "real.txt"
    path.write_text("1.5 qid:1 1:1\n-1 qid:1 1:0\n")
    base = ["info", str(path)]
    assert command_in_process("ltr.data", base) == 2
    assert "load with --no-integer-labels to accept" in capsys.readouterr().err
    assert command_in_process("ltr.data", [*base, "--no-integer-labels"]) == 2
    assert "load with --allow-negative-labels to accept" in capsys.readouterr().err
    assert command_in_process("ltr.data", [*base, "--no-integer-labels", "--allow-negative-labels"]) == 0
    third = capsys.readouterr()
    assert "docs 2" in third.out, third.err
    # a checker's message about one option names the flag too
    assert command_in_process("ltr.data", [*base, "--label-range", "4", "0"]) == 2
    bad = capsys.readouterr().err
    assert bad.startswith("error: --label-range: must be (low, high) with low <= high"), bad


def test_ltr_data_info_synthetic_says_what_to_do_then_reads_the_generated_files(
    tmp_path, monkeypatch, capsys
):
    """``python -m ltr.data info`` (its main in-process, run from ``tmp_path``)."""
    monkeypatch.chdir(tmp_path)
    cmd = ["info", "synthetic", "--data-dir", str(tmp_path / "data")]
    assert command_in_process("ltr.data", cmd) == 2
    before = capsys.readouterr().err
    assert "no such file" not in before
    assert "python -m ltr.train" in before and "generates them on first use" in before
    command_in_process("ltr.data", ["info", "mslr"])
    unknown = capsys.readouterr().err
    assert "nor a dataset name" in unknown and "mslr_web10k" in unknown
    folder = tmp_path / "data" / "synthetic"
    folder.mkdir(parents=True)
    for name in ("train", "vali", "test"):
        write_file(folder / f"{name}.txt", [0, 1, 2])
    assert command_in_process("ltr.data", cmd) == 0
    after = capsys.readouterr()
    assert after.out.count("queries 6") == 3, after.err


# --- the command line: exit 2, one line, no traceback --------------------------------------------------

CLI_CASES = [
    # Hydra's own composition errors (today: a multi-line dump and exit 1)
    (["+model=nonexist"], "model=nonexist: no such model config; available: catboost"),
    (["model.params.num_leafs=3"], "model.params.num_leafs: unknown key; model.params accepts: n_trees"),
    (["model.params.n_trees=[1"], "cannot parse the override 'model.params.n_trees=[1'"),
    (["model.params.n_trees=abc"], "model.params.n_trees: Value 'abc'"),
    (["data=mq2008", "data.n_queries.train=5"], "data.n_queries: unknown key; data accepts: name"),
    (["eval.conventions.err_gmx=2"], "eval.conventions.err_gmx: unknown key; eval.conventions accepts: gain"),
    # ltr's checks
    (["seed=abc"], "seed: expected an integer, got 'abc'"),
    (["eval.preset=trec"], "set eval.conventions.ties=average"),
    (["data.n_queries.train=0"], "data.n_queries.train: must be in [1, inf], got 0"),
    (["data.max_docs=3"], "data.max_docs: must be >= data.min_docs=5, got 3"),
]


@pytest.mark.parametrize(
    ("overrides", "expected"), CLI_CASES, ids=lambda v: " ".join(v) if isinstance(v, list) else None
)
def test_cli_user_errors_exit_2_with_one_line(tmp_path, overrides, expected, monkeypatch, capsys):
    """The command's ``main`` in-process (what ``python -m ltr.train`` runs): exit code 2, one ``error:``
    line, nothing trained; a traceback could not be printed here without an exception escaping, which
    fails the test. Real processes: :func:`test_cli_user_errors_in_a_real_process_exit_2_with_one_line`."""
    code = train_main_in_process(
        ["+model=lambdamart", *TINY_DATA, "tracking=none", *overrides], tmp_path, monkeypatch
    )
    out, err = capsys.readouterr()
    assert code == 2, err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert expected in err
    assert "Traceback" not in err and "HYDRA_FULL_ERROR" not in err
    assert "Training" not in out  # nothing was trained


@pytest.mark.parametrize(("overrides", "expected"), [CLI_CASES[0], CLI_CASES[6]], ids=["hydra", "ltr"])
def test_cli_user_errors_in_a_real_process_exit_2_with_one_line(tmp_path, overrides, expected):
    """One of Hydra's composition errors and one of ltr's checks from a real ``python -m ltr.train``: the
    process's exit status 2 and its whole stderr one line, no traceback from the interpreter."""
    proc = run_train_cli(
        ["+model=lambdamart", *TINY_DATA, "tracking=none", *overrides], tmp_path, timeout=300
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("error: ") and proc.stderr.count("\n") == 1, proc.stderr
    assert expected in proc.stderr
    assert "Traceback" not in proc.stderr and "HYDRA_FULL_ERROR" not in proc.stderr
    assert "Training" not in proc.stdout  # nothing was trained


def test_hydra_full_error_set_by_the_user_keeps_the_traceback(tmp_path):
    env = {**cli_env(tmp_path), "HYDRA_FULL_ERROR": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "ltr.train", "+model=nonexist"],
        cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode != 0 and "Traceback" in proc.stderr


def test_compare_checks_the_experiment_metrics_before_anything_runs(tmp_path, spies):
    from ltr.compare import main

    exp = tmp_path / "exp.yaml"
    exp.write_text("systems:\n  a: {model: linear}\n  b: {model: lambdamart}\nmetrics: [ndcg@10, nddcg@5]\n")
    with pytest.raises(LtrError) as info:
        from ltr.experiment.experiments import load_experiment

        load_experiment(str(exp))
    assert f"{exp}: metrics[1]: unknown metric 'nddcg@5'" in str(info.value)
    assert main([f"experiment={exp}", "tracking=none", f"paths.root={tmp_path}"]) == 2
    assert spies == {"load": 0, "train": 0}


def test_compare_checks_every_system_against_the_labels_before_the_first_trains(tmp_path, spies):
    from ltr.compare import main

    train = write_file(tmp_path / "train.txt", [0, 3, 6, 1])
    exp = tmp_path / "exp.yaml"
    exp.write_text(
        "systems:\n  a: {model: linear}\n  b: {model: linear, overrides: [eval.preset=xgboost]}\n"
        f"overrides: [data=svmlight, 'data.train={train}', 'data.test={train}', data.n_features=3]\n"
    )
    assert main([f"experiment={exp}", "tracking=none", f"paths.root={tmp_path}"]) == 2
    assert spies == {"load": 1, "train": 0}


# --- closed pipes and Ctrl-C ---------------------------------------------------------------------------


def piped_to_head(cmd: list[str], cwd: Path) -> tuple[int, str]:
    """``cmd | head -1`` with a real pipe whose reader, ``head``, has already printed its line and exited
    (deterministic: whether head exits before or after a given write is otherwise a race).
    Returns (the command's exit code, its stderr)."""
    read_end, write_end = os.pipe()
    os.write(write_end, b"an earlier line\n")
    head = subprocess.Popen(["head", "-1"], stdin=read_end, stdout=subprocess.DEVNULL)
    os.close(read_end)
    head.wait(timeout=60)  # the only reader is gone: every write to the pipe now fails with EPIPE
    env = {k: v for k, v in cli_env(cwd).items() if k != "PYTHONUNBUFFERED"}  # buffered, as for a user
    producer = subprocess.Popen(cmd, cwd=cwd, stdout=write_end, stderr=subprocess.PIPE, env=env)
    os.close(write_end)
    _, err = producer.communicate(timeout=120)
    return producer.returncode, err.decode()


def test_evaluate_piped_to_head_exits_quietly(tmp_path):
    qrels, run = tmp_path / "qrels", tmp_path / "run"
    qrels.write_text("".join(f"{t} 0 d{d} {d % 3}\n" for t in range(50) for d in range(3)))
    run.write_text("".join(f"{t} Q0 d{d} {d + 1} {3 - d} x\n" for t in range(50) for d in range(3)))
    cmd = [sys.executable, "-m", "ltr.evaluate", "--qrels", str(qrels), "--run", str(run), "-q"]
    code, err = piped_to_head(cmd, tmp_path)
    assert err == "" and code == 141


def test_data_info_piped_to_head_exits_quietly(tmp_path):
    path = write_file(tmp_path / "f.txt", [0, 1, 2])
    code, err = piped_to_head([sys.executable, "-m", "ltr.data", "info", str(path)], tmp_path)
    assert err == "" and code == 141


@pytest.mark.slow  # ~30 s: a fresh store, tiny data generated, a second of boosting
def test_ctrl_c_during_training_marks_the_run_killed_in_one_line(tmp_path):
    """A real SIGINT while LightGBM trains: exit 130, one line naming the run, the MLflow run KILLED."""
    args = [
        "+model=lambdamart",
        *TINY_DATA,
        "model.params.n_trees=100000",
        "model.early_stopping.patience=100000",
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "ltr.train", *args, "num_threads=1"],
        cwd=PROJECT_ROOT, env=cli_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    seen = ""
    while "Training" not in seen:
        line = proc.stdout.readline()
        assert line, f"the run ended before training: {proc.stderr.read()}"
        seen += line
    time.sleep(2.0)  # inside the boosting rounds
    assert proc.poll() is None
    os.kill(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    runs = store_client(tmp_path).search_runs(
        [e.experiment_id for e in store_client(tmp_path).search_experiments()]
    )
    assert [r.info.status for r in runs] == ["KILLED"]
    lines = [
        line for line in err.splitlines() if not line.startswith(("20", "INFO"))
    ]  # MLflow's own log lines
    assert lines == [f"interrupted: run {runs[0].info.run_id} marked KILLED"], err
    assert proc.returncode == 130
