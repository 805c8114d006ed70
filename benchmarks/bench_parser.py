"""SVMlight parser benchmark: ltr's loader vs XGBoost's C++ text loader, scikit-learn and LightGBM.

All on the same file, in one run, with the same thread count:

* ltr ``load_svmlight`` (numba; warm = compiled code already in the on-disk cache), median of repeats;
  the first-call cost (compiling from an empty numba cache, in a fresh process) is reported apart;
* XGBoost ``DMatrix("file?format=libsvm", nthread=T)`` (its C++ text parser);
* scikit-learn ``load_svmlight_file`` (single-threaded) — on a leading slice of ``--sklearn-mb`` MB
  (cut at a line end) and extrapolated linearly to the whole file, because it runs at ~7 MB/s;
* LightGBM ``Dataset(file).construct()`` on a qid-stripped copy plus a ``.query`` file (it rejects
  ``qid:``); this includes LightGBM's binning, so it is not a pure parse;
* peak memory of ltr's loader in a fresh process (peak RSS above the post-import baseline, and
  tracemalloc's peak) against the bytes of the arrays it returns;
* the binary cache: first load (parse + write) and memory-mapped reload (with checksum checks).

Usage (the file is not part of the repository; generate it first)::

    python -m ltr.data synth /tmp/ltrbench --queries 3300 --docs-per-query 120 --seed 1
    python benchmarks/bench_parser.py /tmp/ltrbench/train.txt --threads 2 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]


def _median_time(fn, repeats: int) -> tuple[float, list[float]]:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), times


def _run_child(code: str, env: dict | None = None) -> dict:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=HERE,
                         env={**os.environ, **(env or {})}, timeout=3600)  # fmt: skip
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def first_call_compile(path: Path, threads: int) -> dict:
    """Import + first call in a fresh process with an empty numba cache (compiles everything)."""
    code = """
import json, time
t0 = time.perf_counter()
from ltr.data.svmlight import load_svmlight
t1 = time.perf_counter()
import tempfile, pathlib
p = pathlib.Path(tempfile.mkdtemp()) / "tiny.txt"
p.write_text("1 qid:1 1:0.5 2:1\\n0 qid:1 1:0.25\\n")
load_svmlight(p, engine="numba")
t2 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "first_call_s": t2 - t1}))
"""
    with tempfile.TemporaryDirectory() as cache:
        return _run_child(code, {"NUMBA_CACHE_DIR": cache, "NUMBA_NUM_THREADS": str(threads)})


def memory_profile(path: Path, threads: int, n_features: int) -> dict:
    """Peak RSS and tracemalloc peak of one parse in a fresh process, vs the bytes of the result."""
    code = f"""
import json, tracemalloc, tempfile, pathlib, numpy as np
from ltr.data.svmlight import load_svmlight
p = pathlib.Path(tempfile.mkdtemp()) / "tiny.txt"
p.write_text("1 qid:1 1:0.5 2:1\\n0 qid:1 1:0.25\\n")
load_svmlight(p, engine="numba", n_features=2)  # warm: load compiled code, start threads
def status_kb(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])
def rss_kb():
    return status_kb("VmRSS")
def hwm_kb():
    return status_kb("VmHWM")
base = rss_kb()
tracemalloc.start()
import ltr.data._fastparse as F
raw_d = load_svmlight({str(path)!r}, engine="numba", n_features={n_features})
_, tm_peak = tracemalloc.get_traced_memory()
tracemalloc.stop()
peak = hwm_kb()  # VmHWM: ru_maxrss would carry the parent's peak across exec
X = raw_d.X
nbytes = (X.data.nbytes + X.indices.nbytes + X.indptr.nbytes) if raw_d.is_sparse else X.nbytes
nbytes += raw_d.y.nbytes + raw_d.qid.nbytes + raw_d.offsets.nbytes
print(json.dumps({{"baseline_rss_mb": base / 1024, "peak_rss_mb": peak / 1024,
                  "peak_above_baseline_mb": (peak - base) / 1024, "tracemalloc_peak_mb": tm_peak / 2**20,
                  "result_mb": nbytes / 2**20, "chunk_buffer_mb": F.CHUNK / 2**20,
                  "rows": int(raw_d.n_docs), "sparse": bool(raw_d.is_sparse)}}))
