"""Tables for people: the console summary of a run (and, later, leaderboards and plots).

>>> import numpy as np
>>> from ltr.experiment.pipeline import SplitResult
>>> model = SplitResult("test", 2, {"ndcg@10": np.array([0.9, np.nan])})
>>> base = SplitResult("test", 2, {"ndcg@10": np.array([0.3, np.nan])})
>>> import io
>>> from rich.console import Console
>>> console = Console(width=100, record=True, file=io.StringIO())
>>> console.print(results_table(model, base, model_name="lambdamart"))
>>> text = console.export_text()
>>> "0.9000" in text and "+0.6000" in text
True
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from rich.markdown import Markdown
from rich.table import Table
from rich.text import Text


def results_table(model: Any, baseline: Any, *, model_name: str) -> Table:
    """Mean of each metric for the model next to the random baseline on the same queries.

    ``model`` and ``baseline`` are :class:`ltr.experiment.pipeline.SplitResult` of the same split.
    """
    table = Table(title=f"{model.split} metrics ({model.n_queries:,} queries)")
    table.add_column("metric")
    table.add_column(model_name, justify="right")
    table.add_column("random scores", justify="right")
    table.add_column("Δ", justify="right")
    for metric in model.per_query:
        ours, theirs = model.mean(metric), baseline.mean(metric)
        table.add_row(metric, f"{ours:.4f}", f"{theirs:.4f}", f"{ours - theirs:+.4f}")
    return table


def conventions_note(model: Any, conventions: Mapping[str, str]) -> str:
    """One line saying which conventions produced the numbers, and how many queries were skipped.

    >>> import numpy as np
    >>> from ltr.experiment.pipeline import SplitResult
    >>> r = SplitResult("test", 3, {"ndcg@10": np.array([0.5, np.nan, 1.0])})
    >>> conventions_note(r, {"preset": "ltr", "ties": "average"})
    'conventions: preset=ltr, ties=average; 1 of 3 queries have no relevant document and are not averaged'
    """
    note = "conventions: " + ", ".join(f"{k}={v}" for k, v in conventions.items())
    skipped = max((model.n_skipped(m) for m in model.per_query), default=0)
    if skipped:
        note += f"; {skipped} of {model.n_queries} queries have no relevant document and are not averaged"
    return note


def leaderboard_table(
    report: Any, *, title: str | None = None, decimals: int = 4, width: int | None = None
) -> Table:
    """A :class:`ltr.analysis.comparison.ComparisonReport` as a terminal table: systems × metrics, each cell
    ``mean [CI]``, the best mean per metric in bold, ``†`` = significantly different from the baseline.
    The legend (:meth:`~ltr.analysis.comparison.ComparisonReport.legend`) is the caption. When the rows
    would not fit in ``width`` columns and there are fewer systems than metrics, the table is transposed
    (metrics × systems); names are never cut.

    >>> import io, numpy as np, pandas as pd
    >>> from rich.console import Console
    >>> from ltr.analysis.comparison import compare
    >>> q = [f"q{i}" for i in range(30)]
    >>> rng = np.random.default_rng(0)
    >>> rep = compare({"bm25_base": pd.DataFrame({"ndcg@10": rng.random(30)}, index=q),
    ...                "lambda_mart": pd.DataFrame({"ndcg@10": rng.random(30) + 0.3}, index=q)},
    ...               baseline="bm25_base", B=500)
    >>> console = Console(width=120, record=True, file=io.StringIO())
    >>> console.print(leaderboard_table(rep, title="demo"))
    >>> text = console.export_text()
    >>> "lambda_mart" in text and "bm25_base (baseline)" in text and "\\\\_" not in text and "**" not in text
    True
    """
    names = {s: s + (" (baseline)" if s == report.baseline else "") for s in report.systems}
    cells = {
        (s, m): _leaderboard_cell(report, s, m, decimals) for s in report.systems for m in report.metrics
    }
    cell_width = max(len(c.plain) for c in cells.values())
    needed = max(map(len, names.values())) + len(report.metrics) * (cell_width + 3) + 4
    transpose = width is not None and needed > width and len(report.systems) < len(report.metrics)
    table = Table(title=title, caption=report.legend(), caption_justify="left", title_justify="left")
    if transpose:  # metrics down the side: a long metric list fits the terminal instead of a grid of "…"
        table.add_column("metric", no_wrap=True)
        for system in report.systems:
            table.add_column(names[system], justify="right", min_width=len(names[system]), overflow="fold")
        for metric in report.metrics:
            table.add_row(Text(metric), *(cells[system, metric] for system in report.systems))
        return table
    table.add_column("system", no_wrap=True, min_width=max(map(len, names.values())))
    for metric in report.metrics:
        table.add_column(metric, justify="right", overflow="fold")
    for system in report.systems:
        table.add_row(Text(names[system]), *(cells[system, metric] for metric in report.metrics))
    return table


def summary_table(
    report: Any, *, primary: str, width: int, decimals: int = 4
) -> tuple[Table, tuple[str, ...]]:
    """The leaderboard on one screen: one line per system, never wider than ``width`` columns.

    Every cell is ``mean [CI]`` when that fits; otherwise the ``primary`` metric keeps its CI and the
    others show their mean (bold = best, ``†`` = significantly different from the baseline, as in
    :func:`leaderboard_table`), and metrics that still do not fit are left out — returned as the second
    value, for the caller to say where they are. Names are never cut. The legend is
    :meth:`~ltr.analysis.comparison.ComparisonReport.legend` (``brief=True``), for the caller to print.

    >>> import io, numpy as np, pandas as pd
    >>> from rich.console import Console
    >>> from ltr.analysis.comparison import compare
    >>> q = range(30)
    >>> rng = np.random.default_rng(0)
    >>> metrics = ["ndcg@1", "ndcg@5", "ndcg@10", "map"]
    >>> frames = {s: pd.DataFrame({m: rng.random(30) for m in metrics}, index=q) for s in ("base", "lambdamart")}
    >>> rep = compare(frames, baseline="base", B=200)
    >>> table, left_out = summary_table(rep, primary="ndcg@10", width=50)
    >>> console = Console(width=50, record=True, file=io.StringIO())
    >>> console.print(table)
    >>> text = console.export_text()
    >>> left_out, max(map(len, text.splitlines())) <= 50, "base (baseline)" in text
    (('ndcg@5', 'map'), True, True)
    """
    names = {s: s + (" (baseline)" if s == report.baseline else "") for s in report.systems}
    metrics = [primary, *(m for m in report.metrics if m != primary)]

    def cell(system: str, metric: str, ci: bool) -> Text:
        text = _leaderboard_cell(report, system, metric, decimals)
        return text if ci else text[: text.plain.index(" [")]

    def column_width(metric: str, ci: bool) -> int:
        return max(len(metric), *(len(cell(s, metric, ci).plain) for s in report.systems))

    gap = 2  # rich's padding between columns of a box-less table
    used = max(len("system"), *map(len, names.values()))
    shown: list[tuple[str, bool]] = []
    every_ci = used + sum(column_width(m, True) + gap for m in metrics) <= width
    for metric in metrics:
        ci = every_ci or metric == primary
        extra = column_width(metric, ci) + gap
        if shown and used + extra > width:
            break
        shown.append((metric, ci))
        used += extra
    table = Table(box=None, pad_edge=False, header_style="bold")
    table.add_column("system", no_wrap=True)
    for metric, _ in shown:
        table.add_column(metric, justify="right", no_wrap=True)
    for system in report.systems:
        table.add_row(Text(names[system]), *(cell(system, metric, ci) for metric, ci in shown))
    return table, tuple(metrics[len(shown) :])


def _leaderboard_cell(report: Any, system: str, metric: str, decimals: int) -> Text:
    """``mean† [low, high]``: bold when best, ``†`` when significantly different from the baseline."""
    r = report.row(system, metric)
    cell = Text(
        f"{r.mean:.{decimals}f}", style="bold" if system in report.best_systems(metric, decimals) else ""
    )
    cell.append("†" if r.significant else " ")
    cell.append(f" [{r.ci_low:.{decimals}f}, {r.ci_high:.{decimals}f}]", style="dim")
    return cell


def print_comparison(console: Any, report: Any, *, title: str, sections: Sequence[str] = ()) -> None:
    """A comparison on the console: the leaderboard as a terminal table (:func:`leaderboard_table`), then
    each Markdown ``section`` (detail, metric agreement, failure analysis) rendered for the terminal —
    tables drawn, bold shown, no ``**`` or ``\\_`` left. The same report written to a file stays Markdown.
    A console that is not a terminal gets the same layout as plain text.

    >>> import io, numpy as np, pandas as pd
    >>> from rich.console import Console
    >>> from ltr.analysis.comparison import compare
    >>> q = [f"q{i}" for i in range(20)]
    >>> rep = compare({"base_line": pd.DataFrame({"ndcg@10": np.linspace(0, 1, 20)}, index=q),
    ...                "new_model": pd.DataFrame({"ndcg@10": np.linspace(0.2, 1, 20)}, index=q)},
    ...               baseline="base_line", B=200)
    >>> console = Console(width=150, file=io.StringIO())
    >>> print_comparison(console, rep, title="demo", sections=[rep.detail_markdown()])
    >>> text = console.file.getvalue()
    >>> "base_line (baseline)" in text and "ndcg@10 vs base_line" in text and "\\\\_" not in text and "**" not in text
    True
    """
    console.print()
    console.print(leaderboard_table(report, title=title, width=console.width))
    for section in sections:
        console.print()
        for block in markdown_blocks(section):
            console.print(block)


#: a Markdown escape (``\_``, ``\|``, …) and a bold span (``**x**``)
_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|])")
_BOLD = re.compile(r"\*\*(.+?)\*\*")


def _inline(cell: str) -> Text:
    r"""One Markdown table cell as rich Text: escapes removed, ``**bold**`` bold.

    >>> t = _inline(" **lambda\\_mart** (baseline) ")
    >>> t.plain, [(s.start, s.end, str(s.style)) for s in t.spans]
    ('lambda_mart (baseline)', [(0, 11, 'bold')])
    """
    text, last, cell = Text(), 0, cell.strip()
    for m in _BOLD.finditer(cell):
        text.append(_ESCAPE.sub(r"\1", cell[last : m.start()]))
        text.append(_ESCAPE.sub(r"\1", m.group(1)), style="bold")
        last = m.end()
    text.append(_ESCAPE.sub(r"\1", cell[last:]))
    return text


def _cells(line: str) -> list[str]:
    r"""The cells of a Markdown table row (``|`` inside ``\|`` is text)."""
    return [c for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def markdown_blocks(section: str) -> list[Any]:
    r"""A Markdown section as terminal renderables: its tables as rich Tables whose first column (the
    system or metric names) is never cut — it keeps its longest name's width and folds only a name
    wider than half the terminal — and the rest as rich Markdown.

    >>> import io
    >>> from rich.console import Console
    >>> md = "| system | Δ |\n|---|---:|\n| lambdamart_xgb_unbiased_clicks | +0.0123 |"
    >>> console = Console(width=30, file=io.StringIO())
    >>> for block in markdown_blocks(md): console.print(block)
    >>> "lambdamart_xgb_unbiased_clicks" in console.file.getvalue()
    True
    """
    blocks: list[Any] = []
    text: list[str] = []
    table: list[str] = []

    def flush_text() -> None:
        if "".join(text).strip():
            blocks.append(Markdown("\n".join(text)))
        text.clear()

    def flush_table() -> None:
        if table:
            header, rows = _cells(table[0]), [_cells(r) for r in table[2:]]
            aligns = ["right" if c.strip().endswith(":") else "left" for c in _cells(table[1])]
            grid = Table(show_edge=False, box=None, header_style="bold", pad_edge=False)
            longest = max((len(_inline(r[0]).plain) for r in rows if r), default=0)
            for i, name in enumerate(header):
                first = i == 0
                grid.add_column(
                    _inline(name),
                    justify=aligns[i] if i < len(aligns) else "left",  # type: ignore[arg-type]
                    min_width=longest if first else None,
                    overflow="fold",
                    ratio=None,
                )
            for r in rows:
                grid.add_row(*(_inline(c) for c in r))
            blocks.append(grid)
        table.clear()

    for line in section.splitlines():
        if line.lstrip().startswith("|"):
            if not table:
                flush_text()
            table.append(line)
        else:
            flush_table()
            text.append(line)
    flush_table()
    flush_text()
    return blocks
