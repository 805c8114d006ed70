"""Field-hardening round 3 (issue 25) on ``ltr.evaluate``, ``ltr.clicks`` and dataset names: outputs that
would destroy inputs, silent mixing, false certainty, tracebacks and advice in another interface's spelling.

Each class is tried on every input and output of the surface, as a user meets it: ``main(argv)`` in-process
for the error paths, one real process per command for what a shell sees.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ltr.clicks.__main__ import main as clicks_main
from ltr.core.errors import DataError
from ltr.evaluate import main as evaluate_main
from ltr.io.label_probs import read_label_probs
from ltr.io.predictions import read_scores
from ltr.io.trec import read_qrels, read_run

LETOR = (
    "2 qid:1 1:0.1 2:0.3 #docid = a\n"
    "0 qid:1 1:0.2 2:0.1 #docid = b\n"
    "1 qid:1 1:0.5 2:0.2 #docid = c\n"
    "1 qid:2 1:0.1 2:0.3 #docid = d\n"
    "0 qid:2 1:0.4 2:0.2 #docid = e\n"
)
SCORES = "0.5\n0.1\n0.3\n0.2\n0.9\n"
LOG = "session,qid,doc,position,click\n" + "".join(
    f"s{s},q{s % 3},d{(s + p) % 4},{p},{int((s * 7 + p * 3) % 5 < 2)}\n" for s in range(12) for p in (1, 2, 3)
)


def error_of(main, argv: list[str], capsys) -> str:
    """The one ``error:`` line a command prints for ``argv`` (exit status 2, nothing on stdout)."""
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == "", captured.out
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), captured.err
    return lines[0]


def run_command(cwd: Path, module: str, *argv: str) -> subprocess.CompletedProcess:
    """``python -m module argv`` in a real process, in ``cwd``."""
    return subprocess.run(
        [sys.executable, "-m", module, *argv], capture_output=True, text=True, timeout=300, cwd=cwd
    )


@pytest.fixture
def files(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "test.txt").write_text(LETOR)
    (tmp_path / "pred.txt").write_text(SCORES)
    (tmp_path / "log.csv").write_text(LOG)
    return tmp_path


# --- class 2: numbers are plain ASCII decimal / scientific in every parser --------------------------------

NOT_PLAIN = ["1_000", "٣.٥", "３", "0x10", "1e", "+-1"]


@pytest.mark.parametrize("text", NOT_PLAIN)
def test_score_files_refuse_numbers_other_tools_do_not_read(files, text):
    (files / "s.txt").write_text(f"0.5\n{text}\n0.1\n")
    with pytest.raises(
        DataError, match=rf"s.txt:2: score must be a number, got {re.escape(repr(text))} \(plain ASCII"
    ):
        read_scores(files / "s.txt", n_rows=3)


@pytest.mark.parametrize("text", ["1_000", "٣", "３", "1.0"])
def test_qrels_and_run_integers_are_ascii_digits(files, text):
    (files / "q").write_text(f"1 0 a 1\n1 0 b {text}\n")
    with pytest.raises(DataError, match=rf"q:2: relevance must be an integer, got '{text}'"):
        read_qrels(files / "q")
    (files / "r").write_text(f"1 Q0 a 1 0.5 t\n1 Q0 b {text} 0.2 t\n")
    with pytest.raises(DataError, match=rf"r:2: rank must be an integer, got '{text}'"):
        read_run(files / "r")
    (files / "r").write_text("1 Q0 a 1 0.5 t\n1 Q0 b 2 1_0 t\n")
    with pytest.raises(DataError, match=r"r:2: score must be a number, got '1_0'"):
        read_run(files / "r")


def test_ranklib_qid_in_other_digits_is_not_the_data_qid(files):
    (files / "rl.txt").write_text("٧\t0\t0.5\n7\t1\t0.2\n")
    with pytest.raises(DataError, match=r"rl.txt:1: qid ٧ but row 1 of the data belongs to qid 7"):
        read_scores(files / "rl.txt", n_rows=2, qid=np.array([7, 7]))


def test_label_probabilities_refuse_underscores(files):
    (files / "p.csv").write_text("0.5,0.5\n0.2_5,0.75\n")
    with pytest.raises(DataError, match=r"p.csv line 2: not a number in '0.2_5,0.75': '0.2_5'"):
        read_label_probs(files / "p.csv", 2)


def test_evaluate_scores_with_underscores_or_arabic_digits_is_an_error_naming_file_and_line(files, capsys):
    for text in ("1_000", "٣.٥"):
        (files / "p2.txt").write_text(SCORES.replace("0.3", text))
        line = error_of(evaluate_main, ["--data", "test.txt", "--scores", "p2.txt"], capsys)
        assert f"p2.txt:3: score must be a number, got '{text}'" in line


# --- class 4: every numeric field of a click log: bounds, integrality, the file and line ------------------


@pytest.mark.parametrize(
    ("column", "text"),
    [
        ("position", "1e30"),
        ("position", "9223372036854775808"),
        ("position", "1_0"),
        ("position", "٢"),
        ("position", "2.5"),
        ("position", "inf"),
        ("click", "1_0"),
        ("click", "١"),
        ("click", "2"),
        ("click", "nan"),
    ],
)
def test_click_log_numbers_name_file_line_and_column(files, capsys, column, text):
    rows = LOG.splitlines()
    fields = rows[5].split(",")
    fields[3 if column == "position" else 4] = text
    rows[5] = ",".join(fields)
    (files / "bad.csv").write_text("\n".join(rows) + "\n")
    line = error_of(clicks_main, ["propensity", "bad.csv", "--method", "em"], capsys)
    assert line.startswith(f"error: bad.csv:6: column '{column}', data row 5: expected ")
    assert repr(text) in line


def test_parquet_log_positions_are_bounded_and_integral(files, capsys):
    frame = pd.read_csv(files / "log.csv")
    frame["position"] = frame["position"].astype("float64")
    frame.loc[4, "position"] = 1e30
    frame.to_parquet(files / "big.parquet")
    line = error_of(clicks_main, ["propensity", "big.parquet", "--method", "randomization"], capsys)
    assert "big.parquet: column 'position', row 5: expected an integer in [1, 1000000000]" in line


# --- class 1: an output never destroys an input; outputs are written atomically ---------------------------


def evaluate_error(files: Path, capsys, *argv: str) -> str:
    before = {p.name: p.read_bytes() for p in files.iterdir() if p.is_file()}
    line = error_of(evaluate_main, list(argv), capsys)
    after = {p.name: p.read_bytes() for p in files.iterdir() if p.is_file()}
    assert after == before  # refused before anything was written
    return line


@pytest.mark.parametrize(
    ("output", "same_as"),
    [
        (["--write-run", "test.txt"], "--data test.txt"),
        (["--write-run", "./test.txt"], "--data test.txt"),
        (["--write-run", "sub/../test.txt"], "--data test.txt"),
        (["--write-run", "link.txt"], "--data test.txt"),
        (["--write-run", "hard.txt"], "--data test.txt"),
        (["--write-scores", "pred.txt"], "--scores pred.txt"),
        (["--write-scores", "link-to-pred"], "--scores pred.txt"),
        (["--write-run", "o.txt", "--write-scores", "./o.txt"], "--write-run o.txt"),
    ],
)
def test_evaluate_refuses_an_output_that_is_an_input(files, capsys, output, same_as):
    (files / "sub").mkdir()
    (files / "link.txt").symlink_to("test.txt")
    (files / "link-to-pred").symlink_to(files / "pred.txt")
    os.link(files / "test.txt", files / "hard.txt")
    line = evaluate_error(files, capsys, "--data", "test.txt", "--scores", "pred.txt", *output)
    assert f"is the same file as {same_as}" in line


def test_evaluate_refuses_overwriting_a_registry_datasets_files_and_the_model_store(files, capsys):
    folder = files / "data" / "synthetic"
    folder.mkdir(parents=True)
    for name in ("train.txt", "vali.txt", "test.txt"):
        (folder / name).write_text(LETOR)
    line = evaluate_error(
        files,
        capsys,
        "--data",
        "synthetic",
        "--scores",
        "pred.txt",
        "--write-run",
        "data/synthetic/train.txt",
    )
    assert "--write-run data/synthetic/train.txt is the same file as --data" in line
    (files / "mlflow.db").write_bytes(b"SQLite format 3\0")
    line = evaluate_error(
        files, capsys, "--data", "test.txt", "--model", "runs:/abc/model", "--write-run", "mlflow.db"
    )
    assert "is the same file as the MLflow store of --model" in line


def test_evaluate_checks_output_folders_before_the_work(files, capsys):
    line = evaluate_error(
        files, capsys, "--data", "test.txt", "--scores", "pred.txt", "--write-run", "nodir/r.run"
    )
    assert (
        line
        == f"error: --write-run nodir/r.run: the folder {files / 'nodir'} does not exist; create it first"
    )
    (files / "adir").mkdir()
    line = evaluate_error(
        files, capsys, "--data", "test.txt", "--scores", "pred.txt", "--write-scores", "adir"
    )
    assert line == "error: --write-scores adir: is a folder; give a file path"


def test_a_failed_write_leaves_the_old_output_whole(files, monkeypatch):
    from ltr.io.predictions import write_scores

    (files / "old.txt").write_text("0.1\n0.2\n")
    (files / "old.txt").chmod(0o640)

    real = Path.write_text

    def fail(self, text, encoding=None):  # half the text reaches the disk, then the disk is full
        real(self, text[:3], encoding=encoding)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_text", fail)
    with pytest.raises(DataError, match=r"old.txt: cannot write: No space left on device"):
        write_scores(files / "old.txt", np.array([1.0, 2.0, 3.0]))
    monkeypatch.undo()
    assert (files / "old.txt").read_text() == "0.1\n0.2\n"
    assert sorted(p.name for p in files.iterdir() if p.name.startswith(".tmp")) == []  # no temporary left
    write_scores(files / "old.txt", np.array([1.0, 2.0]))
    assert (files / "old.txt").read_text() == "1.0\n2.0\n" and (
        files / "old.txt"
    ).stat().st_mode & 0o777 == 0o640


def test_the_overwrite_case_in_a_real_process(files):
    """Issue 25's case as a shell sees it: exit 2, one line, the data file unchanged."""
    done = run_command(
        files, "ltr.evaluate", "--data", "test.txt", "--scores", "pred.txt", "--write-run", "test.txt"
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        "error: --write-run test.txt is the same file as --data test.txt: writing it would destroy the input; "
        "choose another output path\n"
    )
    assert (files / "test.txt").read_text() == LETOR


