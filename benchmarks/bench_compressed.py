"""Compressed-input benchmark: parsing a gzipped SVMlight file against decompression + plain parse.

In one run, on the same file, with pinned thread counts, the measurements interleaved round by round
(so a busy machine slows them alike), median of ``--repeats`` rounds:

* (a) decompression alone: ``gzip -dc FILE > /dev/null`` (the system tool, its own process) and
  Python's zlib streaming through ltr's own reader (:func:`ltr.io.compression.open_input`, 16 MB reads);
* (b) plain parse: ``load_svmlight(train.txt)`` (numba engine, memory-mapped windows, two passes);
* (c) compressed parse: ``load_svmlight(train.txt.gz)`` (one pass over the decompressed stream,
  decompression in a thread overlapping the parse);
* CPU seconds (user + system, all threads) of each, which a shared machine disturbs less than wall time;
* peak RSS (``ru_maxrss``) of (b) and (c), each in a fresh process, against the post-import baseline
  and the bytes of the arrays returned.

Targets (issue 11, item 5): (c) ≤ (a) + (b), and peak(c) within the plain parse's bound: the
result's arrays + one 32 MB chunk window + a fixed overhead, i.e. peak(c) − baseline ≤ peak(b) −
baseline + 32 MB (the compressed parse keeps two 16 MB chunk buffers instead of one 32 MB window).

Usage (the file is not part of the repository)::

    python benchmarks/bench_compressed.py --workdir /tmp/ltrbench --threads 1 --repeats 5
    python benchmarks/bench_compressed.py /tmp/ltrbench/train.txt --threads 2 --repeats 5

Without a path, ``python -m ltr.data synth WORKDIR --queries 3300 --docs-per-query 120 --seed 1``
writes a ~534 MB ``train.txt``; ``gzip -6`` (or Python's gzip at level 6) writes ``train.txt.gz``
next to it unless it exists and is newer.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]


def _cpu_self() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def prepare(args: argparse.Namespace) -> tuple[Path, Path]:
    """The plain file (generated when not given) and its gzip copy (level 6)."""
    if args.path is None:
        work = Path(args.workdir)
        plain = work / "train.txt"
        if not plain.exists():
            subprocess.run([sys.executable, "-m", "ltr.data", "synth", str(work), "--queries", "3300",
                            "--docs-per-query", "120", "--seed", "1"], check=True, cwd=HERE)  # fmt: skip
    else:
        plain = Path(args.path)
    packed = Path(str(plain) + ".gz")
    if not packed.exists() or packed.stat().st_mtime < plain.stat().st_mtime:
        tmp = packed.with_suffix(".gz.tmp")
        if shutil.which("gzip"):
            with open(tmp, "wb") as out:
                subprocess.run(["gzip", "-6", "-c", str(plain)], stdout=out, check=True)
        else:
            with open(plain, "rb") as src, gzip.open(tmp, "wb", compresslevel=6) as out:
                shutil.copyfileobj(src, out, 1 << 24)
        tmp.replace(packed)
    return plain, packed


def decompress_python(path: Path) -> int:
    """Stream the decompressed bytes through ltr's reader into one reused 16 MB buffer."""
    import numpy as np

    from ltr.io.compression import open_input

    buf = memoryview(np.empty(16 << 20, dtype=np.uint8))
    total = 0
    with open_input(path) as f:
        while got := f.readinto(buf):
            total += got
    return total


def decompress_gzip_tool(path: Path) -> None:
    with open(os.devnull, "wb") as null:
        subprocess.run(["gzip", "-dc", str(path)], stdout=null, check=True)


PEAK = """
import json, resource, sys, tempfile, pathlib
from ltr.data.svmlight import load_svmlight
import gzip
tiny = b"1 qid:1 1:0.5 2:1\\n0 qid:1 1:0.25\\n"
d = pathlib.Path(tempfile.mkdtemp())
(d / "tiny.txt").write_bytes(tiny)
(d / "tiny.txt.gz").write_bytes(gzip.compress(tiny))
for name in ("tiny.txt", "tiny.txt.gz"):  # warm: load the compiled code of both paths, start threads
    load_svmlight(d / name, n_threads={threads})
def hwm():
    status = pathlib.Path("/proc/self/status").read_text()
    return int(next(ln.split()[1] for ln in status.splitlines() if ln.startswith("VmHWM:")))
base, base_hwm = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, hwm()
d = load_svmlight({path!r}, n_threads={threads})
peak, peak_hwm = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, hwm()
X = d.X
nbytes = d.y.nbytes + d.qid.nbytes + (X.nbytes if hasattr(X, "nbytes") else X.data.nbytes + X.indices.nbytes + X.indptr.nbytes)
print(json.dumps({{"baseline_mb": base / 1024, "peak_mb": peak / 1024, "vmhwm_baseline_mb": base_hwm / 1024,
                  "vmhwm_peak_mb": peak_hwm / 1024, "result_mb": nbytes / 2**20}}))
"""


