"""``python -m ltr.train`` end to end against the plain engine script a user would write, same files.

For each size (MB of the training file; validation and test files a third of it each) the script
writes MSLR-shaped LETOR files (136 features with six significant digits, MSLR's label shares; seeded,
NOT real data) in two spellings of the same numbers: with ``qid:`` tokens (XGBoost's and ltr's
reader) and without, beside ``FILE.query`` sidecars (LightGBM's text loader; ltr reads that form too).
Then, per engine, it runs as child processes, alternating their order each repeat:

* ``ltr``: ``python -m ltr.train +model=lambdamart`` (or ``lambdamart_xgb``) ``data=svmlight`` on the
  files, ``tracking=none``, the given rounds with early stopping out of reach (``patience`` > rounds),
  everything else at ltr's defaults (train/valid/test evaluated, bootstrap CIs on test, the console
  report);
* ``plain``: the engine's own loader on the same files, ``train`` with the parameters ltr hands the
  engine (the same rounds, NDCG@10 on the validation file every round, as ltr's early stopping
  computes its metric), then the test file's NDCG@10: what a user's script does.

The figure is the ratio of the children's CPU seconds (user + system, ``os.wait4``), medians over
``--repeats``; engines pinned to ``--threads``. Run alone on a quiet machine:

    .venv/bin/python benchmarks/bench_train_end_to_end.py --sizes 50 --rounds 100 --repeats 3
    .venv/bin/python benchmarks/bench_train_end_to_end.py --sizes 50 150 501 --rounds 100 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ltr.models import build_ranker  # noqa: E402

N_FEATURES = 136
LABEL_SHARES = [0.515, 0.325, 0.134, 0.018, 0.008]
MODELS = {"lightgbm": "lambdamart", "xgboost": "lambdamart_xgb"}

PLAIN = {
    "lightgbm": textwrap.dedent(
        """
        import json, sys
        import lightgbm as lgb
        files, params = json.loads(sys.argv[1]), json.loads(sys.argv[2])
        params = dict(params, metric="ndcg", eval_at=[10])
        train = lgb.Dataset(files["train"], params=params)
        valid = lgb.Dataset(files["valid"], reference=train)
        booster = lgb.train(
            params, train, num_boost_round=int(params["num_iterations"]), valid_sets=[valid], keep_training_booster=True
        )
        test = lgb.Dataset(files["test"], reference=train)
        print(booster.eval(test, "test"))
        """
    ),
    "xgboost": textwrap.dedent(
        """
        import json, sys
        import xgboost as xgb
        files, params = json.loads(sys.argv[1]), json.loads(sys.argv[2])
        rounds = int(params.pop("num_boost_round"))
        params = dict(params, eval_metric="ndcg@10")
        train = xgb.DMatrix(files["train"] + "?format=libsvm")
        valid = xgb.DMatrix(files["valid"] + "?format=libsvm")
        booster = xgb.train(params, train, num_boost_round=rounds, evals=[(valid, "valid")], verbose_eval=False)
        print(booster.eval(xgb.DMatrix(files["test"] + "?format=libsvm"), "test"))
        """
    ),
}


def write_split(folder: Path, name: str, megabytes: float, seed: int) -> dict[str, Path]:
    """``name.txt`` (``qid:``) and ``name.lgb`` + ``name.lgb.query`` with the same numbers, about
    ``megabytes`` each; MSLR-like query sizes (log-normal, mean ≈ 120)."""
    rng = np.random.default_rng(seed)
    weights = rng.normal(size=12)
    paths = {"letor": folder / f"{name}.txt", "plain": folder / f"{name}.lgb"}
    sizes: list[int] = []
    written, qid = 0, 0
    with paths["letor"].open("w") as letor, paths["plain"].open("w") as plain:
        while written < megabytes * 1e6:
            n = int(np.clip(rng.lognormal(4.3, 0.9), 1, 1251))
            X = rng.lognormal(0.0, 1.5, size=(n, N_FEATURES)) * (rng.random((n, N_FEATURES)) < 0.8)
            latent = np.log1p(X[:, :12]) @ weights + rng.normal(0, 1.0, n)
            y = np.searchsorted(np.quantile(latent, np.cumsum(LABEL_SHARES)[:-1]), latent)
            for label, row in zip(y, X, strict=True):
                feats = " ".join(f"{j + 1}:{v:.6g}" for j, v in enumerate(row) if v != 0.0)
                letor.write(f"{label} qid:{qid} {feats}\n")
                line = f"{label} {feats}\n"
                plain.write(line)
                written += len(line)
            sizes.append(n)
            qid += 1
    (folder / f"{name}.lgb.query").write_text("\n".join(map(str, sizes)) + "\n")
    return paths


def engine_params(model: str, rounds: int, threads: int) -> dict:
    """The parameters ltr hands the engine for this model, from a fit on a few rows."""
    from ltr.data import RankingData

    rng = np.random.default_rng(0)
    data = RankingData(X=rng.random((60, 3)), y=rng.integers(0, 3, 60), qid=np.repeat(np.arange(6), 10))
    ranker = build_ranker({"name": model, "params": {"n_trees": rounds}}, seed=42, num_threads=threads)
    params = dict(ranker.fit(data).engine_params_)
    return {k: v for k, v in params.items() if isinstance(v, (int, float, str, list, bool)) or v is None}


def child_cpu(cmd: list[str], env: dict[str, str]) -> float:
    """Run ``cmd``; its CPU seconds (user + system, children included), or exit with its output."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
    out = proc.stdout.read() if proc.stdout is not None else b""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd[:4])} … failed ({proc.returncode}):\n{out.decode(errors='replace')[-3000:]}")
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=float, nargs="+", default=[50.0], help="training file sizes, MB")
    ap.add_argument("--engines", nargs="+", default=list(MODELS), choices=list(MODELS))
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dir", type=Path, help="keep the generated files here (default: a temporary folder)")
    args = ap.parse_args()
    threads = str(args.threads)
    env = {**os.environ, "OMP_NUM_THREADS": threads, "NUMBA_NUM_THREADS": threads, "LTR_ROOT": ""}
    print(f"load average at start: {os.getloadavg()[0]:.2f}; {len(os.sched_getaffinity(0))} CPUs")
    print("| engine | train file | ltr CPU s | plain CPU s | ltr / plain |")
    print("|---|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory(prefix="ltr-e2e-") as tmp:
        base = args.dir or Path(tmp)
        env["LTR_ROOT"] = str(base)
        for size in args.sizes:
            folder = base / f"{size:g}MB"
            folder.mkdir(parents=True, exist_ok=True)
            files = {
                name: write_split(folder, name, size / (1 if name == "train" else 3), seed)
                for seed, name in enumerate(("train", "valid", "test"))
            }
            for engine in args.engines:
                model = MODELS[engine]
                form = "plain" if engine == "lightgbm" else "letor"
                paths = {name: str(f[form]) for name, f in files.items()}
                ltr_cmd = [
                    sys.executable, "-m", "ltr.train", f"+model={model}", "data=svmlight",
                    *(f"data.{s}={p}" for s, p in paths.items()), "tracking=none", f"num_threads={threads}",
                    f"model.params.n_trees={args.rounds}", f"model.early_stopping.patience={args.rounds + 1}",
                ]  # fmt: skip
                params = engine_params(model, args.rounds, args.threads)
                plain_cmd = [sys.executable, "-c", PLAIN[engine], json.dumps(paths), json.dumps(params)]
                times: dict[str, list[float]] = {"ltr": [], "plain": []}
                for r in range(args.repeats):
                    order = ("ltr", "plain") if r % 2 == 0 else ("plain", "ltr")
                    for who in order:
                        times[who].append(child_cpu(ltr_cmd if who == "ltr" else plain_cmd, env))
                ours, theirs = statistics.median(times["ltr"]), statistics.median(times["plain"])
                mb = paths["train"]
                print(
                    f"| {engine} | {Path(mb).stat().st_size / 1e6:.0f} MB | {ours:.2f} | {theirs:.2f} | "
                    f"{ours / theirs:.3f}x |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
