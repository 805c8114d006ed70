"""benchmarks/bench_export_memory.py runs end to end on a tiny model and reports the export's parity."""

from __future__ import annotations

import doctest
import subprocess
import sys

import pytest
from helpers import PROJECT_ROOT, benchmark_module


def test_doctests_of_the_script():
    assert doctest.testmod(benchmark_module("bench_export_memory")).failed == 0


@pytest.mark.slow  # synthetic data, a small LightGBM fit and two export processes: ~20 s
def test_a_tiny_run_prints_one_row_per_format(tmp_path):
    proc = subprocess.run(
        [sys.executable, "benchmarks/bench_export_memory.py", "--dir", str(tmp_path), "--queries", "120",
         "--trees", "5", "--leaves", "7", "--formats", "onnx", "lightgbm", "--threads", "1"],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    rows = [
        line
        for line in proc.stdout.splitlines()
        if line.startswith("| onnx") or line.startswith("| lightgbm")
    ]
    assert len(rows) == 2 and all("0 ranking inversions: OK" in row for row in rows)
    peaks = [float(row.split("|")[4].replace(",", "")) for row in rows]
    assert all(50 < peak < 4000 for peak in peaks)
