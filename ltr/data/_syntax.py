"""What the SVMlight/LETOR parsers agree on: parse options, error codes and their messages.

Both engines (the pure-Python reference in :mod:`ltr.data._pyparse` and the numba kernels in
:mod:`ltr.data._fastparse`) tokenise exactly the same grammar and report the same error codes;
this module turns a code plus the offending bytes into the one message users see::

    rank.train:1042: feature index 0 but indices are 1-based (load with zero_based=True ...)

Grammar of one line (``#`` starts a comment; blank and comment-only lines are skipped; ``\\r``,
tab, form feed and vertical tab count as spaces, so CRLF files parse like LF files). The encoding
policy is :mod:`ltr.io.textlines`': a leading UTF-8 byte order mark is ignored (read as spaces), a
``\\r`` not followed by ``\\n`` is the error ``LONE_CR`` (before any other but ``UTF16``, a file
starting with a UTF-16 byte order mark), and only ``\\n`` ends a
line (U+2028 and friends inside a comment are comment bytes)::

    line    := label [ "qid:" qid ] { index ":" value } [ "#" comment ]
    label   := number            qid := digits            index := digits
    number  := [+-] ( digits [ "." digits* ] | "." digits ) [ (e|E) [+-] digits ]
             | [+-] ( "nan" | "inf" | "infinity" )   (case-insensitive)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ltr.core.config_check import check_block, check_value, setting
from ltr.core.errors import ConfigError
from ltr.io.textlines import LONE_CR_TEXT, UTF16_TEXT

# the largest float64 that still rounds to a finite float32 (float32 max plus just under half an ulp):
# every value above it would become inf in a float32 array
FLOAT32_MAX = float(np.nextafter(np.float64(2.0**127) * (2.0 - 2.0**-24), 0.0))
MAX_INDEX = 2**31 - 2  # largest feature index we can store in int32 CSR indices

# error codes shared by both engines -------------------------------------------------------------
OK = 0
BAD_LABEL = 1
BAD_QID = 2
BAD_TOKEN = 3
BAD_INDEX = 4
BAD_VALUE = 5
INDEX_ZERO = 6
INDEX_TOO_LARGE = 7
UNSORTED = 8
DUPLICATE = 9
LABEL_NOT_INT = 10
LABEL_NEGATIVE = 11
LABEL_OUT_OF_RANGE = 12
NONFINITE = 13
NAN_CLIP = 14
QID_MISSING = 15
QID_UNEXPECTED = 16
LABEL_NONFINITE = 17
FILE_CHANGED = 18  # more rows / entries than counted a pass earlier: the file changed under us
LONE_CR = 19  # a carriage return not followed by a line feed (CR-only line endings)
UTF16 = 20  # the file starts with a UTF-16 byte order mark

NONFINITE_POLICIES = ("error", "keep", "missing", "clip")
OUTPUTS = ("auto", "dense", "csr")


def check_label_range(value: Any, path: str) -> tuple[float, float] | None:
    """``(low, high)`` with ``low <= high``, as floats; ``None`` checks nothing."""
    if value is None:
        return None
    if isinstance(value, str | bytes) or not isinstance(value, Sequence | np.ndarray) or len(value) != 2:
        raise ConfigError(f"{path}: expected (low, high), got {value!r}")
    low, high = (check_value(v, float, None, f"{path}[{i}]") for i, v in enumerate(value))
    if not low <= high:
        raise ConfigError(f"{path}: must be (low, high) with low <= high, got {value!r}")
    return (low, high)


@dataclass(frozen=True)
class ParseOptions:
    """Every option that changes what a file parses to (and so keys the cache).

    Defaults are strict: anything unusual is an error that names the file and line.

    n_features: number of feature columns; an index above it is an error. ``None``: the largest
        index seen (pass it from the config so train/valid/test align).
    zero_based: indices start at 0 (LightGBM/XGBoost text files). Default 1-based (SVMlight,
        LETOR); never guessed.
    allow_unsorted: accept feature indices out of order or repeated on a line (a repeated index:
        the last value wins). Default: error.
    integer_labels: labels must be whole numbers (graded relevance).
    allow_negative_labels: accept labels below zero.
    label_range: inclusive ``(low, high)`` bounds for labels; ``None`` checks nothing beyond the above.
    nonfinite: what to do with NaN, ±inf and values with ``|v| > huge`` (Istella's 1.79e308):
        ``"error"`` (default), ``"keep"`` (NaN stays NaN, huge and inf become ±inf),
        ``"missing"`` (all become NaN, which LightGBM and XGBoost treat as missing) or
        ``"clip"`` (±inf and huge become ±huge; NaN is still an error).
    huge: magnitude above which a value counts as a sentinel; defaults to the largest value that
        still rounds to a finite float32 (3.4028235677973362e38), so every value that would
        overflow float32 is caught and float32's own maximum (``3.40282347e+38``) is not. With
        ``dtype="float32"`` a larger ``huge`` is a ``ConfigError`` (values between would become ±inf
        unchecked, or ``clip`` would clip to inf).
    output: ``"dense"``, ``"csr"`` or ``"auto"``: dense when entries / (lines × n_features) ≥
        ``density``, where entries = the ``:`` bytes of the file minus one per line if it has qids
        (exactly the ``index:value`` entries per cell for files without comments or blank lines; a
        byte count both engines make before parsing).
    density: threshold for ``output="auto"``.
    dtype: feature dtype, ``"float32"`` (default) or ``"float64"``.
    regroup: when a qid appears in several separate blocks, gather its rows (stable: queries in
        order of first appearance, rows in file order). Default: error naming both row ranges. On
        Dask it also gathers a qid found in several shards of a split (:mod:`ltr.distributed.shards`).
    """

    n_features: int | None = setting(None, low=0)
    zero_based: bool = False
    allow_unsorted: bool = False
    integer_labels: bool = True
    allow_negative_labels: bool = False
    label_range: Any = setting(None, check=check_label_range)  # (low, high) as floats, or None
    nonfinite: str = setting("error", choices=NONFINITE_POLICIES)
    huge: float = setting(FLOAT32_MAX, low=0.0, open_low=True)
    output: str = setting("auto", choices=OUTPUTS)
    density: float = setting(0.25, low=0.0, high=1.0)
    dtype: str = setting("float32", choices=("float32", "float64"))
    regroup: bool = False

    def __post_init__(self) -> None:
        """Every option checked by its declaration (:func:`ltr.core.config_check.check_block`), as plain Python."""
        for name, value in check_block(type(self), asdict(self), "").items():
            object.__setattr__(self, name, value)
        check_huge_fits(self.huge, self.dtype, "huge")

    @property
    def nonfinite_code(self) -> int:
        return NONFINITE_POLICIES.index(self.nonfinite)

    def as_dict(self) -> dict:
        return asdict(self)


def check_huge_fits(huge: float, dtype: str, name: str) -> None:
    """Refuse a ``huge`` threshold above what ``dtype`` can hold: values between the two would become
    ±inf unchecked under ``nonfinite="error"`` (and ``"clip"`` would clip to inf). ``name`` is the
    option as the user spells it (``huge``, ``data.parse.huge``).

    >>> check_huge_fits(1e40, "float64", "huge")
    >>> check_huge_fits(1e40, "float32", "data.parse.huge")
    Traceback (most recent call last):
    ltr.core.errors.ConfigError: data.parse.huge: 1e+40 is above the float32 range (3.4028235677973362e+38); ...
    """
    if dtype == "float32" and huge > FLOAT32_MAX:
        raise ConfigError(
            f"{name}: {huge!r} is above the float32 range ({FLOAT32_MAX!r}); values between the two "
            "would become ±inf without being counted as huge; lower it or use dtype float64"
        )


def error_message(code: int, token: str, *, index: int = 0, prev: int = 0, opts: ParseOptions) -> str:
    """The text after ``file:line:`` for an error code (shared by both engines)."""
    if code == BAD_LABEL:
        return f"expected a numeric label as the first token, got {token!r}"
    if code == BAD_QID:
        return f"expected qid:<non-negative integer>, got {token!r}"
    if code == BAD_TOKEN:
        return f"expected index:value, got {token!r}"
    if code == BAD_INDEX:
        return f"expected a non-negative integer feature index below {MAX_INDEX + 1}, got {token!r}"
    if code == BAD_VALUE:
        return f"expected a numeric feature value, got {token!r}"
    if code == INDEX_ZERO:
        return (
            f"feature index 0 but indices are 1-based ({token!r}); "
            "load with zero_based=True if the file is 0-based"
        )
    if code == INDEX_TOO_LARGE:
        return f"feature index {index} is above n_features={opts.n_features} ({token!r})"
    if code == UNSORTED:
        return (
            f"feature indices must be increasing: {index} after {prev} ({token!r}); "
            "load with allow_unsorted=True to accept (a repeated index: last value wins)"
        )
    if code == DUPLICATE:
        return (
            f"feature index {index} appears twice on the line ({token!r}); "
            "load with allow_unsorted=True to accept (last value wins)"
        )
    if code == LABEL_NOT_INT:
        return f"label {token} is not an integer; load with integer_labels=False to accept real-valued labels"
    if code == LABEL_NEGATIVE:
        return f"label {token} is negative; load with allow_negative_labels=True to accept it"
    if code == LABEL_OUT_OF_RANGE:
        lo, hi = opts.label_range  # type: ignore[misc]
        return f"label {token} is outside label_range [{lo:g}, {hi:g}]"
    if code == LABEL_NONFINITE:
        return f"label {token} is not a finite number"
    if code == NONFINITE:
        return (
            f"feature {index} has the non-finite or huge value {token!r} (|v| > {opts.huge:g}); "
            "choose a policy: nonfinite='keep', 'missing' or 'clip'"
        )
    if code == NAN_CLIP:
        return (
            f"feature {index} is NaN ({token!r}), which nonfinite='clip' cannot clip; use 'missing' or 'keep'"
        )
    if code == QID_MISSING:
        return "line has no qid: but earlier lines have one; every line needs a qid (or none does)"
    if code == LONE_CR:
        return LONE_CR_TEXT
    if code == UTF16:
        return UTF16_TEXT
    if code == QID_UNEXPECTED:
        return "line has a qid: but earlier lines have none; every line needs a qid (or none does)"
    return f"parse error code {code} at {token!r}"
