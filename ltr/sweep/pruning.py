"""Pruning a search trial on its validation curve: the link between a sweep's Optuna trial and the fit.

The sweeper (:mod:`ltr.sweep.sweeper`) runs each trial as a Hydra job and tells the job which trial it
is through environment variables set for the job only (``hydra.job.env_set``): :data:`ENV_STORAGE`
(the study's Optuna storage URL, or :data:`IN_MEMORY` for a study of this process), :data:`ENV_STUDY`,
:data:`ENV_TRIAL` and :data:`ENV_PRUNER` (``hydra.sweeper.pruner`` as JSON: a storage keeps no pruner). In the job, :func:`hook_from_environment` opens that trial and returns a
:class:`PruningHook`: the ``on_iteration`` callback of the models layer (``hook(step, values) ->
bool``; ``True`` stops the fit), which

* reports ``values["valid/<early-stopping metric>"]`` — the curve the early stopping watches, under
  ``ltr``'s metric conventions — as the trial's intermediate value at ``step`` (a boosting round; for an
  ensemble, the number of members finished − 1), and
* returns ``trial.should_prune()``: the study's pruner (median, successive halving, Hyperband …)
  decides.

When the hook stops a fit, :func:`ltr.experiment.pipeline.fit_and_evaluate` raises :class:`TrainingStopped`
instead of evaluating; the MLflow run is tagged ``ltr.trial.state=PRUNED`` and ends KILLED with its
curve up to the pruning round and no model, and the sweeper tells Optuna ``PRUNED``.

The hook also stores, as the trial's user attributes, how many rounds ran (``ltr.rounds``), how long
they took (``ltr.seconds``, from the first report to the last) and how many were planned
(``ltr.planned_rounds``: ``n_trees``, or the number of ensemble members); :func:`time_saved` estimates
from them what pruning saved.

>>> stopped = TrainingStopped(7)
>>> stopped.step, str(stopped)
(7, 'training stopped by its on_iteration callback after round 7')
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hydra.utils import instantiate

if TYPE_CHECKING:
    import optuna

ENV_STORAGE = "LTR_OPTUNA_STORAGE"
ENV_STUDY = "LTR_OPTUNA_STUDY"
ENV_TRIAL = "LTR_OPTUNA_TRIAL_ID"
ENV_SHARE = "LTR_SHARE_DATA"  # "1": the trial reuses its process's data and binned Datasets (share_data)
ENV_PRUNER = "LTR_OPTUNA_PRUNER"  # the pruner config as JSON (an Optuna storage does not keep the pruner)
IN_MEMORY = "in-memory"  # ENV_STORAGE of a study kept in this process's memory (storage: null)

#: the studies kept in memory by this process's sweeper, by name (a job of the basic launcher runs in
#: the sweeper's process and finds its trial here)
LIVE_STUDIES: dict[str, optuna.Study] = {}


class TrainingStopped(Exception):
    """The fit stopped because ``on_iteration`` asked it to (a pruned trial): nothing was evaluated."""

    def __init__(self, step: int) -> None:
        super().__init__(step)
        self.step = int(step)

    def __str__(self) -> str:
        return f"training stopped by its on_iteration callback after round {self.step}"


class PruningHook:
    """Reports the validation curve to an Optuna trial and says when to prune (module docstring)."""

    def __init__(self, trial: optuna.Trial, key: str, planned_rounds: int | None) -> None:
        self.trial = trial
        self.key = key
        self.planned_rounds = planned_rounds
        self.first: tuple[int, float] | None = None  # (step, time) of the first report
        self.last: tuple[int, float] | None = None

    def __call__(self, step: int, values: Mapping[str, float]) -> bool:
        value = values.get(self.key)
        if value is None:
            return False
        now = time.perf_counter()
        self.first = self.first or (step, now)
        self.last = (step, now)
        self.trial.report(float(value), step)
        if self.trial.should_prune():
            self.record()
            return True
        return False

    def record(self, **extra: Any) -> None:
        """Store rounds run, their seconds, the rounds planned and ``extra`` as the trial's user attributes."""
        attrs: dict[str, Any] = {key: value for key, value in extra.items() if value is not None}
        if self.first is not None and self.last is not None:
            attrs |= {
                "ltr.rounds": self.last[0] + 1,
                "ltr.seconds": self.last[1] - self.first[1],
                "ltr.timed_rounds": self.last[0] - self.first[0],
                "ltr.planned_rounds": self.planned_rounds,
            }
        for key, value in attrs.items():
            self.trial.set_user_attr(key, value)


