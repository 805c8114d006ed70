"""Field-hardening round 3 (issue 25) on ``ltr.evaluate``, ``ltr.clicks`` and dataset names: outputs that
would destroy inputs, silent mixing, false certainty, tracebacks and advice in another interface's spelling.

Each class is tried on every input and output of the surface, as a user meets it: ``main(argv)`` in-process
for the error paths, one real process per command for what a shell sees.
"""

from __future__ import annotations

import re
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
