"""Replay pruners offline on the unpruned search of a ``bench_sweep.py --json`` file: the same trials in
the same order, each reporting its recorded validation curve to a study with the pruner, so a pruner's
decisions are seen apart from how pruning changes what TPE proposes.

Per pruner (``conf/hparams_search/pruner/`` options with ``key=value`` overrides, as ``bench_sweep.py
--pruner``): trials pruned; rounds run over the unpruned trials' rounds; the best kept; the trials that
reached the target (the unpruned best − tolerance) but were pruned; and the CPU seconds to reach the
target over the unpruned search's, counting a pruned trial's CPU in proportion to its rounds (this
ignores the per-trial Dataset build, which pruning does not cut: optimistic).

Two rows bound what any such pruner could do on these trials. The *oracle* knows which trial wins
(the first to reach the target) and stops every other trial the first round, after a warm-up, at
which it is behind the winner's curve: a pruner that compares trials at equal rounds with one
threshold per round can stop no trial earlier without stopping the winner too. And the *landscape*:
how well a trial's value at round k predicts its best (Spearman), and the winner's rank at round k.

    .venv/bin/python benchmarks/replay_pruners.py s0.json median median:n_warmup_steps=25 successive_halving
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

import optuna
from scipy.stats import spearmanr

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_sweep import pruner_config  # noqa: E402

from ltr.optuna_sweeper import build_pruner  # noqa: E402

ORACLE_WARMUPS = (1, 10, 50)
LANDSCAPE_ROUNDS = (5, 10, 25, 50, 100, 200, 300)


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


def value_at(curve: list[float], round_: int) -> float:
    """The validation value after ``round_`` rounds (1-based); a curve that ended earlier keeps its last."""
    return curve[min(round_, len(curve)) - 1]


def oracle_stops(trials: list[dict], winner: int, warmup: int) -> list[int | None]:
    """Per trial, the first round ≥ ``warmup`` at which its value is below trial ``winner``'s at the
    same round (``None``: never behind it).

    >>> oracle_stops([{"curve": [0.5, 0.6, 0.7]}, {"curve": [0.6, 0.5, 0.9]}], winner=0, warmup=1)
    [None, 2]
    """
    best = trials[winner]["curve"]
    return [
        next(
            (k for k in range(warmup, len(t["curve"]) + 1) if value_at(t["curve"], k) < value_at(best, k)),
            None,
        )
        for t in trials
    ]


def cpu_to_reach(
    cpu: list[float], trials: list[dict], stops: list[int | None], target: float
) -> float | None:
    """CPU seconds until the first kept trial whose best reaches ``target``, over the unpruned search's
    (a pruned trial counts in proportion to its rounds); ``None`` when every such trial was pruned.

    >>> cpu_to_reach([2.0, 2.0], [{"curve": [0.1] * 4}, {"curve": [0.9] * 4}], [1, None], 0.5)
    0.625
    """
    values = [max(t["curve"]) for t in trials]
    first = next(i for i, v in enumerate(values) if v >= target)
    reach = next(
        (i for i, (v, s) in enumerate(zip(values, stops, strict=True)) if not s and v >= target), None
    )
    if reach is None:
        return None
    kept = zip(cpu[: reach + 1], stops[: reach + 1], trials[: reach + 1], strict=True)
    spent = sum(c * (s or len(t["curve"])) / len(t["curve"]) for c, s, t in kept)
    return spent / sum(cpu[: first + 1])


def landscape(trials: list[dict], winner: int) -> list[tuple[int, float, int]]:
    """Per round k of ``LANDSCAPE_ROUNDS``: Spearman's ρ between the trials' values at k and their
    best values, and the winner's rank (1 = ahead of every trial) at k."""
    best = [max(t["curve"]) for t in trials]
    rows = []
    for k in LANDSCAPE_ROUNDS:
        at = [value_at(t["curve"], k) for t in trials]
        rows.append((k, float(spearmanr(at, best).statistic), 1 + sum(v > at[winner] for v in at)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json", type=Path, help="a bench_sweep.py --json file")
    parser.add_argument("pruners", nargs="*", help="pruner options, e.g. median:n_warmup_steps=25")
    args = parser.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    data = json.loads(args.json.read_text())
    n, trees = data["args"]["trials"], data["args"]["trees"]
    trials, rows = data["trials"]["none"][:n], data["rows"]["none"][:n]
    cpu = [row[1] - before for row, before in zip(rows, [0.0] + [r[1] for r in rows[:-1]], strict=True)]
    values = [max(t["curve"]) for t in trials]
    target = data["unpruned_best"] - data["args"]["tolerance"]
    winner = next(i for i, v in enumerate(values) if v >= target)
    print(
        f"seed {data['args']['seed']}: unpruned best {data['unpruned_best']:.4f}, reached at trial {winner + 1}"
    )
    print("| round | Spearman ρ (value at the round, trial's best) | winner's rank at the round |")
    print("|---|---|---|")
    for k, rho, rank in landscape(trials, winner):
        print(f"| {k} | {rho:+.2f} | {rank} of {n} |")
    print(
        "\n| pruner | pruned | rounds run / unpruned | best kept | pruned trials ≥ target | CPU to reach / unpruned |"
    )
    print("|---|---|---|---|---|---|")
    named = [(spec, replay(trials, build_pruner(pruner_config(spec, trees)))) for spec in args.pruners]
    named += [(f"oracle, warm-up {w}", oracle_stops(trials, winner, w)) for w in ORACLE_WARMUPS]
    rounds = [len(t["curve"]) for t in trials]
    for name, stops in named:
        run = [stop or full for stop, full in zip(stops, rounds, strict=True)]
        kept = max(v for v, stop in zip(values, stops, strict=True) if not stop)
        killed = [round(v, 4) for v, stop in zip(values, stops, strict=True) if stop and v >= target]
        ratio = cpu_to_reach(cpu, trials, stops, target)
        print(
            f"| {name} | {sum(s is not None for s in stops)} | {sum(run) / sum(rounds):.2f} | {kept:.4f} | "
            f"{killed} | {'not reached' if ratio is None else f'{ratio:.2f}'} |"
        )


if __name__ == "__main__":
    main()