def hook_from_environment(cfg: Any) -> PruningHook | None:
    """The hook of the trial this job runs (``None`` outside a sweep of ``ltr``'s Optuna sweeper)."""
    trial_id = os.environ.get(ENV_TRIAL)
    if not trial_id:
        return None
    import optuna  # deferred: only a job of an Optuna sweep needs it

    storage, name = os.environ[ENV_STORAGE], os.environ[ENV_STUDY]
    if storage == IN_MEMORY:
        study = LIVE_STUDIES.get(name)
        if study is None:  # a worker process cannot see the sweeper's memory
            return None
    else:
        pruner_config = json.loads(os.environ.get(ENV_PRUNER) or "null")
        pruner = instantiate(pruner_config) if pruner_config else optuna.pruners.NopPruner()
        study = optuna.load_study(study_name=name, storage=storage, pruner=pruner)
    trial = optuna.trial.Trial(study, int(trial_id))
    return PruningHook(trial, f"valid/{curve_metric(cfg)}", planned_rounds(cfg))


def curve_metric(cfg: Any) -> str:
    """The metric a trial reports: the early-stopping metric, else the first evaluation metric."""
    early = cfg.model.get("early_stopping") or {}
    return str(early.get("metric") or cfg.eval.metrics[0])


def planned_rounds(cfg: Any) -> int | None:
    """Rounds a full fit runs: ``model.params.n_trees``, or the number of ensemble members."""
    n_trees = (cfg.model.get("params") or {}).get("n_trees")
    if n_trees is not None:
        return int(n_trees)
    members = cfg.model.get("members")
    return len(members) if members else None


@dataclass(frozen=True)
class TimeSaved:
    """What pruning saved: pruned trials, their rounds not run, and the seconds that is estimated to be."""

    pruned: int
    rounds_skipped: int
    seconds: float
    seconds_per_round: float

    def describe(self) -> str:
        """One line for the sweep summary.

        >>> TimeSaved(3, 450, 90.0, 0.2).describe()
        '3 trials pruned; ≈ 90 s saved (450 rounds not run × 0.2000 s per round, the mean over timed trials)'
        >>> TimeSaved(0, 0, 0.0, 0.2).describe()
        'no trial pruned'
        """
        if not self.pruned:
            return "no trial pruned"
        return (
            f"{self.pruned} trials pruned; ≈ {self.seconds:.0f} s saved ({self.rounds_skipped} rounds not run × "
            f"{self.seconds_per_round:.4f} s per round, the mean over timed trials)"
        )


def time_saved(trials: Iterable[tuple[bool, Mapping[str, Any]]]) -> TimeSaved:
    """Estimate from ``(pruned, user_attrs)`` per trial: Σ over pruned trials of (planned − rounds run)
    × the mean seconds per round (total seconds / total timed rounds over every trial with timings).

    An upper bound: a pruned trial might have stopped early anyway before its planned rounds.

    >>> attrs = {"ltr.rounds": 10, "ltr.timed_rounds": 9, "ltr.seconds": 1.8, "ltr.planned_rounds": 100}
    >>> full = {"ltr.rounds": 100, "ltr.timed_rounds": 99, "ltr.seconds": 19.8, "ltr.planned_rounds": 100}
    >>> saved = time_saved([(True, attrs), (False, full)])
    >>> saved.pruned, saved.rounds_skipped, round(saved.seconds, 6)
    (1, 90, 18.0)
    """
    seconds = timed = skipped = pruned = 0
    for was_pruned, attrs in trials:
        if attrs.get("ltr.timed_rounds"):
            seconds += float(attrs["ltr.seconds"])
            timed += int(attrs["ltr.timed_rounds"])
        if was_pruned:
            pruned += 1
            if attrs.get("ltr.planned_rounds") and attrs.get("ltr.rounds"):
                skipped += max(int(attrs["ltr.planned_rounds"]) - int(attrs["ltr.rounds"]), 0)
    per_round = seconds / timed if timed else 0.0
    return TimeSaved(pruned, skipped, skipped * per_round, per_round)