# --- class 2: a run --write-run writes is one ltr.evaluate --run reads --------------------------------------


def test_write_run_refuses_a_docid_twice_in_a_query_naming_both_lines(files, capsys):
    (files / "dup.txt").write_text("# exported\n" + LETOR.replace("#docid = c", "#docid = a"))
    line = evaluate_error(files, capsys, "--data", "dup.txt", "--scores", "pred.txt", "--write-run", "r.run")
    assert line == (
        "error: r.run: query 1 has the document id 'a' twice (dup.txt:2 and dup.txt:4); a TREC run lists a "
        "document once per query: give the rows distinct '# docid = X' comments"
    )
    # a row number standing in for a missing docid can collide with another row's docid too
    (files / "num.txt").write_text(LETOR.replace("#docid = a", "#docid = 2").replace(" #docid = b", ""))
    line = evaluate_error(files, capsys, "--data", "num.txt", "--scores", "pred.txt", "--write-run", "r.run")
    assert "query 1 has the document id '2' twice (num.txt:1 and num.txt:2)" in line


def test_written_runs_and_scores_read_back(files, capsys):
    assert evaluate_main(["--data", "test.txt", "--scores", "pred.txt", "--write-run", "r.run",
                          "--write-scores", "s.txt"]) == 0  # fmt: skip
    capsys.readouterr()
    assert read_run(files / "r.run").docno.size == 5
    assert read_scores(files / "s.txt", n_rows=5).tolist() == [0.5, 0.1, 0.3, 0.2, 0.9]


