"""Click logs and propensity files: the impression-log container, reading a log file, writing and reading θ.

A **click log** has one row per shown document and the columns ``session`` (one result page),
``qid`` (its query), ``doc`` (the document id, unique within the query), ``position`` (1-based
display position) and ``click`` (0 or 1), as CSV or Parquet (:func:`read_click_log`; every error names
the file, the line and the column). Estimated propensities are written as JSON (``position`` 1..K,
``examination``, the CI bounds: :func:`write_propensities`) and read back by the click-trained models
(:func:`read_propensities`, errors naming the config key).

>>> log = impression_log(session=[1, 1], qid=["a", "a"], doc=["x", "y"], position=[1, 2], click=[1, 0])
>>> log.position.tolist(), log.click.tolist()
([1, 2], [1.0, 0.0])
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ltr.core.errors import ConfigError, DataError
from ltr.io.numbers import PLAIN_NUMBER, decimal, integral
from ltr.io.outputs import write_text_atomically

LOG_COLUMNS = ("session", "qid", "doc", "position", "click")
#: The deepest display position a log may hold (a bound that keeps every index computation in int64).
MAX_POSITION = 10**9
#: The largest click or impression count a counts file may hold (a billion searches a day for 3,000 years).
MAX_COUNT = 1e15


PARQUET_SUFFIXES = (".parquet", ".pq")


@dataclass(frozen=True)
class ImpressionLog:
    """A validated click log as integer codes: ``query`` 0..Q−1, ``pair`` (query, doc) 0..P−1."""

    query: np.ndarray
    pair: np.ndarray
    position: np.ndarray  # 1-based
    click: np.ndarray  # 0.0 / 1.0
    source: str = "click log"
    # per pair: its qid and doc as the log spells them and the first 0-based row showing it
    pair_qid: np.ndarray | None = None
    pair_doc: np.ndarray | None = None
    pair_row: np.ndarray | None = None
    row_label: str = "row"
    session: np.ndarray | None = None  # per row: its session (result page) as an integer code

    @property
    def n_queries(self) -> int:
        return int(self.query.max(initial=-1)) + 1


@dataclass(frozen=True)
class Propensities:
    """Examination per position, normalised to position 1, with a bootstrap percentile CI.

    ``no_ci`` holds, per position, why it has no CI ("" where it has one; its bounds are then NaN):
    a CI whose uncertainty cannot be computed is not shown as one (:mod:`ltr.clicks.propensity`)."""

    position: np.ndarray
    examination: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    method: str
    n_bootstrap: int
    confidence: float
    seed: int
    no_ci: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        """``{"position": [1, 2, …], "examination": [1.0, …], "ci_low": […], "ci_high": […], "confidence":
        0.95, "method": …, "n_bootstrap": …}``; a position without a CI has ``null`` bounds, and
        ``"no_ci": {"2": "<reason>", …}`` follows."""
        out: dict[str, Any] = {
            "position": [int(p) for p in self.position],
            "examination": [float(v) for v in self.examination],
            "ci_low": [_bound(v) for v in self.ci_low],
            "ci_high": [_bound(v) for v in self.ci_high],
            "confidence": float(self.confidence),
            "method": self.method,
            "n_bootstrap": int(self.n_bootstrap),
        }
        reasons = {str(int(p)): why for p, why in zip(self.position, self.no_ci, strict=False) if why}
        if reasons:
            out["no_ci"] = reasons
        return out


def _bound(value: float) -> float | None:
    return None if np.isnan(value) else float(value)


def impression_log(
    *,
    session: Sequence[Any] | np.ndarray,
    qid: Sequence[Any] | np.ndarray,
    doc: Sequence[Any] | np.ndarray,
    position: Sequence[Any] | np.ndarray,
    click: Sequence[Any] | np.ndarray,
    source: str = "click log",
    row_label: str = "row",
    line_of: Callable[[int], int] | None = None,
) -> ImpressionLog:
    """Validate the five columns (errors name ``source``, the column and the 1-based row; with
    ``line_of`` (0-based row → 1-based line of a text file) also ``source:line``)."""

    def where(i: int, column: str) -> str:
        at = f"{source}:{line_of(i)}" if line_of is not None else source
        return f"{at}: column {column!r}, {row_label} {i + 1}"

    columns = {"session": session, "qid": qid, "doc": doc, "position": position, "click": click}
    arrays = {name: np.asarray(values, dtype=object) for name, values in columns.items()}
    n = len(arrays["session"])
    for name, values in arrays.items():
        if len(values) != n:
            raise DataError(f"{source}: column {name!r} has {len(values)} rows, column 'session' {n}")
    if n == 0:
        raise DataError(f"{source}: the click log has no rows")
    for name in ("session", "qid", "doc"):
        bad = [i for i, v in enumerate(arrays[name]) if _missing(v)]
        if bad:
            raise DataError(f"{where(bad[0], name)}: empty value")
    pos = _integers(
        arrays["position"], where, "position", f"an integer in [1, {MAX_POSITION}] (1-based)", low=1,
        high=MAX_POSITION,
    )  # fmt: skip
    clk = _integers(arrays["click"], where, "click", "0 or 1", low=0, high=1, flags=True)

    keys = {
        name: np.unique(arrays[name].astype(str), return_inverse=True)[1]
        for name in ("session", "qid", "doc")
    }
    session_codes, query_codes = keys["session"], keys["qid"]
    first_query = np.full(session_codes.max() + 1, -1)
    first_query[session_codes[::-1]] = query_codes[::-1]  # the first row of each session wins
    wrong = np.flatnonzero(first_query[session_codes] != query_codes)
    if wrong.size:
        i = int(wrong[0])
        raise DataError(
            f"{where(i, 'qid')}: session {arrays['session'][i]!r} already has "
            f"another qid (one session is one query's result page)"
        )
    slot = session_codes.astype(np.int64) * (int(pos.max()) + 1) + pos
    _, first, counts = np.unique(slot, return_index=True, return_counts=True)
    if np.any(counts > 1):
        dup = np.setdiff1d(np.arange(n), first)[0]
        raise DataError(
            f"{where(int(dup), 'position')}: session {arrays['session'][dup]!r} "
            f"already shows a document at position {pos[dup]}"
        )
    _, pair_row, pair = np.unique(
        np.stack([query_codes, keys["doc"]], axis=1), axis=0, return_index=True, return_inverse=True
    )
    return ImpressionLog(
        query=query_codes,
        pair=pair.ravel(),
        position=pos,
        click=clk.astype(np.float64),
        source=source,
        pair_qid=arrays["qid"][pair_row],
        pair_doc=arrays["doc"][pair_row],
        pair_row=pair_row,
        row_label=row_label,
        session=session_codes.astype(np.int64),
    )


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and np.isnan(value)) or str(value).strip() == ""


def _integers(
    values: np.ndarray,
    where: Callable[[int, str], str],
    column: str,
    expected: str,
    *,
    low: int,
    high: int,
    flags: bool = False,
) -> np.ndarray:
    """The column as int64: each value an integer in ``[low, high]`` written in the grammar of
    :mod:`ltr.io.numbers` (``2``, ``2.0``; never ``1_000``, non-ASCII digits or ``1e30``), or a
    ``DataError`` at ``where(row, column)``. ``flags``: booleans count as 0/1 (a Parquet bool column)."""
    out = np.empty(len(values), dtype=np.int64)
    for i, v in enumerate(values):
        n = _integral_value(v, flags)
        if n is None or not low <= n <= high:
            raise DataError(f"{where(i, column)}: expected {expected}, got {_shown(v)}")
        out[i] = n
    return out


def _integral_value(v: Any, flags: bool) -> int | None:
    """An integral value of a log cell (text, a number of a Parquet column), else ``None``."""
    if isinstance(v, bool | np.bool_):
        return int(v) if flags else None
    if isinstance(v, int | np.integer):
        return int(v)
    if isinstance(v, float | np.floating):
        return int(v) if np.isfinite(v) and v == int(v) else None
    if isinstance(v, str):
        return integral(v.strip(" \t"))
    return None


def _shown(v: Any) -> str:
    return repr(v[:80]) if isinstance(v, str) else repr(v.item() if isinstance(v, np.generic) else v)


def read_click_log(path: str | Path) -> ImpressionLog:
    """Read and validate a CSV (header row) or Parquet (``.parquet``/``.pq``) click log."""
    import pandas as pd  # deferred: pandas loads only when a click log file is read

    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such click log file")
    parquet = path.suffix.lower() in PARQUET_SUFFIXES
    try:
        if parquet:
            frame = pd.read_parquet(path)
        else:
            frame = pd.read_csv(path, dtype=str, keep_default_na=False, skipinitialspace=True)
    except Exception as exc:  # noqa: BLE001 - any reader failure is the file's problem, said with its name
        kind = "Parquet" if parquet else "CSV"
        why = " ".join(str(exc).split())  # one line: pandas' messages can hold line breaks
        raise DataError(f"{path}: not a readable {kind} click log ({type(exc).__name__}: {why})") from exc
    frame.columns = [str(c).strip() for c in frame.columns]
    missing = [c for c in LOG_COLUMNS if c not in frame.columns]
    if missing:
        raise DataError(
            f"{path}: missing column(s) {', '.join(missing)}; a click log has the columns "
            f"{', '.join(LOG_COLUMNS)} (found {', '.join(map(str, frame.columns)) or 'none'})"
        )
    # CSV rows are counted after the header and its blank lines; a message names the file's line too
    row_label = "row" if parquet else "data row"
    return impression_log(
        **{c: frame[c].to_numpy(dtype=object) for c in LOG_COLUMNS},
        source=str(path),
        row_label=row_label,
        line_of=None if parquet else lambda row: csv_line_number(path, row),
    )


def csv_line_number(path: Path, row: int) -> int:
    """The 1-based line where 0-based data row ``row`` of a CSV file (after its header; blank lines
    skipped, as pandas reads it) starts. Reads the file again, so only error paths call it.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "log.csv"
    >>> _ = p.write_text('a,b\\n\\n1,"x\\ny"\\n2,z\\n')
    >>> csv_line_number(p, 0), csv_line_number(p, 1)
    (3, 5)
    """
    with open(path, encoding="utf-8-sig", errors="replace", newline="") as f:
        records = csv.reader(f)
        seen, start = -2, 1  # the header is record -1
        for record in records:
            if record:
                seen += 1
                if seen == row:
                    return start
            start = records.line_num + 1
    raise ValueError(f"{path} has no data row {row}")  # a caller's bug: rows come from this file


def write_propensities(propensities: Propensities, path: str | Path) -> None:
    """Write :meth:`Propensities.as_json` to ``path`` atomically (:mod:`ltr.io.outputs`)."""
    write_text_atomically(path, json.dumps(propensities.as_json(), indent=1, allow_nan=False) + "\n")


def read_propensities(path: str | Path, where: str = "clicks.propensities") -> np.ndarray:
    """θ per 0-based position from a ``--json`` file (``position`` 1..K in order, ``examination`` > 0).

    Errors name ``where`` (the config key) and the file.
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{where}: no such propensity file {str(path)!r}") from None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{where}: {path} is not a JSON propensity file ({exc})") from exc
    if not isinstance(data, dict) or not {"position", "examination"} <= set(data):
        raise ConfigError(
            f"{where}: {path} needs the keys 'position' and 'examination' (python -m ltr.clicks propensity --json)"
        )
    position, theta = data["position"], data["examination"]
    if not (isinstance(position, list) and isinstance(theta, list) and len(position) == len(theta) and theta):
        raise ConfigError(f"{where}: {path}: 'position' and 'examination' must be lists of the same length")
    if position != list(range(1, len(position) + 1)):
        raise ConfigError(f"{where}: {path}: 'position' must be 1, 2, …, {len(position)} in order")
    values = np.asarray(theta, dtype=object)
    if not all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v) and v > 0 for v in values
    ):
        raise ConfigError(f"{where}: {path}: every 'examination' value must be a finite number > 0")
    return values.astype(np.float64)


