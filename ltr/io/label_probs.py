"""Label-probability tables: one row per document of a data file, one column per grade.

What ``python -m ltr.labelnext --probs FILE`` reads: a ``.npy`` array, or text with one row per line
(comma- or whitespace-separated; blank lines and ``#`` comments skipped), rows in the data file's order.
Each row holds P(label = g) for the grades g = 0, 1, …: finite, >= 0 and summing to 1 within
:data:`SUM_TOLERANCE` (a table printed with a few decimals rounds: ``0.333,0.333,0.333``), then scaled
to sum to exactly 1. Errors name the file and the 1-based line (text) or row (``.npy``).

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "p.csv"
>>> _ = path.write_text("# P(0),P(1)\\n0.5,0.5\\n\\n0.3333,0.6667\\n")
>>> read_label_probs(path, 2).sum(axis=1).tolist()
[1.0, 1.0]
>>> _ = path.write_text("0.5,0.5\\n0.5,0.6\\n")
>>> read_label_probs(path, 2)
Traceback (most recent call last):
...
ltr.core.errors.DataError: ...p.csv line 2: the probabilities sum to 1.1, not 1 (tolerance 0.001)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ltr.core.errors import DataError
from ltr.io.numbers import PLAIN_NUMBER, decimal

#: how far a row's sum may be from 1 (rounding of printed tables); the row is then scaled to sum to 1
SUM_TOLERANCE = 1e-3


def read_label_probs(path: str | Path, n_rows: int) -> np.ndarray:
    """A (n_rows, n_grades) array from ``.npy`` or a CSV/whitespace text file; errors name the file and line."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such label-probability file")
    if path.suffix == ".npy":
        try:
            probs = np.asarray(np.load(path, allow_pickle=False), dtype=np.float64)
        except (OSError, ValueError) as exc:
            raise DataError(f"{path}: not a label-probability table ({exc})") from None
        where = [f"{path} row {i + 1}" for i in range(probs.shape[0] if probs.ndim else 0)]
    else:
        probs, where = _read_text(path)
    if probs.ndim != 2 or probs.shape[0] != n_rows or probs.shape[1] < 2:
        raise DataError(
            f"{path}: expected {n_rows} rows (one per data row) of >= 2 grade probabilities, got shape {probs.shape}"
        )
    bad = np.flatnonzero(~np.isfinite(probs).all(axis=1) | (probs < 0).any(axis=1))
    if bad.size:
        raise DataError(
            f"{where[bad[0]]}: probabilities must be finite and >= 0, got {probs[bad[0]].tolist()}"
        )
    sums = probs.sum(axis=1)
    bad = np.flatnonzero(np.abs(sums - 1.0) > SUM_TOLERANCE)
    if bad.size:
        raise DataError(
            f"{where[bad[0]]}: the probabilities sum to {sums[bad[0]]:.6g}, not 1 (tolerance {SUM_TOLERANCE:g})"
        )
    return probs / sums[:, None]


def _read_text(path: Path) -> tuple[np.ndarray, list[str]]:
    """The rows of a text table and where each came from (``FILE line N``, 1-based)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: not a label-probability table ({exc})") from None
    rows, where = [], []
    for number, line in enumerate(lines, start=1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        fields = text.replace(",", " ").split()
        values = [decimal(f) for f in fields]
        if None in values:
            bad = fields[values.index(None)]
            raise DataError(
                f"{path} line {number}: not a number in {line.strip()[:80]!r}: {bad[:80]!r} ({PLAIN_NUMBER})"
            )
        rows.append(values)
        where.append(f"{path} line {number}")
        if len(rows[-1]) != len(rows[0]):
            raise DataError(
                f"{where[-1]}: {len(rows[-1])} probabilities, but the first row has {len(rows[0])}"
            )
    return (np.array(rows, dtype=np.float64) if rows else np.empty((0, 0))), where