def test_writers_refuse_non_finite_scores(files):
    from ltr.io.predictions import write_scores
    from ltr.io.trec import write_trec_run

    with pytest.raises(DataError, match=r"s.txt: the score of data row 2 is nan \(1 non-finite in all\)"):
        write_scores(files / "s.txt", np.array([0.5, np.nan]))
    with pytest.raises(DataError, match=r"r.run: the score of data row 1 is inf"):
        write_trec_run(files / "r.run", np.array([1, 1]), np.array([0, 2]), np.array(["a", "b"]),
                       np.array([np.inf, 0.0]), "t")  # fmt: skip
    assert not (files / "s.txt").exists() and not (files / "r.run").exists()


# --- class 4: options that change nothing, advice in this command's spelling, dataset names ---------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--data", "test.txt", "--split", "valid"], "--split applies to a registry dataset named by --data"),
        (
            ["--data", "test.txt", "--data-dir", "d"],
            "--data-dir applies to a registry dataset named by --data",
        ),
        (["--data", "synthetic", "--fold", "2"], "--fold: synthetic has no folds"),
        (["--data", "synthetic", "--variant", "x"], "--variant: synthetic has no variants"),
        (
            ["--data", "yahoo_set1", "--fold", "2"],
            "--fold: yahoo_set1 has no folds; the datasets with folds: mslr_web10k",
        ),
        (
            ["--data", "mq2008", "--variant", "s"],
            "--variant: mq2008 has no variants; the datasets with variants: istella",
        ),
        (["--data", "mq2008", "--fold", "9"], "--fold: mq2008 has the folds 1..5, got 9"),
        (
            ["--data", "istella", "--split", "valid"],
            "--split: istella has no valid split; it has train, test",
        ),
        (["--data", "istella", "--variant", "y"], "--variant: expected one of ['full', 's', 'x'], got 'y'"),
        (
            ["--data", "test.txt", "--scores-format", "lines", "--model", "m"],
            "--scores-format reads --scores files",
        ),
        (["--data", "test.txt", "--tracking-uri", "sqlite:///x.db"], "--tracking-uri is where --model finds"),
        (["--data", "test.txt", "--B", "100"], "--B applies to --compare"),
        (["--data", "test.txt", "--seed", "1"], "--seed applies to --compare"),
        (["--data", "test.txt", "--test", "t"], "--test applies to --compare"),
        (
            ["--data", "test.txt", "-q", "--json"],
            "-q adds per-topic lines to trec_eval's text output; it has no effect with --json",
        ),
        (["--data", "test.txt", "--scores", "pred.txt", "-q", "--compare"], "no effect with --compare"),
        (
            ["--qrels", "q", "--run", "r", "--split", "test"],
            "--split needs --data (LETOR data); no effect on --qrels/--run",
        ),
        (["--qrels", "q", "--run", "r", "--fold", "1", "--dir", "d"], "--fold, --dir need --data"),
        (
            ["--data", "mq2008x"],
            "--data mq2008x: no such file, nor a dataset name (did you mean 'mq2008' or 'mq2007'?)",
        ),
        (["--data", "MSLR-WEB1OK"], "(did you mean 'mslr_web10k'"),
        (["--data", "svmlight"], "--data svmlight: svmlight is the kind of your own files"),
        (["--data", "./mq2008"], "--data ./mq2008: no such file"),
        (["--data", "sub"], "--data sub: is a folder"),
    ],
)
def test_evaluate_usage_errors_name_this_commands_options(files, capsys, argv, message):
    (files / "sub").mkdir()
    argv = (
        argv
        if "--scores" in argv or "--model" in argv or "--qrels" in argv
        else [*argv, "--scores", "pred.txt"]
    )
    assert message in error_of(evaluate_main, argv, capsys)


