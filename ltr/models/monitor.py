"""Per-iteration bookkeeping shared by every iterative engine: history, callbacks, early stopping.

An engine adapter computes, after each boosting round ``i`` (0-based), a mapping
``{(split, metric): value}`` and hands it to :meth:`IterationMonitor.update`, which

1. appends every value to ``history[split][metric]`` (so ``history["valid"]["ndcg@10"][i]`` is the
   value after round ``i``; this becomes the ranker's ``evals_result_``),
2. calls ``on_iteration(i, {"split/metric": value, ...})`` (e.g. to log curves live); when it returns
   ``True`` training stops after this round and :attr:`IterationMonitor.stopped_at` is ``i`` (how a
   caller such as a hyper-parameter search prunes a trial without the models layer knowing why),
3. tracks the best round of the early-stopping metric on the ``valid`` split (strictly greater is
   better; the earliest round wins ties) and returns ``True`` once ``patience`` rounds passed
   without improvement.

>>> m = IterationMonitor("ndcg@10", patience=2)
>>> [m.update(i, {("valid", "ndcg@10"): v}) for i, v in enumerate([0.5, 0.7, 0.7, 0.6])]
[False, False, False, True]
>>> m.best_iteration, m.best_score, m.history["valid"]["ndcg@10"]
(1, 0.7, [0.5, 0.7, 0.7, 0.6])

A callback that asks to stop ends training at that round, whatever the patience:

>>> m = IterationMonitor("ndcg@10", patience=None, on_iteration=lambda i, values: i == 1)
>>> [m.update(i, {("valid", "ndcg@10"): 0.5}) for i in range(2)], m.stopped_at
([False, True], 1)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ltr.core import interrupts
from ltr.core.errors import DataError
from ltr.data import RankingData
from ltr.models.evaluation import RankingMetric

#: ``on_iteration(round, {"valid/ndcg@10": value, ...})``; a ``True`` return stops training after this round
OnIteration = Callable[[int, dict[str, float]], bool | None]

#: prefix of the metric name an engine callback reports for ltr's own metric (custom feval/metric)
LTR_PREFIX = "ltr-"  # no ":" (XGBoost splits its evaluation strings on it)


def history_name(engine_metric_name: str, engine: str) -> str:
    """History key of a metric an engine reported: ours unprefixed, the engine's own as ``<engine>_<name>``.

    >>> history_name("ltr-ndcg@10", "lightgbm"), history_name("ndcg@10", "xgboost")
    ('ndcg@10', 'xgboost_ndcg@10')
    """
    if engine_metric_name.startswith(LTR_PREFIX):
        return engine_metric_name[len(LTR_PREFIX) :]
    return f"{engine}_{engine_metric_name}"


class IterationMonitor:
    """Records per-iteration metric values and decides when to stop (see module docstring)."""

    def __init__(
        self,
        metric: str,
        patience: int | None,
        on_iteration: OnIteration | None = None,
        *,
        split: str = "valid",
    ) -> None:
        self.metric = metric
        self.patience = patience
        self.on_iteration = on_iteration
        self.split = split
        self.history: dict[str, dict[str, list[float]]] = {}
        self.best_iteration: int | None = None
        self.best_score = -math.inf
        self.best_values: dict[tuple[str, str], float] = {}
        #: the round after which ``on_iteration`` asked to stop (``None``: it never did)
        self.stopped_at: int | None = None

    def update(self, iteration: int, values: Mapping[tuple[str, str], float]) -> bool:
        """Record round ``iteration``; return ``True`` when early stopping or ``on_iteration`` says stop now."""
        interrupts.raise_if_received()  # a Ctrl-C that a library dropped still stops training here
        for (split, name), value in values.items():
            self.history.setdefault(split, {}).setdefault(name, []).append(float(value))
        if self.on_iteration is not None and self.on_iteration(
            iteration, {f"{split}/{name}": float(v) for (split, name), v in values.items()}
        ):
            self.stopped_at = iteration
        target = values.get((self.split, self.metric))
        if target is None:
            return self.stopped_at is not None
        if not math.isfinite(target):
            raise DataError(
                f"early stopping: {self.split} {self.metric} is {target} after round {iteration}; with the "
                "'skip' convention this means no validation query has a relevant document — use other "
                "validation data or set early_stopping.conventions.no_relevant"
            )
        if target > self.best_score:
            self.best_score = float(target)
            self.best_iteration = iteration
            self.best_values = dict(values)
        patience_over = self.patience is not None and iteration - self.best_iteration >= self.patience
        return patience_over or self.stopped_at is not None


class StopRecorder:
    """``on_iteration`` as handed to an engine: calls the caller's callback and remembers the first
    round after which it asked to stop (``stopped_at``), so every engine reports it the same way.

    >>> stop = StopRecorder(lambda i, values: values["valid/ndcg@10"] < 0.3)
    >>> [stop(i, {"valid/ndcg@10": v}) for i, v in enumerate([0.5, 0.2, 0.1])], stop.stopped_at
    ([False, True, True], 1)
    """

    def __init__(self, callback: OnIteration) -> None:
        self.callback = callback
        self.stopped_at: int | None = None

    def __call__(self, iteration: int, values: dict[str, float]) -> bool:
        stop = bool(self.callback(iteration, values))
        if stop and self.stopped_at is None:
            self.stopped_at = iteration
        return stop


@dataclass
class Watch:
    """What an iterative engine evaluates each round: the splits, ltr's metric and the monitor."""

    splits: dict[str, RankingData]  # "train" (when early_stopping.eval_train) and "valid" (when given)
    metric: RankingMetric | None  # None when no split is evaluated
    monitor: IterationMonitor
    max_label: int  # largest label over train and the evaluated splits

    def by_id(self, engine_sets: Mapping[int, str]) -> dict[int, RankingData]:
        """Map ``id(engine dataset)`` → RankingData, from ``{id(engine dataset): role}``."""
        return {key: self.splits[role] for key, role in engine_sets.items()}


def watch(
    train: RankingData,
    valid: RankingData | None,
    es: Mapping[str, Any],
    on_iteration: OnIteration | None,
    check: Callable[[RankingData, str, int], None] | None = None,
) -> Watch:
    """The evaluation plan of one fit (early stopping only when ``valid`` is given).

    ``check(data, role, max_label)`` is run on train and every evaluated split first: the engine's
    input validation, before any engine work.
    """
    splits = {"train": train} if es["eval_train"] else {}
    if valid is not None:
        splits["valid"] = valid
    max_label = int(max(float(np.max(d.y)) if d.n_docs else 0.0 for d in (train, *splits.values())))
    if check is not None:
        for role, data in {"train": train, **splits}.items():
            check(data, role, max_label)
    metric = RankingMetric.from_config(es) if splits else None
    monitor = IterationMonitor(es["metric"], es["patience"] if valid is not None else None, on_iteration)
    return Watch(splits, metric, monitor, max_label)
