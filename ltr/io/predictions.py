"""Score files of ranking tools: read them against a LETOR file, and write ours (TREC runs: :mod:`ltr.io.trec`).

Formats of a score file (text read under :mod:`ltr.io.textlines`' policy; the one row per document of
the data file it scores, in that file's order):

- ``lines``: one score per line — what the LightGBM and XGBoost command lines (``task=predict``),
  SVMrank (``svm_rank_classify``) and ``--write-scores`` write;
- ``ranklib``: RankLib's ``-score`` output, ``qid<TAB>index<TAB>score`` per line, ``index`` the
  0-based position of the document within its query.

``auto`` picks the format from the first line (1 field: ``lines``, 3 fields: ``ranklib``); every
other line must then have the same number of fields. Blank lines before the first score (e.g. a
line holding only a byte order mark) and after the last are ignored. A blank line between two
scores, a non-numeric or non-finite score, too few or too many scores for the data, or (RankLib) a
qid or index that does not match the data row is a :class:`~ltr.core.errors.DataError` naming ``file:line``.

>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> _ = (d / "lgb.txt").write_text("0.5\\n-1.25\\n2\\n")
>>> read_scores(d / "lgb.txt", n_rows=3).tolist()
[0.5, -1.25, 2.0]
>>> _ = (d / "ranklib.txt").write_text("7\\t0\\t0.5\\n7\\t1\\t-1.25\\n9\\t0\\t2\\n")
>>> read_scores(d / "ranklib.txt", n_rows=3, qid=np.array([7, 7, 9])).tolist()
[0.5, -1.25, 2.0]
>>> read_scores(d / "ranklib.txt", n_rows=3, qid=np.array([7, 8, 8]))
Traceback (most recent call last):
...
ltr.core.errors.DataError: .../ranklib.txt:2: qid 7 but row 2 of the data belongs to qid 8 (RankLib format: qid, index, score)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ltr.core.errors import DataError
from ltr.io.numbers import PLAIN_NUMBER, decimal, integer
from ltr.io.outputs import write_text_atomically
from ltr.io.textlines import check_no_bom, read_lines, split_fields

#: Score-file formats: ``auto`` (detected from the first line), ``lines``, ``ranklib``.
SCORE_FORMATS = ("auto", "lines", "ranklib")


_FIELDS_OF = {"lines": 1, "ranklib": 3}


_LAYOUT = {"lines": "one score per line", "ranklib": "RankLib format: qid, index, score"}


@dataclass(frozen=True)
class _Row:
    line: int
    fields: list[str]


def _rows(path: Path) -> Iterator[_Row]:
    """Non-blank rows with their line numbers; a blank line between two scores is an error."""
    blank, started = 0, False
    for number, line in read_lines(path):
        fields = split_fields(line)
        if not fields:
            blank = blank or (number if started else 0)
            continue
        started = True
        if blank:
            raise DataError(
                f"{path}:{blank}: a blank line among the scores; a score file has one row per document"
            )
        yield _Row(number, check_no_bom(path, number, fields))


def detect_format(path: str | Path) -> str:
    """``lines`` or ``ranklib`` from the first row's field count (1 or 3).

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "s.txt"
    >>> _ = p.write_text("3\\t0\\t0.25\\n")
    >>> detect_format(p)
    'ranklib'
    """
    path = Path(path)
    for row in _rows(path):
        for fmt, n in _FIELDS_OF.items():
            if len(row.fields) == n:
                return fmt
        raise DataError(
            f"{path}:{row.line}: cannot tell the score format from {len(row.fields)} fields "
            f"({' '.join(row.fields)[:80]!r}); expected 1 (one score per line: LightGBM, XGBoost, SVMrank) "
            "or 3 (RankLib: qid, index, score); or pass --scores-format"
        )
    raise DataError(f"{path}: no scores (the file is empty)")


def parse_score(path: str | Path, line: int, text: str) -> float:
    """A score field: a finite number in the grammar of :mod:`ltr.io.numbers` (no ``1_000``, no
    non-ASCII digits), else a ``DataError`` naming ``file:line`` (score files, TREC runs).

    >>> parse_score("run.txt", 3, "-1.5e2")
    -150.0
    >>> parse_score("run.txt", 4, "inf")
    Traceback (most recent call last):
    ...
    ltr.core.errors.DataError: run.txt:4: score must be finite, got 'inf'
    """
    value = decimal(text)
    if value is None:
        raise DataError(f"{path}:{line}: score must be a number, got {text[:80]!r} ({PLAIN_NUMBER})")
    if not math.isfinite(value):
        raise DataError(f"{path}:{line}: score must be finite, got {text!r}")
    return value


def read_scores(
    path: str | Path, *, n_rows: int, qid: np.ndarray | None = None, fmt: str = "auto"
) -> np.ndarray:
    """The float64 score of each of the ``n_rows`` data rows, from a score file in format ``fmt``.

    ``qid`` (the data's qid per row) is needed by the ``ranklib`` format, whose qid and index columns
    are checked against the data: row ``i`` must carry the qid of data row ``i`` and its position in
    that query (0-based). Every error names ``file:line`` (see the module docstring).
    """
    path = Path(path)
    if fmt not in SCORE_FORMATS:
        raise DataError(f"score format {fmt!r} is not one of {', '.join(SCORE_FORMATS)}")
    if fmt == "auto":
        fmt = detect_format(path)
    if fmt == "ranklib" and qid is None:
        raise DataError(f"{path}: the RankLib format needs the data's query ids to check against")
    want = _FIELDS_OF[fmt]
    within = _position_in_query(qid) if qid is not None else None
    scores = np.empty(n_rows, dtype=np.float64)
    count, last = 0, 0
    for row in _rows(path):
        last = row.line
        if len(row.fields) != want:
            shown = " ".join(row.fields)[:80]
            raise DataError(
                f"{path}:{row.line}: expected {want} field{'s' * (want > 1)} ({_LAYOUT[fmt]}), "
                f"got {len(row.fields)}: {shown!r}"
            )
        if count == n_rows:
            raise DataError(
                f"{path}:{row.line}: more scores than data rows (the data has {n_rows} rows); "
                "was the file written for another data file?"
            )
        if fmt == "ranklib":
            _check_ranklib(path, row, count, qid, within)
        scores[count] = parse_score(path, row.line, row.fields[-1])
        count += 1
    if count < n_rows:
        raise DataError(
            f"{path}:{last}: the file ends after {count} scores but the data has {n_rows} rows; "
            "was the file written for another data file?"
        )
    return scores


def _position_in_query(qid: np.ndarray) -> np.ndarray:
    """0-based position of each row within its contiguous qid block.

    >>> _position_in_query(np.array([4, 4, 4, 2, 2])).tolist()
    [0, 1, 2, 0, 1]
    """
    qid = np.asarray(qid)
    if qid.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
    sizes = np.diff(np.r_[starts, qid.shape[0]])
    return np.arange(qid.shape[0]) - np.repeat(starts, sizes)


def _check_ranklib(path: Path, row: _Row, i: int, qid: np.ndarray, within: np.ndarray) -> None:
    q, index = row.fields[0], row.fields[1]
    if q != str(qid[i]) and integer(q) != qid[i]:  # RankLib keeps "qid:007" as "007" (ASCII digits only)
        raise DataError(
            f"{path}:{row.line}: qid {q} but row {i + 1} of the data belongs to qid {qid[i]} ({_LAYOUT['ranklib']})"
        )
    if index != str(within[i]):
        raise DataError(
            f"{path}:{row.line}: index {index} but row {i + 1} of the data is document {within[i]} "
            f"(0-based) of qid {qid[i]} ({_LAYOUT['ranklib']})"
        )


def write_scores(path: str | Path, scores: np.ndarray) -> Path:
    """One score per line (``repr`` precision, so reading back gives the same float64).

    >>> import tempfile, pathlib
    >>> p = write_scores(pathlib.Path(tempfile.mkdtemp()) / "s.txt", np.array([0.1, -2.0]))
    >>> p.read_text()
    '0.1\\n-2.0\\n'
    """
    path = Path(path)
    check_finite_scores(path, scores)
    write_text(path, "".join(f"{float(s)!r}\n" for s in scores))
    return path


def check_finite_scores(
    path: str | Path, scores: np.ndarray, where: Callable[[int], str] | None = None
) -> None:
    """Refuse to write a NaN or infinite score (every reader of the file would refuse it): a
    ``DataError`` naming the output and the first such data row (``where(row)``, default ``data row N``)."""
    bad = np.flatnonzero(~np.isfinite(np.asarray(scores, dtype=np.float64)))
    if bad.size:
        row = int(bad[0])
        at = where(row) if where is not None else f"data row {row + 1}"
        raise DataError(
            f"{path}: the score of {at} is {float(scores[row])!r} ({bad.size} non-finite in all); "
            "a score file or run holds finite scores"
        )


def write_text(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) atomically (:func:`ltr.io.outputs.write_text_atomically`: a failure leaves the
    old file whole); an OS error is a :class:`~ltr.core.errors.DataError` naming the file."""
    write_text_atomically(path, text)