@pytest.mark.parametrize("spelling", ["MQ2008", "Mq2008", "mq2008"])
def test_evaluate_takes_a_dataset_name_in_any_case_as_ltr_data_list_shows_it(files, capsys, spelling):
    fold = files / "data" / "MQ2008" / "Fold1"
    fold.mkdir(parents=True)
    rng = np.random.default_rng(0)
    lines = [f"{rng.integers(0, 3)} qid:{10 + i // 4} " + " ".join(f"{j}:{rng.random():.3f}" for j in range(1, 47))
             + f" #docid = GX{i}" for i in range(8)]  # fmt: skip
    (fold / "test.txt").write_text("\n".join(lines) + "\n")
    (files / "p8.txt").write_text("".join(f"{v}\n" for v in rng.random(8)))
    assert evaluate_main(["--data", spelling, "--scores", "p8.txt", "--json"]) == 0, capsys.readouterr().err
    assert json.loads(capsys.readouterr().out)["n_queries"] == 2


def test_evaluate_synthetic_by_name_in_any_case(files, capsys):
    folder = files / "data" / "synthetic"
    folder.mkdir(parents=True)
    for name in ("train.txt", "vali.txt", "test.txt"):
        (folder / name).write_text(LETOR)
    assert evaluate_main(["--data", "Synthetic", "--split", "valid", "--scores", "pred.txt", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n_queries"] == 2


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["info", "mq2008x"],
            "mq2008x: no such file, nor a dataset name (did you mean 'mq2008' or 'mq2007'?)",
        ),
        (["info", "mq2008", "--fold", "9"], "--fold: mq2008 has the folds 1..5, got 9"),
        (["info", "yahoo_set1", "--fold", "2"], "--fold: yahoo_set1 has no folds"),
        (
            ["info", "test.txt", "--fold", "2"],
            "--fold applies to a registry dataset (see `list`); test.txt is a file",
        ),
        (["info", "synthetic", "--variant", "x"], "--variant: synthetic has no variants"),
        (
            ["fetch", "mq2008x"],
            "known datasets: synthetic, svmlight, istella, mq2007, mq2008, mslr_web10k, mslr_web30k, yahoo_set1, yahoo_set2 (did you mean 'mq2008' or 'mq2007'?)",
        ),
        (["fetch", "synthetic"], "'synthetic' is not a registry dataset (nothing to fetch or locate)"),
    ],
)
def test_ltr_data_resolves_names_as_evaluate_does(files, capsys, argv, message):
    from ltr.data.__main__ import main as data_main

    assert message in error_of(data_main, argv, capsys)


