"""``python -m ltr.evaluate`` reproduces NIST trec_eval's own regression output and pytrec_eval."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ltr.core.errors import DataError, MetricError
from ltr.evaluate import main
from ltr.io.trec import read_qrels, read_run
from ltr.metrics.trec import evaluate_trec, format_trec, trec_measures

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


# --- several runs: every one printed, or compared -------------------------------------------------------


def write_trec(
    folder, n_topics: int = 15, systems: dict[str, float] | None = None, seed: int = 0
) -> list[str]:
    """qrels (10 judged documents per topic, grades 0-2) and one run per system: score = signal·label + noise."""
    rng = np.random.default_rng(seed)
    systems = systems or {"bm25": 0.5, "dense": 1.0, "rerank": 1.5}
    labels = {t: rng.integers(0, 3, 10) for t in range(1, n_topics + 1)}
    (folder / "qrels").write_text(
        "".join(f"{t} 0 d{t}-{i} {g}\n" for t, grades in labels.items() for i, g in enumerate(grades))
    )
    paths = []
    for name, signal in systems.items():
        lines = []
        for t, grades in labels.items():
            scores = signal * grades + rng.normal(0, 1, 10)
            for rank, i in enumerate(np.argsort(-scores), start=1):
                lines.append(f"{t} Q0 d{t}-{i} {rank} {scores[i]:.6f} {name}\n")
        (folder / f"{name}.run").write_text("".join(lines))
        paths.append(str(folder / f"{name}.run"))
    return paths


def pytrec_per_query(folder, run_path: str, measures: set[str]) -> dict[str, dict[str, float]]:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    with (folder / "qrels").open() as f:
        qrels = pytrec_eval.parse_qrel(f)
    with open(run_path) as f:
        run = pytrec_eval.parse_run(f)
    return pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)


def blocks(text: str) -> list[dict[tuple[str, str], str]]:
    """trec_eval output of several runs, one table per run: a run's per-topic lines (``-q``) come first,
    then its ``runid``, ``num_q`` and ``all`` lines; the next per-topic line opens the next run."""
    out: list[dict[tuple[str, str], str]] = []
    previous_all = False
    for line in text.splitlines():
        measure, topic, value = (x.strip() for x in line.split("\t"))
        topic_after_all = topic != "all" and previous_all
        second_runid = measure == "runid" and bool(out) and ("runid", "all") in out[-1]
        if not out or topic_after_all or second_runid:
            out.append({})
        previous_all = topic == "all"
        out[-1][(measure, topic)] = value
    return out


def test_every_run_is_evaluated_and_printed(tmp_path, capsys):
    runs = write_trec(tmp_path)
    args = ["--qrels", str(tmp_path / "qrels"), "-m", "map", "-m", "ndcg_cut_5"]
    for per_topic in ([], ["-q"]):
        assert main([*args, *per_topic, *(a for r in runs for a in ("--run", r))]) == 0
        tables = blocks(capsys.readouterr().out)
        assert [t[("runid", "all")] for t in tables] == ["bm25", "dense", "rerank"]  # none dropped, in order
        for table, run in zip(tables, runs, strict=True):
            theirs = pytrec_per_query(tmp_path, run, {"map", "ndcg_cut_5"})
            assert table[("num_q", "all")] == "15"
            for name in ("map", "ndcg_cut_5"):
                assert table[(name, "all")] == f"{np.mean([v[name] for v in theirs.values()]):.4f}"
                if per_topic:
                    assert {t: table[(name, t)] for t in theirs} == {
                        t: f"{v[name]:.4f}" for t, v in theirs.items()
                    }
                else:
                    assert len(table) == 4


def holm_by_hand(p: list[float]) -> list[float]:
    order = np.argsort(p)
    adjusted, running = np.empty(len(p)), 0.0
    for i, j in enumerate(order):
        running = max(running, min(1.0, (len(p) - i) * p[j]))
        adjusted[j] = running
    return adjusted.tolist()


@pytest.mark.parametrize("test", ["t", "randomization"])
def test_compare_runs_matches_scipy_and_holm(tmp_path, capsys, test):
    from scipy import stats

    runs = write_trec(tmp_path)
    args = ["--qrels", str(tmp_path / "qrels"), *(a for r in runs for a in ("--run", r)), "-m", "ndcg_cut_10",
            "-m", "map", "--compare", "--test", test, "--B", "2000"]  # fmt: skip
    assert main([*args, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = {(r["system"], r["metric"]): r for r in out["comparison"]}
    per_query = {Path(r).stem: pytrec_per_query(tmp_path, r, {"ndcg_cut_10", "map"}) for r in runs}
    topics = sorted(per_query["bm25"])
    for metric in ("ndcg_cut_10", "map"):
        v = {s: np.array([per_query[s][t][metric] for t in topics]) for s in per_query}
        raw = []
        for system in ("dense", "rerank"):
            if test == "t":
                want = stats.ttest_rel(v[system], v["bm25"]).pvalue
            else:  # 15 queries: ltr's sign-flip test is exact, as scipy's with every permutation
                want = stats.permutation_test(
                    (v[system], v["bm25"]), lambda a, b, axis: np.mean(a - b, axis=axis),
                    permutation_type="samples", n_resamples=np.inf, vectorized=True,
                ).pvalue  # fmt: skip
            r = rows[(system, metric)]
            assert r["pvalue"] == pytest.approx(want, rel=1e-9), (system, metric)
            diff = v[system] - v["bm25"]
            assert (r["wins"], r["ties"], r["losses"]) == (
                int((diff > 0).sum()),
                int((diff == 0).sum()),
                int((diff < 0).sum()),
            )
            assert r["diff"] == pytest.approx(diff.mean(), abs=1e-12) and r["n_queries"] == 15
            raw.append(r["pvalue"])
        adjusted = holm_by_hand(raw)
        assert [rows[(s, metric)]["pvalue_adjusted"] for s in ("dense", "rerank")] == pytest.approx(
            adjusted, rel=1e-12
        )
        assert rows[("bm25", metric)]["is_baseline"] and rows[("bm25", metric)]["pvalue"] is None
        assert rows[("bm25", metric)]["mean"] == pytest.approx(v["bm25"].mean(), abs=1e-12)
    # the JSON also holds every system's own evaluation
    assert list(out["systems"]) == ["bm25", "dense", "rerank"]
    # the printed leaderboard: baseline marked, the detail table with W/T/L per system
    assert main(args) == 0
    text = " ".join(capsys.readouterr().out.split())  # the caption wraps at the console's width
    assert "│ bm25 (baseline) │" in text and "Holm-corrected over the 2 comparisons" in text
    r = rows[("rerank", "map")]
    assert f"{r['wins']}/{r['ties']}/{r['losses']}" in text.split("map vs bm25")[1]


def test_compare_prints_the_terminal_table_of_ltr_compare_not_markdown(tmp_path):
    """``python -m ltr.evaluate --compare`` in a pipe: the leaderboard as ``ltr.compare`` prints it (a
    drawn table, plain text), no Markdown escapes or bold marks; its means, the detail's Δ and W/T/L are
    the ones computed here from pytrec_eval's per-query values."""
    runs = write_trec(tmp_path, systems={"bm25_base": 0.5, "dense_model": 1.2})
    proc = subprocess.run(
        [sys.executable, "-m", "ltr.evaluate", "--qrels", str(tmp_path / "qrels"), "--run", runs[0], "--run", runs[1],
         "-m", "ndcg_cut_10", "-m", "map", "--compare", "--B", "500"],
        capture_output=True, text=True, check=True, env={**os.environ, "COLUMNS": "250"},
    )  # fmt: skip
    out = proc.stdout
    assert "\\_" not in out and "**" not in out and "| --- |" not in out and "##" not in out, out
    table = [
        [c.strip() for c in re.split("[│┃]", line)[1:-1]]
        for line in out.splitlines()
        if line.startswith(("│", "┃"))
    ]
    assert table[0] == ["system", "ndcg_cut_10", "map"]
    per_query = {Path(r).stem: pytrec_per_query(tmp_path, r, {"ndcg_cut_10", "map"}) for r in runs}
    topics = sorted(per_query["bm25_base"])
    v = {
        s: {m: np.array([per_query[s][t][m] for t in topics]) for m in ("ndcg_cut_10", "map")}
        for s in per_query
    }
    assert [row[0] for row in table[1:]] == ["bm25_base (baseline)", "dense_model"]
    for row, system in zip(table[1:], ("bm25_base", "dense_model"), strict=True):
        means = [cell.split()[0].rstrip("†") for cell in row[1:]]
        assert means == [f"{v[system][m].mean():.4f}" for m in ("ndcg_cut_10", "map")]
    for metric in ("ndcg_cut_10", "map"):
        section = out.split(f"{metric} vs bm25_base")[1]
        (line,) = [line.split() for line in section.splitlines() if line.split()[:1] == ["dense_model"]][:1]
        diff = v["dense_model"][metric] - v["bm25_base"][metric]
        assert line[1] == f"{diff.mean():+.4f}"
        assert f"{(diff > 0).sum()}/{(diff == 0).sum()}/{(diff < 0).sum()}" in line
    assert "Metric agreement" in out and "Bold: best mean per metric" in out


