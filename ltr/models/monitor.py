"""Per-iteration bookkeeping shared by every iterative engine: history, callbacks, early stopping.

An engine adapter computes, after each boosting round ``i`` (0-based), a mapping
``{(split, metric): value}`` and hands it to :meth:`IterationMonitor.update`, which

1. appends every value to ``history[split][metric]`` (so ``history["valid"]["ndcg@10"][i]`` is the
   value after round ``i``; this becomes the ranker's ``evals_result_``),
2. calls ``on_iteration(i, {"split/metric": value, ...})`` (e.g. to log curves live),
3. tracks the best round of the early-stopping metric on the ``valid`` split (strictly greater is
   better; the earliest round wins ties) and returns ``True`` once ``patience`` rounds passed
   without improvement.

>>> m = IterationMonitor("ndcg@10", patience=2)
>>> [m.update(i, {("valid", "ndcg@10"): v}) for i, v in enumerate([0.5, 0.7, 0.7, 0.6])]
[False, False, False, True]
>>> m.best_iteration, m.best_score, m.history["valid"]["ndcg@10"]
(1, 0.7, [0.5, 0.7, 0.7, 0.6])
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from ltr.errors import DataError

OnIteration = Callable[[int, dict[str, float]], None]


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

    def update(self, iteration: int, values: Mapping[tuple[str, str], float]) -> bool:
        """Record round ``iteration``; return ``True`` when early stopping says stop now."""
        for (split, name), value in values.items():
            self.history.setdefault(split, {}).setdefault(name, []).append(float(value))
        if self.on_iteration is not None:
            self.on_iteration(iteration, {f"{split}/{name}": float(v) for (split, name), v in values.items()})
        target = values.get((self.split, self.metric))
        if target is None:
            return False
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
        return self.patience is not None and iteration - self.best_iteration >= self.patience