def test_ltr_data_info_takes_a_name_in_any_case(files, capsys):
    from ltr.data.__main__ import main as data_main

    line = error_of(data_main, ["info", "MQ2008"], capsys)
    assert line.startswith("error: mq2008: expected file(s) not found: data/MQ2008/Fold1/train.txt")


# --- class 3: no false certainty from ltr.clicks propensity -----------------------------------------------

ONE_QUERY = (
    "session,qid,doc,position,click\ns1,q1,a,1,1\ns1,q1,b,2,1\ns2,q1,b,1,1\ns2,q1,a,2,0\ns3,q1,a,1,0\n"
)


def test_a_one_query_log_has_no_ci_and_says_why(files, capsys):
    (files / "one.csv").write_text(ONE_QUERY)
    assert clicks_main(["propensity", "one.csv", "--method", "randomization", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ci_low"] == [1.0, None] and out["ci_high"] == [1.0, None]
    assert out["no_ci"] == {"2": "the log has 1 query; a bootstrap over queries needs 2 or more"}
    assert out["examination"] == [1.0, 0.75]  # by hand: CTR 1/2 at position 2 over CTR 2/3 at position 1
    assert clicks_main(["propensity", "one.csv", "--method", "randomization"]) == 0
    row = capsys.readouterr().out.splitlines()[-1]
    assert row.split()[:2] == ["2", "0.7500"] and "no CI: the log has 1 query" in row


def test_replicates_that_all_agree_are_no_ci(files, capsys):
    """Two queries with the same clicks: every bootstrap replicate gives the same ratio, which is no
    measure of the uncertainty (issue 25: θ₂ = 2.0 [2.0, 2.0])."""
    rows = "".join(
        f"s{q}{s},q{q},d{s},{p},{c}\n" for q in (1, 2) for s in (1, 2) for p, c in ((1, 1), (2, s - 1))
    )
    (files / "same.csv").write_text("session,qid,doc,position,click\n" + rows)
    assert clicks_main(["propensity", "same.csv", "--method", "randomization", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ci_low"][1] is None
    assert out["no_ci"]["2"] == "every bootstrap replicate gives 0.5: the queries do not vary here"


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (
            "s1,q1,a,1,1\ns1,q1,b,2,1\ns2,q2,b,1,1\ns2,q2,a,2,1\n",
            "every impression is a click; without non-clicks",
        ),
        (
            "s1,q1,a,1,0\ns1,q1,b,2,0\ns2,q2,b,1,0\ns2,q2,a,2,0\n",
            "no clicks; examination cannot be estimated",
        ),
        ("s1,q1,a,1,1\ns2,q2,b,1,0\n", "the log shows documents at position 1 only; examination relative"),
    ],
)
@pytest.mark.parametrize("method", ["randomization", "em"])
def test_logs_that_cannot_identify_examination_are_refused(files, capsys, rows, message, method):
    (files / "bad.csv").write_text("session,qid,doc,position,click\n" + rows)
    assert message in error_of(clicks_main, ["propensity", "bad.csv", "--method", method], capsys)


def test_max_position_one_is_named_as_the_option(files, capsys):
    line = error_of(clicks_main, ["propensity", "log.csv", "--method", "em", "--max-position", "1"], capsys)
    assert "position 1 only (--max-position 1); examination relative to position 1" in line


# --- classes 1 and 4 on ltr.clicks: outputs, option spelling, options with no effect -----------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["propensity", "log.csv", "--method", "em", "--output", "log.csv"],
            "--output log.csv is the same file as LOG log.csv",
        ),
        (
            ["propensity", "log.csv", "--method", "em", "--output", "./link.csv"],
            "--output ./link.csv is the same file as LOG",
        ),
        (
            [
                "propensity",
                "log.csv",
                "--method",
                "regression-em",
                "--features",
                "test.txt",
                "--output",
                "test.txt",
            ],
            "--output test.txt is the same file as --features test.txt",
        ),
        (
            ["propensity", "log.csv", "--method", "em", "--output", "nodir/p.json"],
            "--output nodir/p.json: the folder",
        ),
        (["propensity", "log.csv", "--method", "em", "--output", "."], "--output .: is a folder"),
        (
            ["simulate", "s.csv", "--features-out", "./s.csv"],
            "--features-out ./s.csv is the same file as OUT s.csv",
        ),
        (["simulate", "nodir/s.csv"], "OUT nodir/s.csv: the folder"),
        (
            ["propensity", "log.csv", "--method", "em", "--bootstrap", "0"],
            "--bootstrap: must be in [1, inf], got 0",
        ),
        (
            ["propensity", "log.csv", "--method", "em", "--max-position", "0"],
            "--max-position: must be in [1, inf]",
        ),
        (
            ["propensity", "log.csv", "--method", "em", "--confidence", "1.5"],
            "--confidence: must be in (0.0, 1.0)",
        ),
        (
            ["propensity", "log.csv", "--method", "em", "--iterations", "5"],
            "--iterations applies to --method regression-em",
        ),
        (
            ["propensity", "log.csv", "--method", "em", "--features", "test.txt"],
            "--features applies to --method regression-em",
        ),
        (
            ["propensity", "log.csv", "--method", "regression-em"],
            "--features: method regression-em needs the documents'",
        ),
        (
            ["propensity", "log.csv", "--method", "regression-em", "--features", "no.txt"],
            "--features no.txt: no such",
        ),
        (["simulate", "s.csv", "--queries", "0"], "--queries: must be in [1, inf], got 0"),
        (["simulate", "s.csv", "--eta", "nan"], "--eta: expected a finite number, got nan"),
        (["simulate", "s.csv", "--top-k", "0"], "--top-k:"),
        (["simulate", "s.csv", "--rounds", "0"], "--rounds: expected an integer >= 1, got 0"),
    ],
)
def test_clicks_usage_errors_before_the_work_in_this_commands_spelling(files, capsys, argv, message):
    (files / "link.csv").symlink_to("log.csv")
    before = (files / "log.csv").read_bytes()
    line = error_of(clicks_main, argv, capsys)
    assert message in line
    assert (files / "log.csv").read_bytes() == before and not (files / "s.csv").exists()


