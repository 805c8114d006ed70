"""Replay pruners offline on the unpruned search of a ``bench_sweep.py --json`` file: the same trials in
the same order, each reporting its recorded validation curve to a study with the pruner, so a pruner's
decisions are seen apart from how pruning changes what TPE proposes.

Per pruner (``conf/hparams_search/pruner/`` options with ``key=value`` overrides, as ``bench_sweep.py
--pruner``): trials pruned; rounds run over the unpruned trials' rounds; the best kept; the trials that
reached the target (the unpruned best − tolerance) but were pruned; and the CPU seconds to reach the
target over the unpruned search's, counting a pruned trial's CPU in proportion to its rounds (this
ignores the per-trial Dataset build, which pruning does not cut: optimistic).

Two more outputs show what the curves allow. The *oracle* rows: for each trial that reaches the
target, stop every other trial the first round after the warm-up (Optuna's ``n_warmup_steps``: a
trial may stop from round warm-up + 1) at which it is behind that trial's curve, or has outlived
it; keep the trial with the least CPU to reach. That is the most a pruner can stop while reaching
the target if it stops a trial at round k only below a threshold t(k) fixed for the whole search
(the same for every trial): t(k) may not exceed the kept trial's value. Median, successive halving
and Hyperband move their thresholds as trials finish, so for them it is a guide, not a proof. And
the *landscape*: Spearman's ρ between the trials' values at round k and their best values (a trial
that ended before k counts with its last value), and the rank at round k of the first trial to
reach the target.

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

from ltr.sweep.sweeper import build_pruner  # noqa: E402

ORACLE_WARMUPS = (0, 10, 50)  # in Optuna steps, as n_warmup_steps
LANDSCAPE_ROUNDS = (5, 10, 25, 50, 100, 200, 300)


def replay(trials: list[dict], pruner: optuna.pruners.BasePruner) -> list[int | None]:
    """Per trial, the number of rounds run when ``pruner`` pruned it (``None``: it ran its whole curve)."""
    # named: Hyperband assigns trials to brackets by a hash of the study name (unnamed = random)
    study = optuna.create_study(study_name="replay", direction="maximize", pruner=pruner)
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


def oracle_stops(trials: list[dict], keep: int, warmup: int) -> list[int | None]:
    """Per trial, the first round k > ``warmup`` at which its value is below trial ``keep``'s at round k
    or ``keep`` has ended (``None``: it is never stopped).

    >>> oracle_stops([{"curve": [0.5, 0.6, 0.7]}, {"curve": [0.6, 0.5, 0.9]}], keep=0, warmup=0)
    [None, 2]
    """
    kept = trials[keep]["curve"]
    return [
        next(
            (
                k
                for k in range(warmup + 1, len(t["curve"]) + 1)
                if k > len(kept) or value_at(t["curve"], k) < value_at(kept, k)
            ),
            None,
        )
        for t in trials
    ]


def oracle(cpu: list[float], trials: list[dict], target: float, warmup: int) -> tuple[float, int, list]:
    """The least CPU ratio to reach ``target`` (:func:`cpu_to_reach`) over the trials to keep (those that
    reach it), with that trial's index and :func:`oracle_stops`."""
    candidates = []
    for keep, trial in enumerate(trials):
        if max(trial["curve"]) >= target:
            stops = oracle_stops(trials, keep, warmup)
            candidates.append((cpu_to_reach(cpu, trials, stops, target), keep, stops))
    return min(candidates, key=lambda row: row[0])


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
    print(
        f"| round | Spearman ρ (value at the round, trial's best) | trial {winner + 1}'s rank at the round |"
    )
    print("|---|---|---|")
    for k, rho, rank in landscape(trials, winner):
        print(f"| {k} | {rho:+.2f} | {rank} of {n} |")
    print(
        "\n| pruner | pruned | rounds run / unpruned | best kept | pruned trials ≥ target | CPU to reach / unpruned |"
    )
    print("|---|---|---|---|---|---|")
    named = [(spec, replay(trials, build_pruner(pruner_config(spec, trees)))) for spec in args.pruners]
    for w in ORACLE_WARMUPS:
        _, keep, stops = oracle(cpu, trials, target, w)
        named.append((f"oracle, warm-up {w}, keeping trial {keep + 1}", stops))
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
