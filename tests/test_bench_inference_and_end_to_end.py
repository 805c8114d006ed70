"""benchmarks/bench_inference.py and benchmarks/bench_train_end_to_end.py run end to end on tiny inputs."""

from __future__ import annotations

import subprocess
import sys

import pytest
from helpers import PROJECT_ROOT


@pytest.mark.slow  # a small model, two exports (one compiled) and three scoring paths: ~20 s
def test_a_tiny_inference_run_checks_every_path_against_lightgbm(tmp_path):
    proc = subprocess.run(
        [sys.executable, "benchmarks/bench_inference.py", "--dir", str(tmp_path), "--queries", "120",
         "--trees", "5", "--leaves", "7", "--rows", "3000", "--repeats", "1", "--threads", "1"],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "c: max |score - LightGBM's| 0.00e+00" in proc.stdout  # the library is LightGBM's scores
    rows = [line.split("|")[1].strip() for line in proc.stdout.splitlines() if line.startswith("| ")]
    assert rows[1:] == ["lightgbm", "onnx", "c"]


@pytest.mark.slow  # one ltr.train process and one plain LightGBM script on a 1 MB file: ~15 s
def test_a_tiny_end_to_end_run_prints_the_ratio(tmp_path):
    proc = subprocess.run(
        [sys.executable, "benchmarks/bench_train_end_to_end.py", "--sizes", "1", "--rounds", "3",
         "--repeats", "1", "--engines", "lightgbm", "--dir", str(tmp_path)],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (row,) = [line for line in proc.stdout.splitlines() if line.startswith("| lightgbm")]
    ours, theirs, ratio = (float(cell.strip().rstrip("x")) for cell in row.split("|")[3:6])
    assert ours > 0 and theirs > 0 and ratio == pytest.approx(ours / theirs, rel=0.01)
    assert (tmp_path / "1MB" / "train.lgb.query").is_file()  # LightGBM's form of the same file