def test_propensity_output_in_a_missing_folder_fails_before_reading_the_log(files, capsys, monkeypatch):
    import ltr.clicks.__main__ as command

    monkeypatch.setattr(command, "read_click_log", lambda path: pytest.fail("the log was read"))
    error_of(clicks_main, ["propensity", "log.csv", "--method", "em", "--output", "nodir/p.json"], capsys)


def test_clicks_one_query_log_in_a_real_process(files):
    (files / "one.csv").write_text(ONE_QUERY)
    done = run_command(files, "ltr.clicks", "propensity", "one.csv", "--method", "em", "--output", "p.json")
    assert done.returncode == 0, done.stderr
    assert "no CI: the log has 1 query" in done.stdout
    written = json.loads((files / "p.json").read_text())
    assert written["ci_high"][1] is None and "2" in written["no_ci"]


# --- class 4: a parse error's advice is a flag of the command the user is in -------------------------------


@pytest.mark.parametrize(
    ("text", "advice", "flag"),
    [
        (
            "1 qid:1 0:0.1 1:0.2\n0 qid:1 0:0.3 1:0.1\n",
            "load with --zero-based if the file is 0-based",
            "--zero-based",
        ),
        ("1 qid:1 2:0.1 1:0.2\n0 qid:1 1:0.3\n", "load with --allow-unsorted to accept", "--allow-unsorted"),
        ("1 qid:1 1:nan\n0 qid:1 1:0.3\n", "choose a policy: --nonfinite keep", "--nonfinite=missing"),
        ("1.5 qid:1 1:0.1\n0 qid:1 1:0.3\n", "--no-integer-labels", "--no-integer-labels"),
    ],
)
def test_evaluate_parse_errors_advise_its_own_flags_which_then_work(files, capsys, text, advice, flag):
    (files / "f.txt").write_text(text)
    (files / "p2.txt").write_text("0.1\n0.2\n")
    line = error_of(evaluate_main, ["--data", "f.txt", "--scores", "p2.txt"], capsys)
    assert advice in line and "=True" not in line
    assert evaluate_main(["--data", "f.txt", "--scores", "p2.txt", flag, "--json"]) == 0, (
        capsys.readouterr().err
    )
    assert json.loads(capsys.readouterr().out)["n_queries"] == 1