def test_compare_prints_metric_agreement_checked_against_scipy(tmp_path, capsys):
    """``--compare`` with ≥ 2 measures adds the metric agreement: τ between the system rankings, pooled
    per-query Pearson/Spearman (scipy) and discriminative power (exact sign-flip, scipy's permutation test)."""
    from itertools import combinations

    from scipy import stats

    runs = write_trec(tmp_path)
    args = ["--qrels", str(tmp_path / "qrels"), *(a for r in runs for a in ("--run", r)), "-m", "ndcg_cut_10",
            "-m", "map", "--compare"]  # fmt: skip
    assert main([*args, "--json"]) == 0
    agreement = json.loads(capsys.readouterr().out)["agreement"]
    per_query = {Path(r).stem: pytrec_per_query(tmp_path, r, {"ndcg_cut_10", "map"}) for r in runs}
    topics = sorted(per_query["bm25"])
    v = {
        m: {s: np.array([per_query[s][t][m] for t in topics]) for s in per_query}
        for m in ("ndcg_cut_10", "map")
    }
    (pair,) = agreement["pairs"]
    assert (pair["metric_a"], pair["metric_b"]) == ("ndcg_cut_10", "map")
    means = {m: [v[m][s].mean() for s in per_query] for m in v}
    assert pair["kendall_tau"] == pytest.approx(
        stats.kendalltau(means["ndcg_cut_10"], means["map"]).statistic
    )
    pooled = {m: np.concatenate(list(v[m].values())) for m in v}
    assert pair["pearson"] == pytest.approx(stats.pearsonr(pooled["ndcg_cut_10"], pooled["map"]).statistic)
    assert pair["spearman"] == pytest.approx(stats.spearmanr(pooled["ndcg_cut_10"], pooled["map"]).statistic)
    for metric in v:
        significant = 0
        for a, b in combinations(per_query, 2):
            p = stats.permutation_test(
                (v[metric][a], v[metric][b]), lambda x, y, axis: np.mean(x - y, axis=axis),
                permutation_type="samples", n_resamples=np.inf, vectorized=True,
            ).pvalue  # fmt: skip
            significant += p < 0.05
        assert agreement["discriminative_power"][metric] == pytest.approx(significant / 3)
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "Metric agreement" in text and "Discriminative power" in text and "##" not in text
    (row,) = [line.split() for line in text.splitlines() if line.split()[:2] == ["ndcg_cut_10", "map"]]
    assert row[2] == f"{pair['kendall_tau']:.3f}"