"""
    return _run_child(code, {"NUMBA_NUM_THREADS": str(threads)})


def sklearn_slice(path: Path, mb: float) -> dict:
    from sklearn.datasets import load_svmlight_file

    size = path.stat().st_size
    if mb <= 0 or mb * 1e6 >= size:  # the whole file, no extrapolation (about a minute at 500 MB)
        t = time.perf_counter()
        load_svmlight_file(str(path), query_id=True, zero_based=False, dtype="float32")
        took = time.perf_counter() - t
        return {"slice_mb": size / 1e6, "slice_s": took, "extrapolated_s": took, "whole_file": True}
    with open(path, "rb") as f:
        head = f.read(int(mb * 1e6))
    head = head[: head.rfind(b"\n") + 1]
    with tempfile.NamedTemporaryFile(suffix=".txt", delete=False) as tmp:
        tmp.write(head)
    try:
        t = time.perf_counter()
        load_svmlight_file(tmp.name, query_id=True, zero_based=False, dtype="float32")
        took = time.perf_counter() - t
    finally:
        os.unlink(tmp.name)
    return {"slice_mb": len(head) / 1e6, "slice_s": took, "extrapolated_s": took * size / len(head)}


def lightgbm_prepare(path: Path, workdir: Path) -> Path:
    """A qid-free copy (LightGBM rejects qid:) plus the .query group-size file, outside the timing."""
    from ltr.data.svmlight import load_svmlight

    d = load_svmlight(path, engine="numba")
    out = workdir / "lgb.txt"
    with open(path, "rb") as src, open(out, "wb") as dst:
        for line in src:
            a, _, rest = line.partition(b" ")
            dst.write(a + b" " + rest.split(b" ", 1)[1] if rest.startswith(b"qid:") else line)
    Path(str(out) + ".query").write_text("\n".join(map(str, d.group_sizes.tolist())) + "\n")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file", type=Path)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument(
        "--sklearn-mb",
        type=float,
        default=40.0,
        help="time scikit-learn on this leading slice; 0 = whole file",
    )
    ap.add_argument("--n-features", type=int, default=136)
    ap.add_argument(
        "--skip", nargs="*", default=[], help="peers to skip: xgboost lightgbm sklearn memory compile"
    )
    args = ap.parse_args()
    os.environ.setdefault("NUMBA_NUM_THREADS", str(args.threads))

    import lightgbm as lgb
    import xgboost as xgb

    from ltr.data.svmlight import load_svmlight

    path = args.file.resolve()
    size_mb = path.stat().st_size / 1e6
    res: dict = {"file": str(path), "file_mb": size_mb, "threads": args.threads, "repeats": args.repeats}
    cpu = next(
        (
            ln.split(":", 1)[1].strip()
            for ln in Path("/proc/cpuinfo").read_text().splitlines()
            if ln.startswith("model name")
        ),
        "?",
    )
    res["machine"] = {"nproc": os.cpu_count(), "cpu": cpu, "python": platform.python_version(),
                      "loadavg_start": os.getloadavg()}  # fmt: skip

    if "compile" not in args.skip:
        res["ltr_first_call"] = first_call_compile(path, args.threads)
    load_svmlight(path, engine="numba", n_features=args.n_features)  # warm the page cache and the code
    runners = {
        "ltr": lambda: load_svmlight(path, engine="numba", n_features=args.n_features),
        # the default call: the column count read from the file (each line's last index)
        "ltr_counted": lambda: load_svmlight(path, engine="numba"),
    }
    if "xgboost" not in args.skip:

        def xgb_load():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return xgb.DMatrix(f"{path}?format=libsvm", nthread=args.threads)

        runners["xgboost"] = xgb_load
    wd = tempfile.TemporaryDirectory(dir=path.parent)
    if "lightgbm" not in args.skip:
        lgb_file = lightgbm_prepare(path, Path(wd.name))
        params = {"num_threads": args.threads, "verbose": -1}
        runners["lightgbm"] = lambda: lgb.Dataset(str(lgb_file), params=params).construct()
    # interleave the loaders round by round, so a busy machine slows them alike
    times: dict[str, list[float]] = {k: [] for k in runners}
    for _ in range(args.repeats):
        for name, fn in runners.items():
            t = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
    wd.cleanup()
    for name, ts in times.items():
        res[f"{name}_s"], res[f"{name}_all"] = statistics.median(ts), ts
    if "sklearn" not in args.skip:
        res["sklearn"] = sklearn_slice(path, args.sklearn_mb)
    if "memory" not in args.skip:
        res["memory"] = memory_profile(path, args.threads, args.n_features)
    with tempfile.TemporaryDirectory(dir=path.parent) as cache:
        t = time.perf_counter()
        load_svmlight(path, engine="numba", n_features=args.n_features, cache_dir=cache)
        res["cache_first_s"] = time.perf_counter() - t
        res["cache_reload_s"], res["cache_reload_all"] = _median_time(
            lambda: load_svmlight(path, engine="numba", n_features=args.n_features, cache_dir=cache),
            args.repeats,
        )
    res["machine"]["loadavg_end"] = os.getloadavg()

    print(json.dumps(res, indent=1))
    ltr = res["ltr_s"]
    print("\n| loader | median s | MB/s | ltr speed-up |\n|---|---|---|---|")
    print(f"| ltr load_svmlight (numba, {args.threads} threads) | {ltr:.2f} | {size_mb / ltr:.0f} | 1.0x |")
    counted = res["ltr_counted_s"]
    print(
        f"| ltr load_svmlight, n_features counted from the file | {counted:.2f} | {size_mb / counted:.0f} "
        f"| {counted / ltr:.2f}x |"
    )
    if "xgboost_s" in res:
        x = res["xgboost_s"]
        print(
            f"| XGBoost DMatrix text loader ({args.threads} threads) | {x:.2f} | {size_mb / x:.0f} | {x / ltr:.2f}x |"
        )
    if "lightgbm_s" in res:
        lg = res["lightgbm_s"]
        print(
            f"| LightGBM Dataset.construct (.query, incl. binning) | {lg:.2f} | {size_mb / lg:.0f} | {lg / ltr:.2f}x |"
        )
    if "sklearn" in res:
        s = res["sklearn"]
        how = (
            "whole file, one run"
            if s.get("whole_file")
            else f"extrapolated from {s['slice_mb']:.0f} MB: {s['slice_s']:.2f} s"
        )
        print(
            f"| scikit-learn load_svmlight_file ({how}) "
            f"| {s['extrapolated_s']:.1f} | {size_mb / s['extrapolated_s']:.1f} | {s['extrapolated_s'] / ltr:.1f}x |"
        )
    print(
        f"| ltr cache reload (memory-mapped, checksums verified) | {res['cache_reload_s']:.3f} | "
        f"{size_mb / res['cache_reload_s']:.0f} | parse/reload {ltr / res['cache_reload_s']:.0f}x |"
    )
    if "memory" in res:
        m = res["memory"]
        print(
            f"\nmemory: peak RSS above baseline {m['peak_above_baseline_mb']:.0f} MB, tracemalloc peak "
            f"{m['tracemalloc_peak_mb']:.0f} MB, result arrays {m['result_mb']:.0f} MB "
            f"(ratio {m['peak_above_baseline_mb'] / m['result_mb']:.2f}; chunk buffer {m['chunk_buffer_mb']:.0f} MB)"
        )
    if "ltr_first_call" in res:
        f = res["ltr_first_call"]
        print(
            f"first call with an empty numba cache: import {f['import_s']:.1f} s + compile/first parse "
            f"{f['first_call_s']:.1f} s"
        )


if __name__ == "__main__":
    main()
