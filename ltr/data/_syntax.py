"""What the SVMlight/LETOR parsers agree on: parse options, error codes and their messages.

Both engines (the pure-Python reference in :mod:`ltr.data._pyparse` and the numba kernels in
:mod:`ltr.data._fastparse`) tokenise exactly the same grammar and report the same error codes;
this module turns a code plus the offending bytes into the one message users see::

    rank.train:1042: feature index 0 but indices are 1-based (load with zero_based=True ...)

Grammar of one line (``#`` starts a comment; blank and comment-only lines are skipped; ``\\r``,
tab, form feed and vertical tab count as spaces, so CRLF files parse like LF files)::

    line    := label [ "qid:" qid ] { index ":" value } [ "#" comment ]
    label   := number            qid := digits            index := digits
    number  := [+-] ( digits [ "." digits* ] | "." digits ) [ (e|E) [+-] digits ]
             | [+-] ( "nan" | "inf" | "infinity" )   (case-insensitive)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from ltr.errors import ConfigError

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

NONFINITE_POLICIES = ("error", "keep", "missing", "clip")
OUTPUTS = ("auto", "dense", "csr")


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
        overflow float32 is caught and float32's own maximum (``3.40282347e+38``) is not.
    output: ``"dense"``, ``"csr"`` or ``"auto"``: dense when entries / (lines × n_features) ≥
        ``density``, where entries = the ``:`` bytes of the file minus one per line if it has qids
        (exactly the ``index:value`` entries per cell for files without comments or blank lines; a
        byte count both engines make before parsing).
    density: threshold for ``output="auto"``.
    dtype: feature dtype, ``"float32"`` (default) or ``"float64"``.
    regroup: when a qid appears in several separate blocks, gather its rows (stable: queries in
        order of first appearance, rows in file order). Default: error naming both row ranges.
    """

    n_features: int | None = None
    zero_based: bool = False
    allow_unsorted: bool = False
    integer_labels: bool = True
    allow_negative_labels: bool = False
    label_range: tuple[float, float] | None = None
    nonfinite: str = "error"
    huge: float = FLOAT32_MAX
    output: str = "auto"
    density: float = 0.25
    dtype: str = "float32"
    regroup: bool = False

    def __post_init__(self) -> None:
        if self.n_features is not None and (int(self.n_features) != self.n_features or self.n_features < 0):
            raise ConfigError(f"n_features must be a non-negative integer or None, got {self.n_features!r}")
        if self.nonfinite not in NONFINITE_POLICIES:
            raise ConfigError(f"nonfinite must be one of {NONFINITE_POLICIES}, got {self.nonfinite!r}")
        if self.output not in OUTPUTS:
            raise ConfigError(f"output must be one of {OUTPUTS}, got {self.output!r}")
        if self.dtype not in ("float32", "float64"):
            raise ConfigError(f"dtype must be 'float32' or 'float64', got {self.dtype!r}")
        if not (self.huge > 0):
            raise ConfigError(f"huge must be a positive number, got {self.huge!r}")
        if not (0.0 <= self.density <= 1.0):
            raise ConfigError(f"density must be in [0, 1], got {self.density!r}")
        if self.label_range is not None:
            lo, hi = self.label_range
            if not lo <= hi:
                raise ConfigError(
                    f"label_range must be (low, high) with low <= high, got {self.label_range!r}"
                )
            object.__setattr__(self, "label_range", (float(lo), float(hi)))
        if self.n_features is not None:
            object.__setattr__(self, "n_features", int(self.n_features))

    @property
    def nonfinite_code(self) -> int:
        return NONFINITE_POLICIES.index(self.nonfinite)

    def as_dict(self) -> dict:
        return asdict(self)


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
    if code == QID_UNEXPECTED:
        return "line has a qid: but earlier lines have none; every line needs a qid (or none does)"
    return f"parse error code {code} at {token!r}"