def test_compare_baseline_option_and_different_query_sets(tmp_path, capsys):
    runs = write_trec(tmp_path)
    base = [
        "--qrels",
        str(tmp_path / "qrels"),
        *(a for r in runs for a in ("--run", r)),
        "-m",
        "map",
        "--compare",
        "--B",
        "500",
    ]
    assert main([*base, "--baseline", "dense"]) == 0
    assert "│ dense (baseline) │" in capsys.readouterr().out
    assert main([*base, "--baseline", runs[2]]) == 0  # the path as given names the system too
    assert "│ rerank (baseline) │" in capsys.readouterr().out
    assert main([*base, "--baseline", "nope"]) == 2
    assert "--baseline 'nope' is not one of the systems: 'bm25', 'dense', 'rerank'" in capsys.readouterr().err
    # a run that misses topics 14 and 15 (not retrieved): refused for --compare, still evaluated without it
    short = tmp_path / "short.run"
    short.write_text(
        "".join(
            line + "\n"
            for line in Path(runs[1]).read_text().splitlines()
            if line.split()[0] not in ("14", "15")
        )
    )
    short.write_text(short.read_text().replace(" dense\n", " short\n"))
    args = ["--qrels", str(tmp_path / "qrels"), "--run", runs[0], "--run", str(short), "-m", "map"]
    assert main([*args, "--compare"]) == 2
    err = capsys.readouterr().err
    assert (
        "systems were evaluated on different query sets" in err
        and "'short' lacks 2 of the baseline's queries" in err
    )
    assert main(args) == 0
    tables = blocks(capsys.readouterr().out)
    assert [(t[("runid", "all")], t[("num_q", "all")]) for t in tables] == [("bm25", "15"), ("short", "13")]


