"""``python -m ltr.evaluate`` reproduces NIST trec_eval's own regression output and pytrec_eval."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

from ltr.errors import DataError, MetricError
from ltr.evaluate import main
from ltr.metrics.trec import evaluate_trec, format_trec, read_qrels, read_run, trec_measures

MEASURES = ["ndcg", "ndcg_cut", "map", "map_cut", "P", "recall", "recip_rank"]
CHECKED = re.compile(r"ndcg|map|recip_rank|(ndcg_cut|map_cut|P|recall)_\d+")  # the measures we reproduce


def parse_trec_output(text: str) -> dict[tuple[str, str], str]:
    out = {}
    for line in text.splitlines():
        measure, topic, value = line.split("\t")
        out[(measure.strip(), topic)] = value.strip()
    return out


@pytest.fixture(scope="module")
def trec_dir(shared_data):
    return shared_data / "trec_eval"


@pytest.fixture(scope="module")
def expected(trec_dir):
    table = parse_trec_output((trec_dir / "out.test.aq").read_text())
    return {k: v for k, v in table.items() if CHECKED.fullmatch(k[0])}


@pytest.mark.shared_data
@pytest.mark.parametrize("qrels_name", ["qrels.test", "qrels.test.with-comments"])
def test_reproduces_trec_eval_out_test_aq(trec_dir, expected, qrels_name, capsys):
    status = main(["--qrels", str(trec_dir / qrels_name), "--run", str(trec_dir / "results.test"), "-q"]
                  + [a for m in MEASURES for a in ("-m", m)])  # fmt: skip
    assert status == 0
    ours = parse_trec_output(capsys.readouterr().out)
    # every checked trec_eval value (per topic and all), to the printed 4 decimals
    assert len(expected) == 4 * (2 + 4 * 9 + 1)
    for key, value in expected.items():
        assert ours.get(key) == value, key
    assert ours[("num_q", "all")] == "3" and ours[("runid", "all")] == "STANDARD"


@pytest.mark.shared_data
def test_matches_pytrec_eval_on_the_same_files(trec_dir):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    with (trec_dir / "qrels.test").open() as f:
        qrels = pytrec_eval.parse_qrel(f)
    with (trec_dir / "results.test").open() as f:
        run = pytrec_eval.parse_run(f)
    theirs = pytrec_eval.RelevanceEvaluator(
        qrels, {"ndcg", "ndcg_cut", "map", "map_cut", "P", "recall", "recip_rank"}
    ).evaluate(run)
    for qrels_name in ("qrels.test", "qrels.test.with-comments"):
        result = evaluate_trec(
            read_qrels(trec_dir / qrels_name), read_run(trec_dir / "results.test"), MEASURES
        )
        assert result.topics == sorted(theirs)
        for name, values in result.values.items():
            want = np.array([theirs[t][name] for t in result.topics])
            np.testing.assert_allclose(values, want, rtol=0, atol=1e-12, err_msg=name)


@pytest.mark.shared_data
def test_ties_are_broken_by_docno_descending(trec_dir):
    qrels, run = read_qrels(trec_dir / "qrels.test"), read_run(trec_dir / "results.test")
    trec = evaluate_trec(qrels, run, ["map", "P_100"])
    stable = evaluate_trec(qrels, run, ["map", "P_100"], ties="docno_asc")
    assert any(np.abs(trec.values[m] - stable.values[m]).max() > 1e-6 for m in ("map", "P_100"))


def test_module_entry_point_runs(tmp_path):
    (tmp_path / "q").write_text("1 0 a 1\n1 0 b 0\n1 0 c 2\n2 0 x 0\n")
    (tmp_path / "r").write_text("1 Q0 b 1 3.0 t\n1 Q0 a 2 2.0 t\n1 Q0 z 3 2.0 t\n3 Q0 a 1 1.0 t\n")
    proc = subprocess.run(
        [sys.executable, "-m", "ltr.evaluate", "--qrels", str(tmp_path / "q"), "--run", str(tmp_path / "r"),
         "-m", "P_2", "-m", "recip_rank", "-m", "ndcg@3", "-q"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    out = parse_trec_output(proc.stdout)
    # topic 1 only (2 is not in the run, 3 is not judged); z (unjudged) and a tie at 2.0: z > a (docno desc)
    assert out[("P_2", "1")] == "0.0000" and out[("recip_rank", "1")] == "0.3333"
    assert out[("num_q", "all")] == "1" and out[("P_2", "all")] == "0.0000"
    ndcg = (1 / np.log2(4)) / (2 + 1 / np.log2(3))
    assert out[("ndcg@3", "1")] == f"{ndcg:.4f}"


def test_trec_measure_names():
    assert trec_measures(["P"])[0] == ("P_5", "p@5") and len(trec_measures(["P"])) == 9
    assert trec_measures(["map_cut.3,7", "recall_12", "recip_rank"]) == [
        ("map_cut_3", "map@3"), ("map_cut_7", "map@7"), ("recall_12", "r@12"), ("recip_rank", "mrr"),
    ]  # fmt: skip
    with pytest.raises(MetricError, match="unknown measure 'bpref'"):
        trec_measures(["bpref"])
    with pytest.raises(MetricError, match="takes no cutoffs"):
        trec_measures(["map.5"])
    with pytest.raises(MetricError, match="cutoff k must be >= 1"):
        trec_measures(["P_0"])


@pytest.mark.parametrize(
    ("qrels", "run", "match"),
    [
        ("1 0 a\n", "1 Q0 a 1 1.0 t\n", r"q:1: expected 4 fields"),
        ("1 0 a 1\n1 0 b x\n", "1 Q0 a 1 1.0 t\n", r"q:2: relevance must be an integer, got 'x'"),
        (
            "1 0 a 1\n# c\n1 0 a 0\n",
            "1 Q0 a 1 1.0 t\n",
            r"q:3: qrels lists document 'a' of topic 1 twice \(first on line 1\)",
        ),
        ("1 0 a 1\n", "1 Q0 a 1 one t\n", r"r:1: score must be a number, got 'one'"),
        ("1 0 a 1\n", "1 Q0 a 1 nan t\n", r"r:1: score must be finite"),
        ("1 0 a 1\n", "1 Q0 a x 1.0 t\n", r"r:1: rank must be an integer"),
        ("1 0 a 1\n", "\n1 Q0 a 1 1.0 t\n1 Q0 a 2 0.5 t\n", r"r:3: run lists document 'a' of topic 1 twice"),
        ("1 0 a 1\n", "2 Q0 a 1 1.0 t\n", r"no topic of the run is judged"),
        ("# only a comment\n", "1 Q0 a 1 1.0 t\n", r"q: no judgments found"),
        ("\ufeff# only a comment\r\n\n", "1 Q0 a 1 1.0 t\n", r"q: no judgments found"),
        (
            "1 0 a 1\r1 0 b 0\r",
            "1 Q0 a 1 1.0 t\n",
            r"q:1: a carriage return \(\\r\) not followed by a line feed",
        ),
        (
            "1 0 a 1\n",
            "1 Q0 a 1 1.0 t\r\n1 Q0 b 2 0.5 t\r1 Q0 c 3 0.1 t\n",
            r"r:2: a carriage return \(\\r\)",
        ),
    ],
)
def test_strict_parsing_errors(tmp_path, qrels, run, match, capsys):
    (tmp_path / "q").write_text(qrels)
    (tmp_path / "r").write_text(run)
    with pytest.raises(DataError, match=match):
        evaluate_trec(read_qrels(tmp_path / "q"), read_run(tmp_path / "r"), ["map"])
    assert main(["--qrels", str(tmp_path / "q"), "--run", str(tmp_path / "r"), "-m", "map"]) == 2
    assert capsys.readouterr().err.startswith("error: ")


def test_missing_file_is_a_data_error(tmp_path):
    with pytest.raises(DataError, match="cannot read"):
        read_qrels(tmp_path / "absent")


def test_cli_preset_option_gdeval_skips_topics_without_relevant(tmp_path, capsys):
    (tmp_path / "q").write_text("1 0 a 2\n1 0 b 0\n2 0 x 0\n")
    (tmp_path / "r").write_text("1 Q0 b 1 2.0 t\n1 Q0 a 2 1.0 t\n2 Q0 x 1 1.0 t\n")
    args = ["--qrels", str(tmp_path / "q"), "--run", str(tmp_path / "r"), "-m", "ndcg@2", "-q"]
    assert main([*args, "--preset", "gdeval"]) == 0
    out = parse_trec_output(capsys.readouterr().out)
    assert out[("ndcg@2", "1")] == f"{(3 / np.log2(3)) / 3:.4f}" and ("ndcg@2", "2") not in out
    assert out[("num_q", "all")] == "1"
    assert main(args) == 0  # trec: topic 2 scores 0 and counts; gain linear
    out = parse_trec_output(capsys.readouterr().out)
    assert out[("ndcg@2", "2")] == "0.0000" and out[("num_q", "all")] == "2"
    assert out[("ndcg@2", "1")] == f"{(2 / np.log2(3)) / 2:.4f}"


def test_format_skips_nan_topics(tmp_path):
    (tmp_path / "q").write_text("1 0 a 1\n2 0 b 0\n")
    (tmp_path / "r").write_text("1 Q0 a 1 1.0 t\n2 Q0 b 1 1.0 t\n")
    result = evaluate_trec(read_qrels(tmp_path / "q"), read_run(tmp_path / "r"), ["ndcg@5"], preset="gdeval")
    text = format_trec(result, per_topic=True)
    assert "ndcg@5                \t1\t1.0000" in text and "\t2\t" not in text
    assert "ndcg@5                \tall\t1.0000" in text
