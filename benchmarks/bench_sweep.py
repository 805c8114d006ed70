"""Benchmark: a LambdaMART search with and without pruning, and per-trial setup with and without the
shared binned Dataset, on MSLR-WEB30K-shaped synthetic data (``bench_training_overhead.synthetic_split``).

Both searches run in this process with the same search space as
``conf/hparams_search/lambdamart_optuna.yaml`` and the same seeded sampler as ``ltr``'s sweeper
(``ltr.study.seeded_sampler``: TPE seeded ``seed + position``); each trial is a real ``ltr`` LambdaMART
fit whose ``on_iteration`` is ``ltr.pruning.PruningHook`` on the trial (the pruned search uses the
shipped median pruner: 5 startup trials, 10 warm-up rounds). Reported:

* wall and CPU time of each search, and the time at which each first reached the unpruned search's
  best validation NDCG@10 within ``--tolerance`` (0.002). The two searches run interleaved, one
  trial of each in turn, each timing only its own trials, so a change of machine load hits both
  alike. Printed ratios: the pruned search's time to reach that value over the unpruned search's
  time to reach it (the issue's target: ≤ 1/3), and over the unpruned search's whole time;
* per-trial data setup — building the train + valid binned data, LightGBM's Datasets and XGBoost's
  QuantileDMatrix (``--engines``) — when every trial builds its own (``ltr.models.binned.BINNED`` off)
  and when trials with equal binning reuse the first one's (``BINNED`` on): median seconds.

    OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/bench_sweep.py --scale 0.02 --trials 40 --trees 200
    OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/bench_sweep.py --only-setup --engines xgboost
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import optuna

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_training_overhead import MSLR_TRAIN, MSLR_VALID, synthetic_split  # noqa: E402

from ltr.models.binned import BINNED  # noqa: E402
from ltr.models.lgbm import LambdaMART  # noqa: E402
from ltr.models.xgb import XGBoostLambdaMART  # noqa: E402
from ltr.pruning import PruningHook  # noqa: E402
from ltr.search_space import parse_search_space  # noqa: E402
from ltr.study import seeded_sampler  # noqa: E402

SPACE = {  # conf/hparams_search/lambdamart_optuna.yaml
    "learning_rate": "tag(log, interval(0.01, 0.3))",
    "num_leaves": "int(tag(log, interval(8, 255)))",
    "min_data_in_leaf": "int(interval(5, 100))",
    "feature_fraction": "interval(0.5, 1.0)",
    "lambda_l2": "tag(log, interval(0.001, 10.0))",
}
SAMPLER = {"_target_": "optuna.samplers.TPESampler", "n_startup_trials": 5, "multivariate": False}


class Search:
    """One Optuna study (the shipped space and seeded sampler) whose trials are run one at a time.

    Each row is (wall seconds, CPU seconds, value, state); the clocks count only this search's own
    trials, so two searches run interleaved (one trial each in turn) see the same machine load.
    """

    def __init__(self, args, pruner) -> None:
        self.args, self.space = args, parse_search_space(SPACE, [])
        self.study = optuna.create_study(
            direction="maximize", sampler=seeded_sampler({**SAMPLER, "seed": args.seed}), pruner=pruner
        )
        self.wall, self.cpu, self.rows = 0.0, 0.0, []

    def run_trial(self, train, valid) -> None:
        args = self.args
        wall0, cpu0 = time.perf_counter(), time.process_time()
        trial = self.study.ask(self.space.distributions)
        hook = PruningHook(trial, "valid/ndcg@10", args.trees)
        params = {"n_trees": args.trees, **trial.params}
        ranker = LambdaMART(params, early_stopping={"patience": 50}, num_threads=args.threads, seed=args.seed)
        ranker.fit(train, valid, on_iteration=hook)
        if ranker.stopped_at_ is not None:
            self.study.tell(trial, state=optuna.trial.TrialState.PRUNED)
            value, state = float("nan"), "PRUNED"
        else:
            value, state = ranker.evals_result_["valid"]["ndcg@10"][ranker.best_iteration_], "COMPLETE"
            self.study.tell(trial, value)
        self.wall += time.perf_counter() - wall0
        self.cpu += time.process_time() - cpu0
        self.rows.append((self.wall, self.cpu, value, state))


def interleaved(train, valid, args, pruners: dict) -> dict[str, list[tuple[float, float, float, str]]]:
    """Run the searches trial by trial in turn (A1, B1, A2, B2, …); rows per search."""
    searches = {name: Search(args, pruner) for name, pruner in pruners.items()}
    for _ in range(args.trials):
        for search in searches.values():
            search.run_trial(train, valid)
    return {name: search.rows for name, search in searches.items()}


def time_to_reach(rows, target: float, clock: int) -> float | None:
    """The search's own time (``clock`` 0: wall, 1: CPU) when a completed trial first reached ``target``."""
    return next((row[clock] for row in rows if row[3] == "COMPLETE" and row[2] >= target), None)


def trial_ranker(engine: str, threads: int):
    """A trial's ranker as its fit holds it just before binning the data (engine parameters translated)."""
    if engine == "lightgbm":
        params = {"n_trees": 1, "min_data_in_leaf": 20}
        ranker = LambdaMART(params, num_threads=threads)
        ranker.engine_params_ = ranker.translate(
            ranker._resolve().params | params, {}, max_label=4, metric=None
        )
    else:
        params = {"n_trees": 1}
        ranker = XGBoostLambdaMART(params, num_threads=threads)
        ranker.engine_params_ = ranker.translate(ranker._resolve().params | params, {}, None)
    return ranker


