"""Replay pruners offline on the unpruned search of a ``bench_sweep.py --json`` file: the same trials in
the same order, each reporting its recorded validation curve to a study with the pruner, so a pruner's
decisions are seen apart from how pruning changes what TPE proposes.

Per pruner (``conf/hparams_search/pruner/`` options with ``key=value`` overrides, as ``bench_sweep.py
--pruner``): trials pruned; rounds run over the unpruned trials' rounds; the best kept; the trials that
reached the target (the unpruned best − tolerance) but were pruned; and the CPU seconds to reach the
target over the unpruned search's, counting a pruned trial's CPU in proportion to its rounds (this
ignores the per-trial Dataset build, which pruning does not cut: optimistic).

    .venv/bin/python benchmarks/replay_pruners.py s0.json median median:n_warmup_steps=25 successive_halving
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

import optuna

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_sweep import pruner_config  # noqa: E402

from ltr.optuna_sweeper import build_pruner  # noqa: E402


def replay(trials: list[dict], pruner: optuna.pruners.BasePruner) -> list[int | None]:
    """Per trial, the number of rounds run when ``pruner`` pruned it (``None``: it ran its whole curve)."""
    study = optuna.create_study(direction="maximize", pruner=pruner)
    stops = []
    for recorded in trials:
        trial, stop = study.ask(), None
        for step, value in enumerate(recorded["curve"]):
            trial.report(value, step)
            if trial.should_prune():
                stop = step + 1
                break
        if stop:
            study.tell(trial, state=optuna.trial.TrialState.PRUNED)
        else:
            study.tell(trial, max(recorded["curve"]))
        stops.append(stop)
    return stops


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json", type=Path, help="a bench_sweep.py --json file")
    parser.add_argument("pruners", nargs="+", help="pruner options, e.g. median:n_warmup_steps=25")
    args = parser.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    data = json.loads(args.json.read_text())
    n, trees = data["args"]["trials"], data["args"]["trees"]
    trials, rows = data["trials"]["none"][:n], data["rows"]["none"][:n]
    cpu = [row[1] - before for row, before in zip(rows, [0.0] + [r[1] for r in rows[:-1]], strict=True)]
    values = [row[2] for row in rows]
    target = data["unpruned_best"] - data["args"]["tolerance"]
    first = next(i for i, v in enumerate(values) if v >= target)
    print(
        f"seed {data['args']['seed']}: unpruned best {data['unpruned_best']:.4f}, reached at trial {first + 1}"
    )
    print(
        "| pruner | pruned | rounds run / unpruned | best kept | pruned trials ≥ target | CPU to reach / unpruned |"
    )
    print("|---|---|---|---|---|---|")
    for spec in args.pruners:
        stops = replay(trials, build_pruner(pruner_config(spec, trees)))
        rounds = [len(t["curve"]) for t in trials]
        run = [stop or full for stop, full in zip(stops, rounds, strict=True)]
        kept = max(v for v, stop in zip(values, stops, strict=True) if not stop)
        killed = [round(v, 4) for v, stop in zip(values, stops, strict=True) if stop and v >= target]
        reach = next(
            (i for i, (v, stop) in enumerate(zip(values, stops, strict=True)) if not stop and v >= target),
            None,
        )
        ratio = "not reached"
        if reach is not None:
            spent = sum(
                c * r / full
                for c, r, full in zip(cpu[: reach + 1], run[: reach + 1], rounds[: reach + 1], strict=True)
            )
            ratio = f"{spent / sum(cpu[: first + 1]):.2f}"
        print(
            f"| {spec} | {sum(s is not None for s in stops)} | {sum(run) / sum(rounds):.2f} | {kept:.4f} | "
            f"{killed} | {ratio} |"
        )


if __name__ == "__main__":
    main()