def test_runs_with_the_same_tag_are_named_by_path(tmp_path, capsys):
    runs = write_trec(tmp_path, systems={"a": 1.0, "b": 1.0})
    Path(runs[1]).write_text(Path(runs[1]).read_text().replace(" b\n", " a\n"))
    assert (
        main(["--qrels", str(tmp_path / "qrels"), "--run", runs[0], "--run", runs[1], "-m", "map", "--json"])
        == 0
    )
    assert list(json.loads(capsys.readouterr().out)["systems"]) == runs


def test_trec_json_matches_pytrec_eval(tmp_path, capsys):
    runs = write_trec(tmp_path, systems={"bm25": 0.7})
    assert (
        main(["--qrels", str(tmp_path / "qrels"), "--run", runs[0], "-m", "P.5,10", "-m", "ndcg", "--json"])
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    theirs = pytrec_per_query(tmp_path, runs[0], {"P_5", "P_10", "ndcg"})
    assert list(out) == ["mean", "per_query", "n_queries", "n_skipped", "conventions"]
    assert out["conventions"]["preset"] == "trec" and out["n_queries"] == 15
    for topic, values in theirs.items():
        assert out["per_query"][topic] == pytest.approx(values, abs=1e-12)
    assert out["mean"]["P_10"] == pytest.approx(np.mean([v["P_10"] for v in theirs.values()]), abs=1e-12)


@pytest.mark.filterwarnings("error::RuntimeWarning")  # valid input: no numpy warning (All-NaN slice) either
def test_compare_without_measures_prints_one_screen_of_a_short_default_set(tmp_path, capsys):
    """``--compare`` without ``-m`` on runs used trec_eval's 22 default measures: ~800 lines and a grid of
    "…" at 80 columns. Now a short set, said on the first line with how to get more; every cell whole."""
    from ltr.evaluate import TREC_COMPARE_MEASURES

    runs = write_trec(tmp_path, n_topics=20)
    args = ["--qrels", str(tmp_path / "qrels"), *(a for r in runs for a in ("--run", r)), "--compare"]
    env_columns = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "80"
    try:
        assert main(args) == 0
    finally:
        if env_columns is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = env_columns
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert lines[0].startswith(f"measures: {', '.join(TREC_COMPARE_MEASURES)} (--compare's default; -m NAME")
    leaderboard = captured.out[: captured.out.index("Detail:")]
    assert "…" not in leaderboard and captured.err == ""
    assert max(map(len, lines[1:])) <= 80 and len(lines) < 150
    for measure in TREC_COMPARE_MEASURES:
        assert any(line.startswith(f"│ {measure} ") for line in lines), measure  # metrics down the side
    assert "every metric: 20 queries" in " ".join(captured.out.split())
    assert main([*args, "-m", "P", "--json"]) == 0  # asked for: trec_eval's P family, as before
    assert "P_1000" in {row["metric"] for row in json.loads(capsys.readouterr().out)["comparison"]}


def test_a_wide_leaderboard_is_transposed_and_never_cuts_a_system_name():
    import io

    import pandas as pd
    from rich.console import Console

    from ltr.analysis.comparison import compare
    from ltr.report.tables import leaderboard_table

    q = [f"q{i}" for i in range(25)]
    rng = np.random.default_rng(0)
    metrics = [f"ndcg@{k}" for k in (1, 3, 5, 10, 20)]
    names = ["bm25", "lambdamart_with_a_long_descriptive_name"]
    rep = compare(
        {n: pd.DataFrame(rng.random((25, 5)), index=q, columns=metrics) for n in names}, baseline="bm25", B=50
    )
    for width, transposed in ((80, True), (400, False)):
        console = Console(width=width, file=io.StringIO(), record=True)
        console.print(leaderboard_table(rep, width=width))
        text = console.export_text()
        assert "…" not in text and "lambdamart_with_a_long_descriptive_name" in text
        header = text.splitlines()[1]
        assert ("metric" in header) is transposed
