"""Scoring speed of every exported path of a large LambdaMART against LightGBM's own predict (issue 29, item 6).

The model is :mod:`bench_export_memory`'s (500 trees × 63 leaves by default, trained on MSLR-like
synthetic data, NOT real data; or ``--model``). ``ltr.export`` writes it as ONNX and as compiled C
(``--format c``: C source and a shared library built with the system compiler; the export's
compile time is reported); then ``--rows`` rows (the test file's rows, repeated) are scored, one
thread each, alternating the paths each repeat:

* ``lightgbm``: ``Booster.predict(X, num_threads=1)`` on the model's own file (float32 rows);
* ``onnx``: onnxruntime 1 intra-op thread, sequential execution;
* ``c``: the library's ``ltr_predict`` through ctypes (one call for all rows);
* ``lleaves`` (with ``--lleaves-python``: an interpreter with lleaves installed, which pins llvmlite
  below 0.45 where numba, in ltr's environment, needs a newer one): lleaves compiles LightGBM's own
  model file once (its compile time reported; later repeats load its cache) and ``predict(X,
  n_jobs=1)`` runs in that child process, timed there, once per repeat in the alternation.

Every path's scores are checked against LightGBM's first (max |difference|). Medians of wall and CPU
seconds over ``--repeats``; run it alone on a quiet machine:

    .venv/bin/python benchmarks/bench_inference.py --rows 1000000 --repeats 3
    python3.11 -m venv /tmp/lleaves && /tmp/lleaves/bin/pip install lleaves 'llvmlite<0.45' lightgbm
    .venv/bin/python benchmarks/bench_inference.py --rows 1000000 --repeats 3 --lleaves-python /tmp/lleaves/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent))

from bench_export_memory import add_model_arguments, large_model  # noqa: E402

from ltr.data.svmlight import load_svmlight  # noqa: E402
from ltr.export.targets import compiled  # noqa: E402
from ltr.models import load_ranker  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_model_arguments(parser)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--lleaves-python", type=Path, help="an interpreter with lleaves (see above)")
    return parser.parse_args(argv)


def exported(model: Path, fmt: str, out: Path) -> float:
    """Export ``model`` in ``fmt`` to ``out`` (parity-checked by ltr.export); the wall seconds it took."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "ltr.export", str(model), "--format", fmt, "--out", str(out)],
        capture_output=True, text=True, cwd=BENCH.parent, check=False,
    )  # fmt: skip
    if done.returncode:
        raise SystemExit(f"ltr.export --format {fmt} failed:\n{done.stderr}{done.stdout}")
    print(
        "\n".join(f"  {line}" for line in done.stdout.splitlines() if "compiled" in line or "parity" in line)
    )
    return time.perf_counter() - start


#: the lleaves child: compile (or load the cache), predict once with one thread, report times as JSON
LLEAVES = """
import json, sys, time
import numpy as np
import lleaves
model_file, cache, rows, scores = sys.argv[1:5]
model = lleaves.Model(model_file=model_file)
start = time.perf_counter()
model.compile(cache=cache)
compiled = time.perf_counter() - start
X = np.load(rows)
wall, cpu = time.perf_counter(), time.process_time()
out = model.predict(X, n_jobs=1)
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
np.save(scores, out)
print(json.dumps({"compile": compiled, "wall": wall, "cpu": cpu}))
"""


def lleaves_run(
    python: Path, model_file: Path, folder: Path, X: np.ndarray
) -> tuple[float, float, float, np.ndarray]:
    """``(compile or cache-load s, predict wall s, predict CPU s, scores)`` of one lleaves child."""
    rows, scores = folder / "rows.npy", folder / "lleaves_scores.npy"
    if not rows.exists():
        np.save(rows, X)
    done = subprocess.run(
        [str(python), "-c", LLEAVES, str(model_file), str(folder / "lleaves.cache"), str(rows), str(scores)],
        capture_output=True, text=True, check=False, env={**os.environ, "OMP_NUM_THREADS": "1"},
    )  # fmt: skip
    if done.returncode:
        raise SystemExit(f"lleaves failed:\n{done.stderr[-3000:]}")
    times = json.loads(done.stdout.strip().splitlines()[-1])
    return times["compile"], times["wall"], times["cpu"], np.load(scores)


def timed(fn) -> tuple[float, float, np.ndarray]:
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, out


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    model, data = large_model(args)
    ranker = load_ranker(model)
    test = load_svmlight(data / "test.txt", n_features=136, dtype="float32")
    base = np.asarray(test.X.toarray() if test.is_sparse else test.X, dtype=np.float32)
    X = np.ascontiguousarray(np.resize(base, (args.rows, base.shape[1])))
    print(
        f"machine: nproc {os.cpu_count()}, load average {os.getloadavg()[0]:.2f}; {X.shape[0]:,} rows × {X.shape[1]}"
    )
    seconds = {fmt: exported(model, fmt, args.dir / f"model.{fmt}") for fmt in ("onnx", "c")}
    print(f"export + parity check: onnx {seconds['onnx']:.1f} s, c {seconds['c']:.1f} s (compile included)")

    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = 1, 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    session = ort.InferenceSession(str(args.dir / "model.onnx"), options, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    predict_c = compiled.load(compiled.library_path(args.dir / "model.c"))

    def c_scores() -> np.ndarray:
        out = np.empty(X.shape[0])
        predict_c(X.ctypes.data, X.shape[0], out.ctypes.data)
        return out

    paths = {
        "lightgbm": lambda: ranker.booster_.predict(X, num_threads=1),
        "onnx": lambda: np.asarray(session.run(None, {name: X})[0], dtype=np.float64).ravel(),
        "c": c_scores,
    }
    if args.lleaves_python is not None:
        (args.dir / "lleaves.cache").unlink(missing_ok=True)
        compile_s, _, _, _ = lleaves_run(args.lleaves_python, model / "model.txt", args.dir, X)
        print(f"lleaves compile of model.txt: {compile_s:.1f} s")

        def lleaves_scores() -> tuple[float, float, np.ndarray]:
            _, wall, cpu, scores = lleaves_run(args.lleaves_python, model / "model.txt", args.dir, X)
            return wall, cpu, scores

    times: dict[str, list[tuple[float, float]]] = {p: [] for p in paths}
    if args.lleaves_python is not None:
        times["lleaves"] = []
    reference = None
    for r in range(args.repeats):
        for path in list(times)[r % len(times) :] + list(times)[: r % len(times)]:
            wall, cpu, scores = lleaves_scores() if path == "lleaves" else timed(paths[path])
            times[path].append((wall, cpu))
            if path == "lightgbm" and reference is None:
                reference = scores
            if r == 0 and reference is not None and path != "lightgbm":
                print(f"  {path}: max |score - LightGBM's| {np.abs(scores - reference).max():.2e}")
    native = statistics.median(c for _, c in times["lightgbm"])
    print("| path | wall s | CPU s | CPU vs LightGBM |")
    print("|---|---:|---:|---:|")
    for path, runs in times.items():
        wall, cpu = statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs)
        print(f"| {path} | {wall:.2f} | {cpu:.2f} | {native / cpu:.2f}x faster |")


if __name__ == "__main__":
    main()
