"""benchmarks/bench_parser.py and ``benchmarks/bench_metrics.py --paths`` run end to end on tiny inputs."""

from __future__ import annotations

import subprocess
import sys

import pytest
from helpers import PROJECT_ROOT

from ltr.data.textgen import write_letor_text


@pytest.mark.slow  # two processes importing XGBoost and LightGBM, a parse per loader: ~15 s
def test_a_tiny_parser_run_times_the_default_call_beside_xgboost(tmp_path):
    path = write_letor_text(tmp_path / "train.txt", n_queries=20, docs_per_query=10, n_features=136, seed=1)
    proc = subprocess.run(
        [sys.executable, "benchmarks/bench_parser.py", str(path), "--threads", "1", "--repeats", "1",
         "--skip", "compile", "lightgbm", "sklearn", "memory"],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    rows = [line.split("|")[1].strip() for line in proc.stdout.splitlines() if line.startswith("| ")]
    assert "ltr load_svmlight, n_features counted from the file" in rows
    assert any(row.startswith("XGBoost DMatrix") for row in rows)


@pytest.mark.slow  # one process, every metric path on 2,000 rows: ~10 s
def test_a_tiny_metric_paths_run_rates_each_path_against_ndcg_at_10():
    proc = subprocess.run(
        [sys.executable, "benchmarks/bench_metrics.py", "--paths", "--queries", "200", "--docs", "10",
         "--repeats", "1"],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    rows = {line.split("|")[1].strip(): line.split("|")[2:] for line in proc.stdout.splitlines() if "| " in line}
    assert rows["ndcg@10 (preset ltr)"][1].strip() == "1.00x"  # the base is NDCG@10's own row
    assert {"map (full depth)", "map, preset trec (docno ties)"} <= set(rows)
