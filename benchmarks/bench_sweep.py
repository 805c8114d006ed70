"""Benchmark: a LambdaMART search with and without pruning, and per-trial setup with and without the
shared binned Dataset, on MSLR-WEB30K-shaped synthetic data (``bench_training_overhead.synthetic_split``).

The searches run in this process with the same search space as
``conf/hparams_search/lambdamart_optuna.yaml`` and the same seeded sampler as ``ltr``'s sweeper
(``ltr.sweep.study.seeded_sampler``: TPE seeded ``seed + position``); each trial is a real ``ltr`` LambdaMART
fit whose ``on_iteration`` is ``ltr.sweep.pruning.PruningHook`` on the trial. The unpruned search is compared
with each ``--pruner`` (a ``conf/hparams_search/pruner/`` option with ``key=value`` overrides, read from
its YAML as a sweep composes it; default: ``median``, the option a user opts into — the shipped searches
do not prune). Validation NDCG@10 is meaningful: the valid split has the training split's relevance
function.
Reported:

* wall and CPU time of each search, and the time at which each first reached the unpruned search's
  best validation NDCG@10 within ``--tolerance`` (0.002). The searches run interleaved, one trial of
  each in turn, after one untimed warm-up trial, each timing only its own trials, so a change of
  machine load hits all alike (CPU seconds, one thread, are the load-robust clock). Two tables: the
  fixed trial budget (``--trials`` each) and, unless ``--no-equal-budget``, the equal time budget (the
  pruned searches go on until their CPU seconds reach the unpruned search's). Ratios: the time to reach
  over the unpruned search's time to reach (the issue's target: ≤ 1/3) and over its whole time;
* per-trial data setup — building the train + valid binned data, LightGBM's Datasets and XGBoost's
  QuantileDMatrix (``--engines``) — when every trial builds its own (``ltr.models.engines.binned.BINNED`` off)
  and when trials with equal binning reuse the first one's (``BINNED`` on): median seconds.

    OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/bench_sweep.py --scale 0.02 --trials 40 \\
        --trees 500 --seed 0 --engines lightgbm --json s0.json
    OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/bench_sweep.py --only-setup --engines xgboost

``--train`` with ``--valid`` (or ``--holdout F``: the last share F of the training file's queries, in
file order) runs the same comparison on LETOR files of your own instead (e.g. MSLR-WEB30K Fold 1's
``train.txt`` and ``vali.txt``, read with ``ltr.data.load_svmlight``), so the synthetic data's
verdict can be checked on real data:

    OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/bench_sweep.py \\
        --train Fold1/train.txt --valid Fold1/vali.txt --trials 40 --trees 500 --engines lightgbm --json real.json
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import optuna
from omegaconf import OmegaConf

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_training_overhead import MSLR_TRAIN, MSLR_VALID, synthetic_split  # noqa: E402

from ltr.core.errors import ConfigError, LtrError  # noqa: E402
from ltr.data import RankingData, load_svmlight  # noqa: E402
from ltr.data.shards import widen  # noqa: E402
from ltr.models.engines.binned import BINNED  # noqa: E402
from ltr.models.engines.lgbm import LambdaMART  # noqa: E402
from ltr.models.engines.xgb import XGBoostLambdaMART  # noqa: E402
from ltr.sweep.pruning import PruningHook  # noqa: E402
from ltr.sweep.search_space import parse_search_space  # noqa: E402
from ltr.sweep.study import seeded_sampler  # noqa: E402
from ltr.sweep.sweeper import build_pruner  # noqa: E402

SPACE = {  # conf/hparams_search/lambdamart_optuna.yaml
    "learning_rate": "tag(log, interval(0.01, 0.3))",
    "num_leaves": "int(tag(log, interval(8, 255)))",
    "min_data_in_leaf": "int(interval(5, 100))",
    "feature_fraction": "interval(0.5, 1.0)",
    "lambda_l2": "tag(log, interval(0.001, 10.0))",
}
SAMPLER = {"_target_": "optuna.samplers.TPESampler", "n_startup_trials": 5, "multivariate": False}
CONF = Path(__file__).resolve().parent.parent / "conf" / "hparams_search"
UNPRUNED = "none"  # conf/hparams_search/pruner/none.yaml: the baseline search (and the shipped default)
DEFAULT_PRUNER = "median"  # the option docs/experiments.md shows for opting in


def pruner_config(spec: str, n_trees: int) -> dict:
    """``conf/hparams_search/pruner/<name>.yaml`` with ``key=value`` overrides (``median:n_warmup_steps=25``),
    resolved as in a sweep whose ``model.params.n_trees`` is ``n_trees``."""
    name, _, overrides = spec.partition(":")
    config = OmegaConf.merge(
        {"model": {"params": {"n_trees": n_trees}}},
        {"pruner": OmegaConf.load(CONF / "pruner" / f"{name}.yaml")},
        OmegaConf.from_dotlist([f"pruner.{item}" for item in overrides.split(",") if item]),
    )
    return OmegaConf.to_container(config.pruner, resolve=True)


#: the engine parameters the shipped search sets (``feature_pre_filter: false``, so that trials share
#: one binned Dataset whatever ``min_data_in_leaf`` they draw)
SHIPPED_ENGINE_PARAMS = OmegaConf.to_container(
    OmegaConf.load(CONF / "lambdamart_optuna.yaml").model.engine_params
)


class Search:
    """One Optuna study (the shipped space and seeded sampler) whose trials are run one at a time.

    Each row is (wall seconds, CPU seconds, value, state); the clocks count only this search's own
    trials, so searches run interleaved (one trial each in turn) see the same machine load.
    """

    def __init__(self, args, pruner: optuna.pruners.BasePruner, name: str = "") -> None:
        self.name = name
        self.args, self.space = args, parse_search_space(SPACE, [])
        self.study = optuna.create_study(  # named: Hyperband's brackets hash the study name
            study_name=f"bench-sweep-{name}",
            direction="maximize",
            sampler=seeded_sampler({**SAMPLER, "seed": args.seed}),
            pruner=pruner,
        )
        self.wall, self.cpu, self.rows = 0.0, 0.0, []
        self.trials: list[dict] = []  # per trial: params and validation curve (what a pruner saw)

    def run_trial(self, train, valid) -> None:
        args = self.args
        wall0, cpu0 = time.perf_counter(), time.process_time()
        trial = self.study.ask(self.space.distributions)
        hook = PruningHook(trial, "valid/ndcg@10", args.trees)
        params = {"n_trees": args.trees, **trial.params}
        ranker = LambdaMART(
            params,
            early_stopping={"patience": 50},
            engine_params=SHIPPED_ENGINE_PARAMS,
            num_threads=args.threads,
            seed=args.seed,
        )
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
        curve = ranker.evals_result_["valid"]["ndcg@10"]
        self.trials.append({"params": trial.params, "curve": [float(v) for v in curve], "state": state})
        if args.progress:
            print(f"{self.name} trial {len(self.rows)}: {state} {value:.4f} cpu {self.cpu:.1f} s", flush=True)


def interleaved(train, valid, args, pruners: dict) -> dict[str, Search]:
    """After one untimed warm-up trial (the first fit of a process pays ≈ 5 s of one-off imports and
    compiles, which would be charged to the first search), run the searches trial by trial in turn (A1,
    B1, A2, B2, …) for ``args.trials`` rounds; with
    ``args.equal_budget`` the pruned searches then go on, in turn, each until its CPU seconds reach the
    unpruned search's (the first one's) whole CPU seconds (at most 10 × ``args.trials`` trials). A
    search's first ``args.trials`` rows are its fixed-trial-budget result."""
    BINNED.enable(False)
    Search(args, optuna.pruners.NopPruner(), "warm-up").run_trial(
        train, valid
    )  # untimed: one-off imports and compiles
    BINNED.enable(args.share)  # as in a sweep's jobs (hydra.sweeper.share_data, on by default)
    searches = {name: Search(args, pruner, name) for name, pruner in pruners.items()}
    for _ in range(args.trials):
        for search in searches.values():
            search.run_trial(train, valid)
    baseline, *pruned = searches.values()
    while args.equal_budget:
        going = [s for s in pruned if s.cpu < baseline.cpu and len(s.rows) < 10 * args.trials]
        if not going:
            break
        for search in going:
            search.run_trial(train, valid)
    return searches


