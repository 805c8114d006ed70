"""Tables for people: the console summary of a run (and, later, leaderboards and plots).

>>> import numpy as np
>>> from ltr.train import SplitResult
>>> model = SplitResult("test", 2, {"ndcg@10": np.array([0.9, np.nan])})
>>> base = SplitResult("test", 2, {"ndcg@10": np.array([0.3, np.nan])})
>>> from rich.console import Console
>>> console = Console(width=100, record=True)
>>> console.print(results_table(model, base, model_name="lambdamart", conventions={"preset": "ltr"}))
>>> "0.9000" in console.export_text() and "+0.6000" in console.export_text()
True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.table import Table


def results_table(model: Any, baseline: Any, *, model_name: str, conventions: Mapping[str, str]) -> Table:
    """Mean of each metric for the model next to the random baseline on the same queries.

    ``model`` and ``baseline`` are :class:`ltr.train.SplitResult` of the same split.
    """
    skipped = max((model.n_skipped(m) for m in model.per_query), default=0)
    caption = ", ".join(f"{k}={v}" for k, v in conventions.items())
    if skipped:
        caption += f"; {skipped} of {model.n_queries} queries have no relevant document and are not averaged"
    table = Table(
        title=f"{model.split} metrics ({model.n_queries:,} queries)",
        caption=f"conventions: {caption}",
        caption_justify="left",
    )
    table.add_column("metric")
    table.add_column(model_name, justify="right")
    table.add_column("random scores", justify="right")
    table.add_column("Δ", justify="right")
    for metric in model.per_query:
        ours, theirs = model.mean(metric), baseline.mean(metric)
        table.add_row(metric, f"{ours:.4f}", f"{theirs:.4f}", f"{ours - theirs:+.4f}")
    return table
