"""Pure-Python reference parser for SVMlight/LETOR text (slow, simple, used to check the fast one).

It implements the grammar and error codes of :mod:`ltr.data._syntax` token by token with regular
expressions and Python's own ``float``; :mod:`ltr.data._fastparse` must agree with it on every
input (the fuzz tests compare the two).

>>> from ltr.data._syntax import ParseOptions
>>> raw = parse_bytes(b"2 qid:7 1:0.5 3:2\\r\\n0 qid:7 2:1 # doc b\\n", ParseOptions(output="dense"))
>>> raw.y.tolist(), raw.qid.tolist(), raw.dense.tolist()
([2.0, 0.0], [7, 7], [[0.5, 0.0, 2.0], [0.0, 1.0, 0.0]])
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from ltr.data import _syntax as S
from ltr.io.textlines import bom_length, is_utf16, lone_cr

_NUMBER = re.compile(rb"[+-]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|(?i:nan|inf|infinity))\Z")
_DIGITS = re.compile(rb"\d+\Z")
_TOKEN = re.compile(rb"[^ \t\r\f\v]+")


class ParseFailure(Exception):
    """An error code at a byte position; :mod:`ltr.data.svmlight` turns it into a ``DataError``."""

    def __init__(
        self, code: int, line_start: int, tok_start: int, tok_end: int, index: int = 0, prev: int = 0
    ):
        super().__init__(code, line_start, tok_start, tok_end, index, prev)
        self.code, self.line_start, self.tok_start, self.tok_end = code, line_start, tok_start, tok_end
        self.index, self.prev = index, prev


@dataclass
class RawParse:
    """Arrays straight out of a parser, before sidecars, regrouping and the ``RankingData`` checks."""

    y: np.ndarray
    qid: np.ndarray | None
    n_features: int
    dense: np.ndarray | None = None
    indptr: np.ndarray | None = None
    indices: np.ndarray | None = None
    data: np.ndarray | None = None
    n_replaced: int = 0  # NaN, inf and huge values handled by a non-"error" nonfinite policy


def choose_dense(opts: S.ParseOptions, n_rows: int, nnz: int, n_features: int) -> bool:
    """Dense output when asked, or (``output="auto"``) when stored entries / cells ≥ ``opts.density``."""
    if opts.output != "auto":
        return opts.output == "dense"
    cells = n_rows * n_features
    return cells == 0 or nnz / cells >= opts.density


def _label_code(v: float, opts: S.ParseOptions) -> int:
    if not math.isfinite(v):
        return S.LABEL_NONFINITE
    if opts.integer_labels and v != math.floor(v):
        return S.LABEL_NOT_INT
    if v < 0 and not opts.allow_negative_labels:
        return S.LABEL_NEGATIVE
    if opts.label_range is not None and not (opts.label_range[0] <= v <= opts.label_range[1]):
        return S.LABEL_OUT_OF_RANGE
    return S.OK


def parse_bytes(buf: bytes, opts: S.ParseOptions) -> RawParse:
    """Parse a whole file's bytes; raise :class:`ParseFailure` at the first bad token.

    A UTF-16 byte order mark, then a lone ``\\r`` anywhere are reported first; a leading UTF-8 byte order mark reads as spaces.
    """
    if is_utf16(buf):
        raise ParseFailure(S.UTF16, 0, 0, 2)
    cr = lone_cr(buf)
    if cr >= 0:
        raise ParseFailure(S.LONE_CR, cr, cr, cr + 1)
    skip = bom_length(buf)
    if skip:
        buf = b" " * skip + buf[skip:]  # same length: offsets and line numbers unchanged
    labels: list[float] = []
    qids: list[int] = []
    rows: list[dict[int, float]] = []
    has_qid: bool | None = None
    shift = 0 if opts.zero_based else 1
    n_replaced = 0
    max_col = -1
    pos = 0
    for line in buf.split(b"\n"):
        start = pos
        pos += len(line) + 1
        hash_at = line.find(b"#")
        body = line if hash_at < 0 else line[:hash_at]
        toks = [(m.start() + start, m.end() + start, m.group()) for m in _TOKEN.finditer(body)]
        if not toks:
            continue
        t0, t1, tok = toks[0]
        if not _NUMBER.match(tok):
            raise ParseFailure(S.BAD_LABEL, start, t0, t1)
        label = float(tok)
        code = _label_code(label, opts)
        if code:
            raise ParseFailure(code, start, t0, t1)
        rest = toks[1:]
        line_has_qid = bool(rest) and rest[0][2].startswith(b"qid:")
        if line_has_qid:
            q0, q1, qtok = rest[0]
            digits = qtok[4:]
            if not _DIGITS.match(digits) or len(digits) > 18:
                raise ParseFailure(S.BAD_QID, start, q0, q1)
            rest = rest[1:]
        if has_qid is None:
            has_qid = line_has_qid
        elif has_qid != line_has_qid:
            raise ParseFailure(S.QID_MISSING if has_qid else S.QID_UNEXPECTED, start, t0, t1)
        feats: dict[int, float] = {}
        prev = -1
        for a, b, ftok in rest:
            colon = ftok.find(b":")
            if colon < 0:
                raise ParseFailure(S.BAD_TOKEN, start, a, b)
            itok, vtok = ftok[:colon], ftok[colon + 1 :]
            if not _DIGITS.match(itok) or len(itok) > 10 or int(itok) > S.MAX_INDEX:
                raise ParseFailure(S.BAD_INDEX, start, a, b)
            if not _NUMBER.match(vtok):
                raise ParseFailure(S.BAD_VALUE, start, a, b)
            idx = int(itok)
            if idx == 0 and shift == 1:
                raise ParseFailure(S.INDEX_ZERO, start, a, b, idx)
            col = idx - shift
            if opts.n_features is not None and col >= opts.n_features:
                raise ParseFailure(S.INDEX_TOO_LARGE, start, a, b, idx)
            if not opts.allow_unsorted and prev >= 0 and idx <= prev:
                raise ParseFailure(S.DUPLICATE if idx == prev else S.UNSORTED, start, a, b, idx, prev)
            prev = idx
            v = float(vtok)
            if math.isnan(v):
                if opts.nonfinite == "error":
                    raise ParseFailure(S.NONFINITE, start, a, b, idx)
                if opts.nonfinite == "clip":
                    raise ParseFailure(S.NAN_CLIP, start, a, b, idx)
                n_replaced += 1
            elif math.isinf(v) or abs(v) > opts.huge:
                if opts.nonfinite == "error":
                    raise ParseFailure(S.NONFINITE, start, a, b, idx)
                n_replaced += 1
                if opts.nonfinite == "keep":
                    v = math.copysign(math.inf, v)
                elif opts.nonfinite == "missing":
                    v = math.nan
                else:
                    v = math.copysign(opts.huge, v)
            feats.pop(col, None)  # last wins, and keeps insertion order = order of last occurrence
            feats[col] = v
            max_col = max(max_col, col)
        labels.append(label)
        qids.append(int(rest_qid(toks)) if line_has_qid else 0)
        rows.append(feats)
    n_features = opts.n_features if opts.n_features is not None else max_col + 1
    n = len(rows)
    y = np.asarray(labels, dtype=np.float64)
    qid = np.asarray(qids, dtype=np.int64) if has_qid else None
    nnz = sum(len(r) for r in rows)
    dtype = np.dtype(opts.dtype)
    raw = RawParse(y=y, qid=qid, n_features=n_features, n_replaced=n_replaced)
    # the density estimate both engines use: ':' bytes (minus one per line when there are qids)
    # per line and feature; equal to entries / cells for files without comments or blank lines
    lines = buf.count(b"\n") + (1 if buf and not buf.endswith(b"\n") else 0)
    entries = max(buf.count(b":") - lines * bool(has_qid), 0)
    if choose_dense(opts, lines, entries, n_features):
        X = np.zeros((n, n_features), dtype=dtype)
        for i, r in enumerate(rows):
            for c, v in r.items():
                X[i, c] = v
        raw.dense = X
    else:
        indptr = np.zeros(n + 1, dtype=np.int64)
        indptr[1:] = np.cumsum([len(r) for r in rows])
        indices = np.empty(nnz, dtype=np.int32)
        data = np.empty(nnz, dtype=dtype)
        k = 0
        for r in rows:
            for c in sorted(r):
                indices[k] = c
                data[k] = r[c]
                k += 1
        raw.indptr, raw.indices, raw.data = indptr, indices, data
    return raw


def rest_qid(toks: list[tuple[int, int, bytes]]) -> bytes:
    """The digits of the ``qid:`` token of a tokenised line (the second token)."""
    return toks[1][2][4:]