def time_to_reach(rows, target: float, clock: int) -> float | None:
    """The search's own time (``clock`` 0: wall, 1: CPU) when a completed trial first reached ``target``."""
    return next((row[clock] for row in rows if row[3] == "COMPLETE" and row[2] >= target), None)


def pruning_table(rows: dict[str, list], target: float, title: str) -> dict[str, dict]:
    """Print one table (a row per search) and return its figures; the first search is the unpruned one.

    Ratios: the search's time to reach ``target`` over the unpruned search's time to reach it, and over
    the unpruned search's whole time (``None`` when the search never reached it)."""
    base = rows[next(iter(rows))]
    base_reach = [time_to_reach(base, target, clock) for clock in (0, 1)]
    print(f"\n{title}")
    print(
        "| search | trials | pruned | wall (s) | CPU (s) | best valid NDCG@10 | reach: wall (s) | CPU (s) | "
        "CPU reach / unpruned reach | CPU reach / unpruned whole |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    figures = {}
    for name, search_rows in rows.items():
        reach = [time_to_reach(search_rows, target, clock) for clock in (0, 1)]
        ratios = [
            None if t is None or b is None else t / b
            for t, b in (
                (reach[0], base_reach[0]),
                (reach[1], base_reach[1]),
                (reach[0], base[-1][0]),
                (reach[1], base[-1][1]),
            )
        ]
        figures[name] = {
            "trials": len(search_rows),
            "pruned": sum(s == "PRUNED" for *_, s in search_rows),
            "wall": search_rows[-1][0],
            "cpu": search_rows[-1][1],
            "best": max((v for _, _, v, s in search_rows if s == "COMPLETE"), default=float("nan")),
            "reach_wall": reach[0],
            "reach_cpu": reach[1],
            "wall_ratio_reach": ratios[0],
            "cpu_ratio_reach": ratios[1],
            "wall_ratio_whole": ratios[2],
            "cpu_ratio_whole": ratios[3],
        }
        f = figures[name]
        shown = ["not reached" if t is None else f"{t:.1f}" for t in reach]
        shown += ["—" if r is None else f"{r:.2f}" for r in ratios[1::2]]
        print(
            f"| {name} | {f['trials']} | {f['pruned']} | {f['wall']:.1f} | {f['cpu']:.1f} | {f['best']:.4f} | "
            + " | ".join(shown)
            + " |"
        )
    return figures


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
    """Run the unpruned search and each ``--pruner``, interleaved; print the fixed-trial and equal-budget
    tables (and write ``--json``)."""
    pruners = {UNPRUNED: UNPRUNED, **{spec: spec for spec in args.pruner or [DEFAULT_PRUNER]}}
    configs = {name: pruner_config(spec, args.trees) for name, spec in pruners.items()}
    for name, config in configs.items():
        print(f"pruner {name}: {config}")
    searches = interleaved(
        train, valid, args, {name: build_pruner(config) for name, config in configs.items()}
    )
    rows = {name: search.rows for name, search in searches.items()}
    best = max(v for _, _, v, s in rows[UNPRUNED] if s == "COMPLETE")
    target = best - args.tolerance
    header = (
        f"{args.trees} trees, patience 50, seed {args.seed}, threads {args.threads}, trials interleaved; "
        f"unpruned best {best:.4f}, target {target:.4f}"
    )
    results = {
        "args": vars(args),
        "pruners": configs,
        "unpruned_best": best,
        "fixed_trials": pruning_table(
            {n: r[: args.trials] for n, r in rows.items()},
            target,
            f"fixed trial budget: {args.trials} trials each; {header}",
        ),
    }
    if args.equal_budget:
        results["equal_budget"] = pruning_table(
            rows,
            target,
            f"equal time budget: pruned searches go on until their CPU seconds reach the unpruned search's; {header}",
        )
    if args.json:
        trials = {name: search.trials for name, search in searches.items()}
        args.json.write_text(json.dumps({**results, "rows": rows, "trials": trials}, indent=1, default=str))


def load_data(args: argparse.Namespace) -> tuple[RankingData, RankingData]:
    """The train and valid splits: ``--train`` with ``--valid`` or ``--holdout``, else synthetic."""
    if args.train is None:
        train = synthetic_split(*(max(1, int(n * args.scale)) for n in MSLR_TRAIN), seed=1, name="train")
        valid = synthetic_split(*(max(1, int(n * args.scale)) for n in MSLR_VALID), seed=2, name="valid")
        return train, valid
    train = load_svmlight(args.train, name=str(args.train))
    if args.holdout is not None:
        held = max(1, round(args.holdout * train.n_queries))
        if held >= train.n_queries:
            raise ConfigError(
                f"--holdout {args.holdout}: {args.train} has {train.n_queries} queries, none left to train on"
            )
        cut = train.n_queries - held
        return train.subset(np.arange(cut)), train.subset(np.arange(cut, train.n_queries), name="holdout")
    valid = load_svmlight(args.valid, name=str(args.valid))
    width = max(train.n_features, valid.n_features)  # a sparse file may not use the last features
    return widen(train, width), widen(valid, width)


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
        "--pruner",
        action="append",
        help="a conf/hparams_search/pruner/ option to compare with no pruning, with key=value overrides "
        "(median:n_warmup_steps=25,n_startup_trials=5); repeatable; default: median",
    )
    parser.add_argument(
        "--equal-budget",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="after the fixed trials, let each pruned search go on until its CPU seconds reach the unpruned one's",
    )
    parser.add_argument(
        "--json", type=Path, help="also write the figures and every trial's row and curve here"
    )
    parser.add_argument("--progress", action="store_true", help="print a line per trial")
    parser.add_argument(
        "--share",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="trials share the binned Dataset as in a sweep (the first timed trial builds it)",
    )
    parser.add_argument(
        "--engines",
        default="lightgbm,xgboost",
        help="comma list of the engines whose per-trial setup is timed",
    )
    parser.add_argument("--only-setup", action="store_true", help="skip the searches; time the setup only")
    parser.add_argument("--train", type=Path, help="a LETOR training file to use instead of synthetic data")
    parser.add_argument("--valid", type=Path, help="its validation file (with --train)")
    parser.add_argument(
        "--holdout", type=float, help="instead of --valid: validate on the last share of --train's queries"
    )
    args = parser.parse_args()
    if args.setup_trials < 2:
        parser.error("--setup-trials: at least 2 (the first builds the shared data, the others reuse it)")
    if (args.train is None) != (args.valid is None and args.holdout is None):
        parser.error("--train goes with one of --valid or --holdout, and they with --train")
    if args.valid is not None and args.holdout is not None:
        parser.error("--valid or --holdout, not both")
    if args.holdout is not None and not 0 < args.holdout < 1:
        parser.error(f"--holdout: a share between 0 and 1, got {args.holdout}")
    engines = args.engines.split(",")
    if unknown := sorted(set(engines) - set(SETUP_NAMES)):
        parser.error(f"--engines: unknown {', '.join(unknown)}; choose from {', '.join(SETUP_NAMES)}")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        train, valid = load_data(args)
    except (LtrError, OSError) as exc:
        parser.error(str(exc))
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
