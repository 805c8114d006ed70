"""Time and peak memory of ``python -m ltr.export --check`` on large tree models (issue 29, item 3).

A 500-tree, 63-leaf LambdaMART was killed for memory (19 GB, twice) while checking parity: the probe
rows (two per split threshold, NaN and far values per feature: 38,084 of them) were compared as ONE
query, n² pairs in float64 arrays of 11.6 GB each. They are now compared in groups of
``ltr.export.parity.PROBE_GROUP`` rows, and every query a block of rows at a time
(``PAIR_CELLS`` pairs), so the memory no longer grows with the square of the model's size.

The script makes MSLR-like synthetic data (``python -m ltr.data synth``: 136 features; NOT real
data), trains LambdaMART with a fixed number of trees and leaves (no early stopping) unless
``--model`` names a saved one, then runs the export with ``--check`` on the test file in a child
process per format and reports its wall time, CPU time and peak RSS (the child's ``ru_maxrss``).

    .venv/bin/python benchmarks/bench_export_memory.py --trees 500 --leaves 63
    .venv/bin/python benchmarks/bench_export_memory.py --trees 2000 --leaves 255 --formats onnx lightgbm

>>> parse_args(["--trees", "5"]).leaves
63
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ltr.data.svmlight import load_svmlight  # noqa: E402
from ltr.models import build_ranker  # noqa: E402


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of :func:`large_model` (shared with bench_inference.py)."""
    parser.add_argument("--trees", type=int, default=500)
    parser.add_argument("--leaves", type=int, default=63)
    parser.add_argument("--queries", type=int, default=2400, help="synthetic queries (4/6 train, 1/6 test)")
    parser.add_argument("--dir", type=Path, default=Path("/tmp/ltr_bench_export"))
    parser.add_argument("--model", type=Path, help="a saved ltr model to export instead of training one")
    parser.add_argument("--threads", type=int, default=2, help="threads for training the model")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_model_arguments(parser)
    parser.add_argument("--formats", nargs="+", default=["onnx", "lightgbm"])
    return parser.parse_args(argv)


#: runs ``python -m MODULE ARGS`` and, at exit, prints its own peak RSS (KB) as the last stderr line: VmHWM
#: of its memory map (``ru_maxrss`` would carry the RSS the parent had when it forked it, across the exec)
MEASURED = (
    "import atexit, runpy, sys\n"
    "def peak():\n"
    "    hwm = [line.split()[1] for line in open('/proc/self/status') if line.startswith('VmHWM:')]\n"
    "    print('peak_kb', hwm[0], file=sys.stderr)\n"
    "atexit.register(peak)\n"
    "module = sys.argv[1]; sys.argv = [module, *sys.argv[2:]]\n"
    "runpy.run_module(module, run_name='__main__', alter_sys=True)\n"
)


def run(module: str, args: list[str]) -> tuple[float, float, float, str]:
    """``(wall s, CPU s, peak RSS MB, stdout)`` of ``python -m module args`` in a child process (its own
    peak: VmHWM, see :data:`MEASURED`)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", MEASURED, module, *args], capture_output=True, text=True,
                          cwd=ROOT, check=False)  # fmt: skip
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        raise SystemExit(f"python -m {module} {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    peak_kb = int(proc.stderr.strip().splitlines()[-1].split()[1])
    return wall, cpu, peak_kb / 1024, proc.stdout


def large_model(args: argparse.Namespace) -> tuple[Path, Path]:
    """``(model folder, data folder)``: ``args.model``, or a LambdaMART of ``args.trees`` × ``args.leaves``
    trained on MSLR-like synthetic data under ``args.dir`` (kept there: a second run reuses both)."""
    data = args.dir / "data"
    if not (data / "test.txt").exists():
        subprocess.run([sys.executable, "-m", "ltr.data", "synth", str(data), "--queries", str(args.queries),
                        "--splits"], check=True, cwd=ROOT, capture_output=True)  # fmt: skip
    if args.model is not None:
        return args.model, data
    model = args.dir / f"lambdamart_{args.trees}x{args.leaves}"
    if not (model / "manifest.json").exists():
        start = time.perf_counter()
        train = load_svmlight(data / "train.txt", n_features=136)
        params = {"n_trees": args.trees, "num_leaves": args.leaves, "min_data_in_leaf": 5}
        cfg = {"name": "lambdamart", "params": params, "early_stopping": {"patience": None}}
        build_ranker(cfg, seed=0, num_threads=args.threads).fit(train).save(model)
        print(f"trained {args.trees} trees × {args.leaves} leaves in {time.perf_counter() - start:.1f} s")
    return model, data


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    model, data = large_model(args)
    print(f"machine: nproc {os.cpu_count()}, load average {os.getloadavg()}")
    print("| format | wall (s) | CPU (s) | peak RSS (MB) | parity |")
    print("|---|---:|---:|---:|---|")
    for fmt in args.formats:
        out = args.dir / f"model.{fmt}"
        wall, cpu, peak, stdout = run(
            "ltr.export", [str(model), "--format", fmt, "--out", str(out), "--check", str(data / "test.txt")]
        )
        parity = next((line for line in stdout.splitlines() if line.startswith("parity:")), "")
        print(f"| {fmt} | {wall:.1f} | {cpu:.1f} | {peak:,.0f} | {parity} |")


if __name__ == "__main__":
    main()