def setup_times(train, valid, args, engine: str) -> dict[str, float]:
    """Median seconds to get the train + valid binned data of ``engine``, per trial, without and with sharing."""
    results = {}
    for shared in (False, True):
        BINNED.enable(shared)
        seconds = []
        for _ in range(args.setup_trials):
            ranker = trial_ranker(engine, args.threads)
            t0 = time.perf_counter()
            dtrain, dsets = ranker._binned(train, {"valid": valid})
            for d in {id(d): d for d in (dtrain, *dsets.values())}.values():
                if hasattr(d, "construct"):  # LightGBM bins when a Dataset is constructed
                    d.construct()
            seconds.append(time.perf_counter() - t0)
        # shared: the first trial builds, the later ones reuse (their median is the per-trial setup)
        results["shared" if shared else "per trial"] = statistics.median(seconds[1:] if shared else seconds)
    BINNED.enable(False)
    return results


SETUP_NAMES = {"lightgbm": "LightGBM Dataset", "xgboost": "XGBoost QuantileDMatrix"}


def print_searches(train, valid, args) -> None:
    """Run the unpruned and the pruned search, interleaved; print their table and ratios."""
    rows = interleaved(
        train,
        valid,
        args,
        {
            "unpruned": optuna.pruners.NopPruner(),
            "pruned (median)": optuna.pruners.MedianPruner(n_startup_trials=5, n_warmup_steps=10),
        },
    )
    best = max(v for _, _, v, s in rows["unpruned"] if s == "COMPLETE")
    target = best - args.tolerance
    print(
        f"\n{args.trials} trials, {args.trees} trees, patience 50, seed {args.seed}, trials interleaved; "
        f"unpruned best {best:.4f}"
    )
    print(
        "| search | wall (s) | CPU (s) | pruned trials | best valid NDCG@10 | "
        "to reach unpruned best − tol: wall (s) | CPU (s) |"
    )
    print("|---|---|---|---|---|---|---|")
    reach = {}
    for name, search_rows in rows.items():
        reach[name] = [time_to_reach(search_rows, target, clock) for clock in (0, 1)]
        best_here = max((v for _, _, v, s in search_rows if s == "COMPLETE"), default=float("nan"))
        n_pruned = sum(s == "PRUNED" for *_, s in search_rows)
        shown = ["not reached" if t is None else f"{t:.1f}" for t in reach[name]]
        print(
            f"| {name} | {search_rows[-1][0]:.1f} | {search_rows[-1][1]:.1f} | {n_pruned} | {best_here:.4f} | "
            f"{shown[0]} | {shown[1]} |"
        )
    unpruned_total = rows["unpruned"][-1][:2]
    for clock, label in ((0, "wall"), (1, "CPU")):
        pruned_reach, unpruned_reach = reach["pruned (median)"][clock], reach["unpruned"][clock]
        if pruned_reach is not None and unpruned_reach is not None:
            print(
                f"{label}: pruned time to reach / unpruned time to reach = {pruned_reach / unpruned_reach:.2f}; "
                f"/ unpruned whole search = {pruned_reach / unpruned_total[clock]:.2f}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=0.02, help="fraction of the MSLR-WEB30K Fold 1 sizes")
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--trees", type=int, default=200)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tolerance", type=float, default=0.002)
    parser.add_argument("--setup-trials", type=int, default=5)
    parser.add_argument(
        "--engines",
        default="lightgbm,xgboost",
        help="comma list of the engines whose per-trial setup is timed",
    )
    parser.add_argument(
        "--only-setup", action="store_true", help="skip the two searches; time the setup only"
    )
    args = parser.parse_args()
    engines = args.engines.split(",")
    if unknown := sorted(set(engines) - set(SETUP_NAMES)):
        parser.error(f"--engines: unknown {', '.join(unknown)}; choose from {', '.join(SETUP_NAMES)}")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    train = synthetic_split(*(max(1, int(n * args.scale)) for n in MSLR_TRAIN), seed=1, name="train")
    valid = synthetic_split(*(max(1, int(n * args.scale)) for n in MSLR_VALID), seed=2, name="valid")
    print(
        f"data: train {train.n_queries} queries / {train.n_docs} rows, valid {valid.n_queries} / {valid.n_docs}"
    )
    print(f"machine: {platform.processor() or platform.machine()}, Python {platform.python_version()}")
    if not args.only_setup:
        print_searches(train, valid, args)
    for engine in engines:
        setup = setup_times(train, valid, args, engine)
        saved = 1 - setup["shared"] / setup["per trial"]
        name = SETUP_NAMES[engine]
        print(
            f"\n| per-trial {name} setup (train + valid), {args.threads} thread(s) | median seconds |\n|---|---|"
        )
        print(
            f"| built every trial | {setup['per trial']:.3f} |\n| shared (equal binning) | {setup['shared']:.5f} |"
        )
        print(f"shared binning removes {saved:.1%} of per-trial {name} setup")
    np.seterr(all="ignore")


if __name__ == "__main__":
    main()