def peak_rss(path: Path, threads: int) -> dict:
    """ru_maxrss of one load in a fresh process (after importing and warming the code on a tiny file).

    Linux carries ``ru_maxrss`` over ``fork`` + ``exec`` from the parent's resident size, so this runs
    before the parent loads anything (the parent is then a few tens of MB); the child also reports
    ``VmHWM`` from ``/proc/self/status`` (the peak of its own address space, reset by ``exec``).
    """
    env = {**os.environ, "NUMBA_NUM_THREADS": str(threads), "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", PEAK.format(path=str(path), threads=threads)],
                         capture_output=True, text=True, cwd=HERE, env=env, check=False)  # fmt: skip
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("path", nargs="?", help="a plain SVMlight file (default: generate one in --workdir)")
    ap.add_argument("--workdir", default="/tmp/ltrbench", help="where the generated file goes")
    ap.add_argument("--threads", type=int, default=1, help="numba parser threads (pinned)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args()
    os.environ["NUMBA_NUM_THREADS"] = str(max(args.threads, 1))
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    plain, packed = prepare(args)
    peaks = {"peak_plain": peak_rss(plain, args.threads), "peak_gzip": peak_rss(packed, args.threads)}
    sys.path.insert(0, str(HERE))
    from ltr.data.svmlight import load_svmlight  # after the fresh-process peaks: see peak_rss

    cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("model name")), platform.processor())  # fmt: skip
    res: dict = {
        "machine": {
            "nproc": os.cpu_count(),
            "cpu": cpu,
            "python": platform.python_version(),
            "loadavg_start": os.getloadavg(),
        },  # fmt: skip
        "files": {"plain_mb": plain.stat().st_size / 1e6, "gzip_mb": packed.stat().st_size / 1e6},
        "threads": args.threads,
    }
    load_svmlight(plain, n_threads=args.threads)  # warm the page cache and the compiled code
    load_svmlight(packed, n_threads=args.threads)
    runs = {
        "a_gzip_tool": (lambda: decompress_gzip_tool(packed), _cpu_children),
        "a_python_zlib": (lambda: decompress_python(packed), _cpu_self),
        "b_plain_parse": (lambda: load_svmlight(plain, n_threads=args.threads), _cpu_self),
        "c_gzip_parse": (lambda: load_svmlight(packed, n_threads=args.threads), _cpu_self),
    }
    if not shutil.which("gzip"):
        del runs["a_gzip_tool"]
    wall: dict[str, list[float]] = {k: [] for k in runs}
    cpus: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(args.repeats):  # interleaved round by round
        for name, (fn, clock) in runs.items():
            c0, t0 = clock(), time.perf_counter()
            out = fn()
            wall[name].append(time.perf_counter() - t0)
            cpus[name].append(clock() - c0)
            del out
    res["wall_s"] = {k: {"median": statistics.median(v), "rounds": v} for k, v in wall.items()}
    res["cpu_s"] = {k: {"median": statistics.median(v), "rounds": v} for k, v in cpus.items()}
    med = {k: v["median"] for k, v in res["wall_s"].items()}
    cmed = {k: v["median"] for k, v in res["cpu_s"].items()}
    for a in [k for k in runs if k.startswith("a_")]:
        res[f"c_over_{a}_plus_b"] = med["c_gzip_parse"] / (med[a] + med["b_plain_parse"])
        res[f"cpu_c_over_{a}_plus_b"] = cmed["c_gzip_parse"] / (cmed[a] + cmed["b_plain_parse"])
    res.update(peaks)
    above = {k: res[k]["peak_mb"] - res[k]["baseline_mb"] for k in ("peak_plain", "peak_gzip")}
    res["peak_above_baseline_mb"] = above
    res["vmhwm_above_baseline_mb"] = {
        k: res[k]["vmhwm_peak_mb"] - res[k]["vmhwm_baseline_mb"] for k in ("peak_plain", "peak_gzip")
    }
    res["peak_bound_mb"] = above["peak_plain"] + 32
    res["peak_target_met"] = above["peak_gzip"] <= res["peak_bound_mb"]
    res["machine"]["loadavg_end"] = os.getloadavg()
    print(json.dumps(res, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