def read_position_counts(path: str | Path) -> dict[str, tuple[list[int], list[float], list[float]]]:
    """Aggregated counts, ``position clicks impressions [segment]`` per line (whitespace-separated; blank
    lines and ``#`` comments skipped), as ``{segment: (positions, clicks, impressions)}`` in file order
    (segment ``""`` when the lines have three fields). Errors name the file and line.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "counts.txt"
    >>> _ = p.write_text("# position clicks impressions\\n1 120 200\\n2 60 200\\n")
    >>> read_position_counts(p)
    {'': ([1, 2], [120.0, 60.0], [200.0, 200.0])}
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DataError(f"{path}: no such counts file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: cannot read it as a text counts file ({exc})") from exc
    out: dict[str, tuple[list[int], list[float], list[float]]] = {}
    width = None
    for number, raw in enumerate(text.removeprefix("\ufeff").splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        fields = line.split()
        where = f"{path}:{number}"
        if len(fields) not in (3, 4) or (width is not None and len(fields) != width):
            expected = "3 or 4" if width is None else str(width)
            raise DataError(
                f"{where}: {len(fields)} fields, expected {expected}: 'position clicks impressions [segment]'"
            )
        width = len(fields)
        position = integral(fields[0])
        if position is None or not 1 <= position <= MAX_POSITION:
            raise DataError(f"{where}: position {fields[0]!r} is not a whole number in 1..{MAX_POSITION}")
        counts = []
        for name, value in zip(("clicks", "impressions"), fields[1:3], strict=True):
            parsed = decimal(value)
            if parsed is None or not np.isfinite(parsed) or parsed < 0 or parsed > MAX_COUNT:
                raise DataError(
                    f"{where}: {name} {value!r} is not a number in [0, {MAX_COUNT:.0e}] ({PLAIN_NUMBER})"
                )
            counts.append(parsed)
        if counts[0] > counts[1]:
            raise DataError(f"{where}: {counts[0]:g} clicks out of {counts[1]:g} impressions")
        positions, clicks, impressions = out.setdefault(fields[3] if width == 4 else "", ([], [], []))
        if position in positions:
            raise DataError(
                f"{where}: position {position} is given twice"
                + (f" in segment {fields[3]!r}" if width == 4 else "")
            )
        positions.append(position)
        clicks.append(counts[0])
        impressions.append(counts[1])
    if not out:
        raise DataError(f"{path}: no counts (lines 'position clicks impressions [segment]')")
    return out