def test_evaluate_says_why_it_has_no_regroup(files, capsys):
    (files / "split.txt").write_text("1 qid:1 1:1\n0 qid:2 1:0.3\n1 qid:1 1:1\n")
    (files / "p3.txt").write_text("0.1\n0.2\n0.3\n")
    line = error_of(evaluate_main, ["--data", "split.txt", "--scores", "p3.txt"], capsys)
    assert line.endswith(
        "(sort the file's rows by query, and its --scores with them: rows are read in file order)"
    )


def test_regression_em_features_parse_advice_is_a_flag_of_ltr_clicks(files, capsys):
    from ltr.clicks.simulation import simulate_log_table
    from ltr.data.svmlight import write_svmlight
    from ltr.data.synthetic import generate

    data = generate(30, seed=0)
    pd.DataFrame(simulate_log_table(data, rounds=3, seed=0)).to_csv(files / "sim.csv", index=False)
    write_svmlight(
        data, files / "f0.txt", comments=[f"docid = {i}" for i in range(data.n_docs)], zero_based=True
    )
    argv = ["propensity", "sim.csv", "--method", "regression-em", "--features", "f0.txt", "--bootstrap", "2",
            "--iterations", "2", "--json"]  # fmt: skip
    line = error_of(clicks_main, argv, capsys)
    assert "f0.txt:1: feature index 0 but indices are 1-based" in line and "load with --zero-based" in line
    assert clicks_main([*argv, "--zero-based"]) == 0, capsys.readouterr().err
    assert json.loads(capsys.readouterr().out)["position"][0] == 1
    assert "--zero-based applies to --method regression-em" in error_of(
        clicks_main, ["propensity", "sim.csv", "--method", "em", "--zero-based"], capsys
    )


def test_rand_top_one_changes_nothing_and_is_refused(files, capsys):
    line = error_of(clicks_main, ["simulate", "s.csv", "--rand-top", "1"], capsys)
    assert line == "error: --rand-top 1 shuffles one document, which changes nothing; 0 (off) or 2 and more"


# --- classes 2 and 4 on options: numbers in ASCII, a usage error in one line -------------------------------


@pytest.mark.parametrize(
    ("main_of", "argv", "message"),
    [
        (
            "clicks",
            ["propensity", "log.csv", "--method", "em", "--bootstrap", "1_0"],
            "argument --bootstrap: expected an integer",
        ),
        (
            "clicks",
            ["propensity", "log.csv", "--method", "em", "--confidence", "٠.٩"],
            "argument --confidence: expected a number",
        ),
        ("clicks", ["simulate", "s.csv", "--queries", "３"], "argument --queries: expected an integer"),
        ("clicks", ["propensity", "log.csv"], "the following arguments are required: --method"),
        (
            "evaluate",
            ["--data", "mq2008", "--fold", "٣", "--scores", "pred.txt"],
            "argument --fold: expected an integer",
        ),
        (
            "evaluate",
            ["--data", "test.txt", "--scores", "pred.txt", "--compare", "--B", "1_000"],
            "argument --B:",
        ),
        (
            "evaluate",
            ["--data", "test.txt", "--scores", "pred.txt", "--preset", "nope"],
            "argument --preset: invalid choice",
        ),
        ("data", ["info", "test.txt", "--n-features", "1_0"], "argument --n-features: expected an integer"),
        (
            "data",
            ["info", "test.txt", "--label-range", "0", "٤"],
            "argument --label-range: expected a number",
        ),
    ],
)
def test_option_numbers_are_ascii_and_usage_errors_are_one_line(files, capsys, main_of, argv, message):
    from ltr.data.__main__ import main as data_main

    main = {"clicks": clicks_main, "evaluate": evaluate_main, "data": data_main}[main_of]
    with pytest.raises(SystemExit) as ended:
        main(argv)
    assert ended.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: {message}") and err.rstrip().endswith("--help)")


def test_empty_output_paths_and_files_as_folders_are_refused(files, capsys):
    scored = ["--data", "test.txt", "--scores", "pred.txt"]
    cases = {
        "--write-run: the path is empty": (evaluate_main, [*scored, "--write-run", ""]),
        "pred.txt is a file, not a folder": (evaluate_main, [*scored, "--write-scores", "pred.txt/s"]),
        "--output: the path is empty": (
            clicks_main,
            ["propensity", "log.csv", "--method", "em", "--output", ""],
        ),
        "log.csv is a file, not a folder": (clicks_main, ["simulate", "log.csv/s.csv"]),
    }
    for message, (main, argv) in cases.items():
        assert message in error_of(main, argv, capsys), argv
