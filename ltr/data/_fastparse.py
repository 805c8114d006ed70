"""Fast SVMlight/LETOR parser: numba kernels over fixed-size chunks of the file, parallel within a chunk.

Same grammar, options and error codes as the reference parser :mod:`ltr.data._pyparse` (the fuzz
tests compare the two). The file is memory-mapped twice, one window of ``CHUNK`` bytes at a time
(no copy out of the page cache, and only one or two windows mapped at once):

1. **count**: rows, ``index:value`` tokens and the largest index, per part of each chunk. Without
   ``n_features`` the largest index is read from each line's last token only (line ends found eight
   bytes at a time): in a valid file a line's indices increase, and the fill pass fails a line that
   holds a larger one, as the reference does (``allow_unsorted`` reads every index);
2. **fill**: with exact row / entry offsets per part known, every part parses its lines straight into
   the final arrays (dense ``X`` or CSR ``indptr/indices/data``), so peak memory is the result plus
   one chunk buffer.

A gzip/bzip2/xz/zstd file is parsed in **one** pass instead (:func:`_parse_stream`): a thread
decompresses the next 16 MB chunk while the current one is counted and parsed into arrays that grow
by its upper bounds, so the file is decompressed once and peak memory stays the result plus the
chunk buffers.

Errors come back as a code and byte offsets; the caller maps the offset to an exact line number.

Numbers are parsed with up to 18 significant digits as an integer mantissa ``m`` and a power of ten
``e``; ``m · 10^e`` is computed in double-double arithmetic (error ≤ 2^-100 relative) and rounded
once, so float64 results equal Python's ``float`` for every value written by ``repr`` or ``%.17g``
that is a normal double (subnormal results may be off by one unit in the last place).

>>> from ltr.data._syntax import ParseOptions
>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "t.txt"
>>> _ = p.write_bytes(b"1 qid:3 1:0.1 2:2.5e-3\\n0 qid:3 2:-7\\n")
>>> raw = parse_path(p, ParseOptions(output="dense"))
>>> raw.dense.tolist() == [[np.float32(0.1), np.float32(2.5e-3)], [0.0, -7.0]]
True
"""

from __future__ import annotations

import mmap
import os
import queue
import sys
import threading
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numba
import numpy as np
from llvmlite import ir
from numba import njit, prange
from numba.core import types
from numba.cpython.unsafe.numbers import trailing_zeros
from numba.extending import intrinsic

from ltr.core.errors import DataError
from ltr.data import _syntax as S
from ltr.data._pyparse import ParseFailure, RawParse, choose_dense
from ltr.io.compression import compression_of, open_input
from ltr.io.textlines import BOM, bom_length, is_utf16

CHUNK = 32 << 20  # bytes per chunk buffer (grows only for a line longer than this)
_DD_MIN, _DD_MAX = -360, 310


def _pow10_table() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """10^e · 2^s as double-double (hi + lo) for e in [_DD_MIN, _DD_MAX], from exact rationals.

    The power-of-two factor 2^s (s = ±200 beyond |e| > 280) keeps every entry a normal double with a
    full-precision low part and the Veltkamp split free of overflow; the result is multiplied back by
    the exact factor 2^-s.
    """
    hi = np.zeros(_DD_MAX - _DD_MIN + 1)
    lo = np.zeros_like(hi)
    back = np.ones_like(hi)
    for e in range(_DD_MIN, _DD_MAX + 1):
        s = 200 if e < -280 else (-200 if e > 280 else 0)
        exact = Fraction(10) ** e * Fraction(2) ** s
        h = float(exact)
        hi[e - _DD_MIN] = h
        lo[e - _DD_MIN] = float(exact - Fraction(h))
        back[e - _DD_MIN] = 2.0**-s
    return hi, lo, back


_P10_HI, _P10_LO, _P10_BACK = _pow10_table()
_P10_EXACT = np.array([10.0**k for k in range(23)])  # exactly representable powers of ten

# byte values
_SP, _TAB, _CR, _LF, _FF, _VT = 32, 9, 13, 10, 12, 11
_HASH, _COLON, _DOT, _PLUS, _MINUS = 35, 58, 46, 43, 45


_CLS = np.zeros(256, dtype=np.uint8)  # byte class: 0 token byte, 1 space, 2 newline, 3 '#'
_CLS[[_SP, _TAB, _CR, _FF, _VT]] = 1
_CLS[_LF] = 2
_CLS[_HASH] = 3

# --- eight bytes at a time (SWAR) ----------------------------------------------------------------
# The hot path reads a feature token ``idx:value`` with three unaligned 8-byte loads and no
# data-dependent loop: the length of a run of digits is found from a bit mask, and up to 8 digits are
# converted with three multiplications. Only little-endian machines (x86-64, arm64) take this path.
SWAR = sys.byteorder == "little"
SWAR_REACH = 40  # the fast path reads < 26 bytes from a token's start; nearer a part's end: byte path
_U = np.uint64
_K30, _K46, _K80 = _U(0x3030303030303030), _U(0x4646464646464646), _U(0x8080808080808080)
_TOP = _U(1 << 63)
_LOW_PAIRS = _U(0x000000FF000000FF)
_MUL1, _MUL2 = _U(100 + (1000000 << 32)), _U(1 + (10000 << 32))
_P10_INT = np.array([10**k for k in range(9)], dtype=np.uint64)
_K01, _KLF, _KHASH = _U(0x0101010101010101), _U(0x0A0A0A0A0A0A0A0A), _U(0x2323232323232323)


@intrinsic
def _load8(typingctx, arr, idx):
    """``arr[idx : idx + 8]`` of a C-contiguous uint8 array as one little-endian uint64 (unaligned load).

    No bounds check: callers guarantee ``idx + 8 <= len(arr)``.
    """
    if not (isinstance(arr, types.Array) and arr.dtype == types.uint8 and arr.layout == "C"):
        return None
    if not isinstance(idx, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        offset = context.cast(builder, args[1], signature.args[1], types.intp)
        word = builder.bitcast(builder.gep(data, [offset]), ir.IntType(64).as_pointer())
        return builder.load(word, align=1)

    return types.uint64(arr, idx), codegen


@njit(cache=True, inline="always")
def _digit_run(w):
    """Leading ASCII digits in the 8 bytes of ``w`` (first byte lowest), capped at 7.

    A byte is flagged as a non-digit when it is below '0' (subtraction borrows into its top bit),
    above '9' (adding 0x46 carries into it) or ≥ 0x80; borrows and carries only travel upwards from a
    flagged byte, so the lowest flag is exact. All-digit words report 7: the caller then sees a digit
    where it expects a delimiter and takes the exact byte-by-byte path.
    """
    flags = (((w - _K30) & ~w) | (w + _K46) | w) & _K80
    return np.int64(trailing_zeros(flags | _TOP)) >> 3


@njit(cache=True, inline="always")
def _digits_value(w, n):
    """Integer value of the first ``n`` (0..7) bytes of ``w``, all ASCII digits.

    The digits are shifted to the top of the word (the vacated low bytes act as leading zeros), then
    pairs, quads and the two halves are combined: ``d·10 + next``, ``·100``, ``·10^4``.
    """
    d = w - _K30
    d = (d << _U(8)) << _U(56 - 8 * n)  # two shifts: never a shift by 64
    d = d * _U(10) + (d >> _U(8))
    d = ((d & _LOW_PAIRS) * _MUL1 + ((d >> _U(16)) & _LOW_PAIRS) * _MUL2) >> _U(32)
    return np.int64(d)


@njit(cache=True, inline="always")
def _swar_token(buf, i):
    """Fast path for a feature token ``idx:[sign]digits[.digits]`` followed by a delimiter at buf[i:].

    Returns (ok, idx, value, end). ``ok`` is False for anything else (exponent, nan/inf, ≥ 8 digits
    in the index or either part of the number, a bad byte): the caller then parses the token with
    the exact byte-by-byte path, which also reports errors. Reads at most ``SWAR_REACH`` bytes.
    Positions are unsigned (numba adds no negative-index fix-up) and the integer/decimal choice is
    arithmetic, not a branch (files interleave both kinds of values).
    """
    i = _U(i)
    w = _load8(buf, i)
    ni = _U(_digit_run(w))
    idx = _digits_value(w, np.int64(ni))
    j = i + ni + _U(1)
    c = buf[j]
    j += _U((c == _MINUS) | (c == _PLUS))
    w1 = _load8(buf, j)
    n1 = _U(_digit_run(w1))
    whole = _digits_value(w1, np.int64(n1))
    k = j + n1
    dot = _U(buf[k] == _DOT)
    w2 = _load8(buf, k + _U(1))
    n2 = _U(_digit_run(w2)) * dot
    frac = _digits_value(w2, np.int64(n2))
    end = k + dot * (n2 + _U(1))
    ok = (ni > _U(0)) & (buf[i + ni] == _COLON) & (n1 + n2 > _U(0)) & (_CLS[buf[end]] != 0)
    v = float(whole * np.int64(_P10_INT[n2]) + frac) / _P10_EXACT[n2]
    return ok, idx, -v if c == _MINUS else v, np.int64(end)


@njit(cache=True, inline="always")
def _zero_bytes(w):
    """Flags (top bit) at the zero bytes of ``w``; the lowest flag is exact (false flags only above it)."""
    return (w - _K01) & ~w & _K80


@njit(cache=True)
def _split(a):
    c = 134217729.0 * a
    hi = c - (c - a)
    return hi, a - hi


@njit(cache=True)
def _scale(m, e):
    """m · 10^e rounded once to float64 (m < 10^18 a non-negative integer)."""
    if m == 0 or e < _DD_MIN:
        return 0.0
    if e > _DD_MAX:
        return np.inf
    mh = float(m)
    ml = float(m - np.int64(mh))
    ph = _P10_HI[e - _DD_MIN]
    pl = _P10_LO[e - _DD_MIN]
    p = mh * ph
    ah, al = _split(mh)
    bh, bl = _split(ph)
    err = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return (p + (err + (mh * pl + ml * ph))) * _P10_BACK[e - _DD_MIN]


@njit(cache=True)
def _lower(c):
    return c | 32


@njit(cache=True)
def _match_word(buf, i, b, word):
    """Case-insensitive match of ``word`` (a tuple of lowercase bytes) spanning exactly buf[i:b]."""
    if b - i != len(word):
        return False
    for k in range(len(word)):  # noqa: SIM110 (numba: no generator expressions)
        if _lower(buf[i + k]) != word[k]:
            return False
    return True


@njit(cache=True)
def _parse_number(buf, a, b):
    """Parse buf[a:b] as a whole number token; returns (ok, value)."""
    i = a
    neg = False
    if i < b and (buf[i] == _PLUS or buf[i] == _MINUS):
        neg = buf[i] == _MINUS
        i += 1
    if i >= b:
        return False, 0.0
    c = _lower(buf[i])
    if c == 110 or c == 105:  # 'n' or 'i'
        if _match_word(buf, i, b, (110, 97, 110)):
            return True, np.nan
        if _match_word(buf, i, b, (105, 110, 102)) or _match_word(
            buf, i, b, (105, 110, 102, 105, 110, 105, 116, 121)
        ):
            return True, -np.inf if neg else np.inf
        return False, 0.0
    m = np.int64(0)
    nd = 0
    adj = 0
    digits = False
    while i < b and 48 <= buf[i] <= 57:
        d = buf[i] - 48
        digits = True
        if m == 0 and d == 0:
            pass
        elif nd < 18:
            m = m * 10 + d
            nd += 1
        else:
            adj += 1
        i += 1
    if i < b and buf[i] == _DOT:
        i += 1
        while i < b and 48 <= buf[i] <= 57:
            d = buf[i] - 48
            digits = True
            if m == 0 and d == 0:
                adj -= 1
            elif nd < 18:
                m = m * 10 + d
                nd += 1
                adj -= 1
            i += 1
    if not digits:
        return False, 0.0
    if i < b and _lower(buf[i]) == 101:  # 'e'
        i += 1
        eneg = False
        if i < b and (buf[i] == _PLUS or buf[i] == _MINUS):
            eneg = buf[i] == _MINUS
            i += 1
        if i >= b:
            return False, 0.0
        ev = 0
        while i < b and 48 <= buf[i] <= 57:
            if ev < 100000:
                ev = ev * 10 + (buf[i] - 48)
            i += 1
        if i != b:
            return False, 0.0
        adj += -ev if eneg else ev
    if i != b:
        return False, 0.0
    v = _scale(m, adj)
    return True, -v if neg else v


@njit(cache=True)
def _parse_uint(buf, a, b, max_digits):
    """Parse buf[a:b] as 1..max_digits ASCII digits; returns (ok, value)."""
    if b <= a or b - a > max_digits:
        return False, np.int64(0)
    v = np.int64(0)
    for i in range(a, b):
        c = buf[i]
        if c < 48 or c > 57:
            return False, np.int64(0)
        v = v * 10 + (c - 48)
    return True, v


@njit(cache=True)
def _slow_number(buf, i, hi):
    """Exact parse of the token starting at buf[i] (rare spellings: nan/inf, > 18 digits, errors)."""
    e = i
    while e < hi and _CLS[buf[e]] == 0:
        e += 1
    ok, v = _parse_number(buf, i, e)
    return ok, v, e


@njit(cache=True, inline="always")
def _scan_number(buf, i, hi):
    """Parse a number starting at buf[i] and ending at a delimiter; returns (ok, value, end).

    Inlined into its callers at numba IR level (measured ~10 % faster than a call per token).

    The hot path of the parser: one pass over at most 18 digits, then Clinger's exact fast path
    (an integer below 2^53 times or divided by an exact power of ten ≤ 10^22) or :func:`_scale`.
    Anything else (nan/inf, more digits, malformed) goes to :func:`_slow_number`, which gives the
    same result for valid numbers and the same verdict for invalid ones.
    """
    j = i
    neg = False
    if j < hi and (buf[j] == _PLUS or buf[j] == _MINUS):
        neg = buf[j] == _MINUS
        j += 1
    m = np.int64(0)
    nd = 0
    while j < hi:
        d = np.int64(buf[j]) - 48
        if d < 0 or d > 9:
            break
        m = m * 10 + d
        nd += 1
        j += 1
    frac = 0
    if j < hi and buf[j] == _DOT:
        j += 1
        while j < hi:
            d = np.int64(buf[j]) - 48
            if d < 0 or d > 9:
                break
            m = m * 10 + d
            frac += 1
            j += 1
    if nd + frac == 0 or nd + frac > 18:
        return _slow_number(buf, i, hi)
    e = -frac
    if j < hi and (buf[j] | 32) == 101:  # 'e' / 'E'
        j += 1
        eneg = False
        if j < hi and (buf[j] == _PLUS or buf[j] == _MINUS):
            eneg = buf[j] == _MINUS
            j += 1
        ev = 0
        ed = 0
        while j < hi:
            d = np.int64(buf[j]) - 48
            if d < 0 or d > 9:
                break
            if ev < 100000:
                ev = ev * 10 + d
            ed += 1
            j += 1
        if ed == 0:
            return False, 0.0, j
        e += -ev if eneg else ev
    if j < hi and _CLS[buf[j]] == 0:
        return _slow_number(buf, i, hi)
    if m <= 9007199254740992 and -22 <= e <= 22:
        v = float(m) * _P10_EXACT[e] if e >= 0 else float(m) / _P10_EXACT[-e]
    else:
        v = _scale(m, e)
    return True, -v if neg else v, j


@njit(cache=True)
def _count_part(buf, lo, hi, shift, need_max):
    """Pass 1 over the complete lines in buf[lo:hi]: (rows, feature entries, max column, first-row qid flag).

    Cheap: counts ``:`` outside comments (minus the ``qid:`` one). Exact for valid lines, and never
    below what :func:`_fill_part` writes for invalid ones (it stops at the first bad token). The
    largest index is only parsed when ``need_max`` (``n_features`` not given).
    """
    rows = 0
    nnz = 0
    max_col = -1
    first_qid = -1
    i = lo
    while i < hi:
        while i < hi and _CLS[buf[i]] == 1:
            i += 1
        if i >= hi:
            break
        if buf[i] == _LF:
            i += 1
            continue
        if buf[i] == _HASH:
            while i < hi and buf[i] != _LF:
                i += 1
            i += 1
            continue
        rows += 1
        while i < hi and _CLS[buf[i]] == 0:
            i += 1
        while i < hi and _CLS[buf[i]] == 1:
            i += 1
        has_q = (
            i + 3 < hi and buf[i] == 113 and buf[i + 1] == 105 and buf[i + 2] == 100 and buf[i + 3] == _COLON
        )
        if has_q:
            i += 4
        if rows == 1:
            first_qid = 1 if has_q else 0
        if need_max:
            while i < hi:
                c = buf[i]
                if c == _LF or c == _HASH:  # noqa: SIM109 (numba hot loop)
                    break
                if c == _COLON:
                    nnz += 1
                    t = i
                    while t > lo and 48 <= buf[t - 1] <= 57:
                        t -= 1
                    if t == lo or _CLS[buf[t - 1]] == 1:
                        max_col = _raised_to_index(buf, t, i, shift, max_col)
                i += 1
        else:
            while i < hi:
                c = buf[i]
                if c == _LF or c == _HASH:  # noqa: SIM109 (numba hot loop)
                    break
                if c == _COLON:
                    nnz += 1
                i += 1
        while i < hi and buf[i] != _LF:
            i += 1
        i += 1
    return rows, nnz, max_col, first_qid


@njit(cache=True, inline="always")
def _raised_to_index(buf, a, b, shift, max_col):
    """``max_col`` raised to the column of the index buf[a:b] (the digits before a ``:``) when it is one:
    1-10 digits, at most ``MAX_INDEX``."""
    if 0 < b - a <= 10:
        ok, idx = _parse_uint(buf, a, b, 10)
        if ok and idx <= S.MAX_INDEX and idx - shift > max_col:
            return idx - shift
    return max_col


@njit(cache=True, inline="always")
def _line_end_index(buf, lo, p, shift, max_col):
    """``max_col`` raised to the column of the last feature token of the line buf[lo:p] (p: its LF or ``#``).

    The last token is the line's largest index when its indices increase, as in every valid file read
    without ``allow_unsorted``; a line that breaks that order is an error the fill pass reports.
    """
    e = p
    while e > lo and _CLS[buf[e - 1]] == 1:
        e -= 1
    s = e
    while s > lo and _CLS[buf[s - 1]] == 0:
        s -= 1
    t = s
    while t < e and 48 <= buf[t] <= 57:
        t += 1
    if t < e and buf[t] == _COLON:
        max_col = _raised_to_index(buf, s, t, shift, max_col)
    return max_col


@njit(cache=True)
def _max_last_index(buf, lo, hi, shift):
    """Largest column over the last feature tokens of the lines in buf[lo:hi] (−1 if none).

    Line ends and ``#`` are found eight bytes at a time; only the bytes before each line end are read
    back (on a big-endian machine, where a word's first byte is its top one, one byte at a time).
    Equals :func:`_count_part`'s largest index for files whose lines list increasing indices
    (the only valid files without ``allow_unsorted``). ``buf`` holds at least 8 bytes past ``hi``
    or ``hi`` is its length (the last 8 bytes are then read one at a time).

    >>> line = b"1 qid:1 2:0.5 10:3\\n0 qid:1 4:1 # 99:1\\n"
    >>> _max_last_index(np.frombuffer(line * 3, dtype=np.uint8), 0, 3 * len(line), 1)
    9
    """
    max_col = -1
    line = lo
    i = lo
    comment = False
    safe = min(hi, buf.shape[0] - 8) if SWAR else lo  # big-endian: the byte loop reads every line
    while True:
        p = hi
        while i < safe:
            w = _load8(buf, i)
            m = _zero_bytes(w ^ _KLF)
            if not comment:
                m |= _zero_bytes(w ^ _KHASH)
            if m != _U(0):
                p = min(i + (np.int64(trailing_zeros(m)) >> 3), hi)
                break
            i += 8
        if p == hi:
            while i < hi and buf[i] != _LF and (comment or buf[i] != _HASH):
                i += 1
            p = i
        if p >= hi:
            break
        if buf[p] == _LF:
            if not comment:
                max_col = _line_end_index(buf, line, p, shift, max_col)
            comment = False
            line = p + 1
        else:  # '#': the rest of the line is a comment
            max_col = _line_end_index(buf, line, p, shift, max_col)
            comment = True
        i = p + 1
    if not comment and line < hi:
        max_col = _line_end_index(buf, line, hi, shift, max_col)
    return max_col


@njit(cache=True)
def _token_error(buf, a, b, shift):
    """Error code of a feature token buf[a:b] that the fast path rejected (same order as the reference)."""
    colon = -1
    for t in range(a, b):
        if buf[t] == _COLON:
            colon = t
            break
    if colon < 0:
        return S.BAD_TOKEN, np.int64(0)
    ok, idx = _parse_uint(buf, a, colon, 10)
    if not ok or idx > S.MAX_INDEX:
        return S.BAD_INDEX, np.int64(0)
    ok, v = _parse_number(buf, colon + 1, b)
    if not ok:
        return S.BAD_VALUE, idx
    return S.OK, idx


@njit(cache=True)
def _fill_part(
    buf, lo, hi, base, row0, k0, row_end, k_end, shift, n_features, inferred, has_qid, allow_unsorted,
    integer_labels, allow_negative, check_range, label_lo, label_hi, policy, huge, dense,
    y, qid, X, indptr, indices, data, err,
):  # fmt: skip
    """Pass 2: parse the complete lines in buf[lo:hi] into rows row0.. and entries k0.. of the outputs.

    ``err`` receives (code, line_start, tok_start, tok_end, index, prev, n_replaced) with file
    offsets (``base`` is the file offset of ``buf[0]``). Rows ``row0..row_end`` and entries
    ``k0..k_end`` are this part's share of the outputs, counted by pass 1; more than that means the
    file changed between the passes (``FILE_CHANGED``), never a write past the share.

    ``inferred``: ``n_features`` was counted from each line's last index (:func:`_max_last_index`), so
    an index beyond it is no error of its own: it is not stored, and its line, whose indices then
    cannot all increase, fails further on as the reference parser fails it (unsorted, or a bad token).
    """
    r = row0
    k = k0
    replaced = 0
    i = lo
    while i < hi:
        line_start = i
        while i < hi and _CLS[buf[i]] == 1:
            i += 1
        if i >= hi:
            break
        if buf[i] == _LF:
            i += 1
            continue
        if buf[i] == _HASH:
            while i < hi and buf[i] != _LF:
                i += 1
            i += 1
            continue
        # label
        t0 = i
        if r >= row_end:
            err[0], err[1], err[2], err[3] = S.FILE_CHANGED, base + line_start, base + t0, base + t0
            return
        ok, lab, i = _scan_number(buf, i, hi)
        code = 0
        if not ok:
            while i < hi and _CLS[buf[i]] == 0:
                i += 1
            code = S.BAD_LABEL
        elif not np.isfinite(lab):
            code = S.LABEL_NONFINITE
        elif integer_labels and lab != np.floor(lab):
            code = S.LABEL_NOT_INT
        elif lab < 0 and not allow_negative:
            code = S.LABEL_NEGATIVE
        elif check_range and not (label_lo <= lab <= label_hi):
            code = S.LABEL_OUT_OF_RANGE
        if code:
            err[0], err[1], err[2], err[3] = code, base + line_start, base + t0, base + i
            return
        y[r] = lab
        label_end = i
        # optional qid
        while i < hi and _CLS[buf[i]] == 1:
            i += 1
        line_has_qid = i + 3 < hi and buf[i] == 113 and buf[i + 1] == 105 and buf[i + 2] == 100
        line_has_qid = line_has_qid and buf[i + 3] == _COLON
        if line_has_qid:
            q0 = i
            while i < hi and _CLS[buf[i]] == 0:
                i += 1
            ok, qv = _parse_uint(buf, q0 + 4, i, 18)
            if not ok:
                err[0], err[1], err[2], err[3] = S.BAD_QID, base + line_start, base + q0, base + i
                return
            if has_qid:
                qid[r] = qv
        if line_has_qid != has_qid:
            err[0] = S.QID_MISSING if has_qid else S.QID_UNEXPECTED
            err[1], err[2], err[3] = base + line_start, base + t0, base + label_end
            return
        prev = -1
        beyond = False
        while i < hi:
            c = _CLS[buf[_U(i)]]  # unsigned: no negative-index fix-up in the hot loop
            if c == 1:
                i += 1
                continue
            if c != 0:
                break
            a = i
            fast = False
            if SWAR and i + SWAR_REACH <= hi:
                fast, idx, v, end = _swar_token(buf, i)
                if fast:
                    i = end
            if not fast:
                idx = np.int64(0)
                nd = 0
                while i < hi:
                    d = np.int32(buf[i]) - 48
                    if d < 0 or d > 9:
                        break
                    if nd < 11:
                        idx = idx * 10 + d
                    nd += 1
                    i += 1
                ok = i < hi and buf[i] == _COLON and 0 < nd <= 10 and idx <= S.MAX_INDEX
                v = 0.0
                if ok:
                    ok, v, i = _scan_number(buf, i + 1, hi)
            if not fast and not ok:
                b = i
                while b < hi and _CLS[buf[b]] == 0:
                    b += 1
                code, idx = _token_error(buf, a, b, shift)
                if code == S.OK:  # cannot happen if the two paths agree; never stop silently
                    code = S.BAD_VALUE
                err[0], err[1], err[2], err[3], err[4] = code, base + line_start, base + a, base + b, idx
                return
            code = 0
            col = idx - shift
            if idx == 0 and shift == 1:
                code = S.INDEX_ZERO
            elif col >= n_features and not inferred:
                code = S.INDEX_TOO_LARGE
            elif not allow_unsorted and prev >= 0 and idx <= prev:
                code = S.DUPLICATE if idx == prev else S.UNSORTED
            elif not (abs(v) <= huge):  # one comparison catches NaN, ±inf and huge values
                if policy == 0:
                    code = S.NONFINITE
                elif np.isnan(v):
                    if policy == 3:
                        code = S.NAN_CLIP
                    else:
                        replaced += 1
                else:
                    replaced += 1
                    if policy == 1:
                        v = np.inf if v > 0 else -np.inf
                    elif policy == 2:
                        v = np.nan
                    else:
                        v = huge if v > 0 else -huge
            if code:
                err[0], err[1], err[2], err[3] = code, base + line_start, base + a, base + i
                err[4], err[5] = idx, prev
                return
            prev = idx
            if col >= n_features:
                beyond = True
            elif dense:
                X[_U(r), _U(col)] = v
            else:
                if k >= k_end:
                    err[0], err[1], err[2], err[3] = S.FILE_CHANGED, base + line_start, base + a, base + i
                    return
                indices[_U(k)] = col
                data[_U(k)] = v
                k += 1
        if beyond:  # a line of increasing indices past the count: pass 1 read other bytes
            err[0], err[1], err[2], err[3] = S.FILE_CHANGED, base + line_start, base + line_start, base + i
            return
        if not dense:
            indptr[r + 1] = k
        r += 1
        while i < hi and buf[i] != _LF:
            i += 1
        i += 1
    err[6] = replaced
    err[7] = r - row0
    err[8] = k - k0


@njit(cache=True)
def _count_bytes(buf, lo, hi, first, second):
    """Occurrences of two byte values in buf[lo:hi], and of lone carriage returns (a ``\\r`` not
    followed by ``\\n`` inside buf[lo:hi]), in one pass over memory.

    Blocks of 64 × 255 bytes are counted in 64 uint8 lanes (at most 255 per lane, so no overflow),
    a loop shape LLVM turns into byte-wide vector compares; the lanes are summed once per block.

    >>> _count_bytes(np.frombuffer(b"1:2\\n3:4 5:6\\n" * 3000, dtype=np.uint8), 0, 39000, 10, 58)
    (6000, 9000, 0)
    >>> _count_bytes(np.frombuffer(b"1:2\\r\\n3:4\\r5:6\\r", dtype=np.uint8), 0, 14, 10, 58)
    (1, 3, 2)
    """
    sub = buf[lo:hi]
    n = sub.shape[0]
    a = 0
    b = 0
    cr = 0
    lane_a = np.zeros(64, dtype=np.uint8)
    lane_b = np.zeros(64, dtype=np.uint8)
    lane_cr = np.zeros(64, dtype=np.uint8)
    i = 0
    while i + 64 * 255 < n:  # strictly: the look-ahead byte at + lane + 1 stays inside sub
        lane_a[:] = 0
        lane_b[:] = 0
        lane_cr[:] = 0
        for block in range(255):
            at = i + block * 64
            for lane in range(64):
                c = sub[at + lane]
                lane_a[lane] += c == first
                lane_b[lane] += c == second
                lane_cr[lane] += (c == _CR) & (sub[at + lane + 1] != _LF)
        for lane in range(64):
            a += lane_a[lane]
            b += lane_b[lane]
            cr += lane_cr[lane]
        i += 64 * 255
    for j in range(i, n):
        a += sub[j] == first
        b += sub[j] == second
        cr += sub[j] == _CR and (j + 1 == n or sub[j + 1] != _LF)
    return a, b, cr


@njit(cache=True, nogil=True)
def _first_lone_cr(buf, n):
    """Offset of the first ``\\r`` in buf[:n] not followed by ``\\n`` (-1: none), for the message."""
    for j in range(n):
        if buf[j] == _CR and (j + 1 == n or buf[j + 1] != _LF):
            return j
    return -1


@njit(cache=True, parallel=True, nogil=True)
def _bound_chunk(buf, bounds, out):
    """Per part: an upper bound on its rows (lines), on its entries (``:`` bytes), and its lone ``\\r``."""
    for p in prange(bounds.shape[0] - 1):
        lo, hi = bounds[p], bounds[p + 1]
        lines, colons, lone_cr = _count_bytes(buf, lo, hi, _LF, _COLON)
        if hi > lo and buf[hi - 1] != _LF:
            lines += 1
        out[p, 0] = lines
        out[p, 1] = colons
        out[p, 2] = lone_cr


@njit(cache=True, nogil=True)
def _first_qid(buf, n):
    """Whether the first data line in buf[:n] has a ``qid:`` token: 1, 0, or -1 (no data line)."""
    i = 0
    while i < n:
        while i < n and _CLS[buf[i]] == 1:
            i += 1
        if i >= n:
            return -1
        if buf[i] == _LF or buf[i] == _HASH:
            while i < n and buf[i] != _LF:
                i += 1
            i += 1
            continue
        while i < n and _CLS[buf[i]] == 0:
            i += 1
        while i < n and _CLS[buf[i]] == 1:
            i += 1
        ok = i + 3 < n and buf[i] == 113 and buf[i + 1] == 105 and buf[i + 2] == 100 and buf[i + 3] == _COLON
        return 1 if ok else 0
    return -1


@njit(cache=True, nogil=True)
def _compact(row_starts, k_starts, written, dst_r, dst_k, dense, has_qid, y, qid, X, indptr, indices, data):
    """Close the gaps left by parts that wrote fewer rows/entries than their upper bounds.

    Parts are moved down in order (destination never above source, so ascending copies are safe);
    dense rows vacated by a move are zeroed again, because later rows only write their non-zeros.
    Returns the next free row and entry.
    """
    for p in range(row_starts.shape[0]):
        src_r = row_starts[p]
        src_k = k_starts[p]
        w = written[p, 7]
        e = written[p, 8]
        if src_r != dst_r:
            for j in range(w):
                y[dst_r + j] = y[src_r + j]
                if has_qid:
                    qid[dst_r + j] = qid[src_r + j]
                if dense:
                    X[dst_r + j, :] = X[src_r + j, :]
            if dense:
                for j in range(max(dst_r + w, src_r), src_r + w):
                    X[j, :] = 0
        if not dense and (src_r != dst_r or src_k != dst_k):
            shift = src_k - dst_k
            for j in range(e):
                indices[dst_k + j] = indices[src_k + j]
                data[dst_k + j] = data[src_k + j]
            for j in range(w):
                indptr[dst_r + j + 1] = indptr[src_r + j + 1] - shift
        dst_r += w
        dst_k += e
    return dst_r, dst_k


@njit(cache=True, parallel=True, nogil=True)
def _count_chunk(buf, bounds, shift, need_max, out):
    for p in prange(bounds.shape[0] - 1):
        rows, nnz, max_col, first_qid = _count_part(buf, bounds[p], bounds[p + 1], shift, need_max)
        out[p, 0] = rows
        out[p, 1] = nnz
        out[p, 2] = max_col
        out[p, 3] = first_qid


@njit(cache=True, parallel=True, nogil=True)
def _max_index_chunk(buf, bounds, shift, out):
    for p in prange(bounds.shape[0] - 1):
        out[p] = _max_last_index(buf, bounds[p], bounds[p + 1], shift)


@njit(cache=True, parallel=True, nogil=True)
def _fill_chunk(
    buf, bounds, base, row_offsets, nnz_offsets, row_ends, nnz_ends, shift, n_features, inferred, has_qid,
    allow_unsorted, integer_labels, allow_negative, check_range, label_lo, label_hi, policy, huge, dense,
    y, qid, X, indptr, indices, data, errs,
):  # fmt: skip
    for p in prange(bounds.shape[0] - 1):
        _fill_part(
            buf, bounds[p], bounds[p + 1], base, row_offsets[p], nnz_offsets[p], row_ends[p], nnz_ends[p],
            shift, n_features, inferred,
            has_qid, allow_unsorted, integer_labels, allow_negative, check_range, label_lo, label_hi,
            policy, huge, dense, y, qid, X, indptr, indices, data, errs[p],
        )  # fmt: skip


@njit(cache=True, nogil=True)
def _part_bounds(buf, n, parts):
    """Split buf[:n] into ``parts`` ranges that each start at a line start."""
    bounds = np.empty(parts + 1, dtype=np.int64)
    bounds[0] = 0
    for p in range(1, parts):
        j = max(n * p // parts, bounds[p - 1])
        while 0 < j < n and buf[j - 1] != _LF:  # j = 0 is a line start: buf[-1] is not ours to read
            j += 1
        bounds[p] = j
    bounds[parts] = n
    return bounds


@njit(cache=True, nogil=True)
def _last_newline(buf, n):
    for j in range(n - 1, -1, -1):
        if buf[j] == _LF:
            return j
    return -1


@njit(cache=True, nogil=True)
def _canonicalize_rows(indptr, indices, data):
    """Sort each CSR row by column, keep the last value of a repeated column, compact in place.

    Returns the new nnz; ``indptr`` is rewritten. Within a row, a stable sort keeps file order
    among equal columns, so the last one is the one written last.
    """
    n = indptr.shape[0] - 1
    out = 0
    start = indptr[0]
    for r in range(n):
        end = indptr[r + 1]
        order = np.argsort(indices[start:end], kind="mergesort")
        cols = indices[start:end][order]
        vals = data[start:end][order]
        row_begin = out
        for j in range(cols.shape[0]):
            if j + 1 < cols.shape[0] and cols[j + 1] == cols[j]:
                continue
            indices[out] = cols[j]
            data[out] = vals[j]
            out += 1
        indptr[r] = row_begin
        start = end
    indptr[n] = out
    return out


MEMORY_MAP = hasattr(mmap, "MAP_PRIVATE")  # POSIX; elsewhere (and when set False) files are read()


def _identity(st: os.stat_result) -> tuple[int, int]:
    """(size, mtime_ns) from a stat result: what must not change between the parser's two passes.

    Cheap on purpose (no content hash, unlike :func:`ltr.data.cache.file_identity`): it is checked
    before every window.
    """
    return st.st_size, st.st_mtime_ns


def _changed(path: Path) -> DataError:
    return DataError(
        f"{path}: the file changed while it was being parsed (its size, modification time or line count "
        "differs from the first pass); load it again once whoever writes it has finished"
    )


def _check_identity(path: Path, f, identity: tuple[int, int] | None) -> None:
    if identity is not None and _identity(os.fstat(f.fileno())) != identity:
        raise _changed(path)


def _chunks(path: Path, chunk: int, identity: tuple[int, int] | None = None):
    """Yield (buffer, n_valid, file_offset): complete lines only (the last may lack a newline at EOF).

    Memory-maps the file one window of ``chunk`` bytes at a time (no copy out of the page cache; a
    window is unmapped once the caller drops it); reads into a buffer instead (:func:`_read_chunks`)
    when :data:`MEMORY_MAP` is off. Before every window the file's ``identity`` (size, mtime) is
    checked, so a file rewritten between or during the passes raises :class:`DataError` instead of
    being mis-parsed. (A file truncated *while one mapped window is being read* is the exception:
    the operating system then stops the process with SIGBUS; the read fallback cannot be hit so.)
    """
    if not MEMORY_MAP:
        yield from _read_chunks(path, chunk, identity)
        return
    gran = mmap.ALLOCATIONGRANULARITY
    start = 0  # file offset of the next line
    window = chunk
    with open(path, "rb", buffering=0) as f:
        size = os.fstat(f.fileno()).st_size if identity is None else identity[0]
        while start < size:
            _check_identity(path, f, identity)
            base = start - start % gran
            length = min(window + start - base, size - base)
            # private + writable so the kernels see the same (writable) array type as the read fallback;
            # nothing writes to it, so no page is ever copied. No MAP_POPULATE: measured slower here.
            mm = mmap.mmap(
                f.fileno(), length, flags=mmap.MAP_PRIVATE,
                prot=mmap.PROT_READ | mmap.PROT_WRITE, offset=base,
            )  # fmt: skip
            view = np.frombuffer(mm, dtype=np.uint8)[start - base :]
            del mm  # the array keeps the mapping alive; it is unmapped when the array is dropped
            n = view.shape[0]
            if base + length >= size:
                yield view, n, start
                _check_identity(path, f, identity)  # nothing appended or rewritten while parsing
                return
            last = _last_newline(view, n)
            if last < 0:  # one line longer than the window: map a bigger one
                window *= 2
                continue
            yield view, last + 1, start
            start += last + 1
            window = chunk


def _read_chunks(path: Path, chunk: int, identity: tuple[int, int] | None = None):
    """Yield like :func:`_chunks`, reading into one buffer that grows only for a longer line.

    Both give the same lines at the same offsets, also when a line is longer than ``chunk``:

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "c.txt"
    >>> _ = p.write_bytes(b"1 qid:1 1:2\\n0 qid:1 1:0.12345678901\\n2 qid:2 1:3")
    >>> def lines(g): return [(bytes(b[:n]), off) for b, n, off in g]
    >>> lines(_read_chunks(p, 8)) == lines(_chunks(p, 8))
    True
    >>> lines(_chunks(p, 16))[:2]
    [(b'1 qid:1 1:2\\n', 0), (b'0 qid:1 1:0.12345678901\\n', 12)]
    """
    buf = np.empty(chunk, dtype=np.uint8)
    carry = 0
    offset = 0
    with open(path, "rb", buffering=0) as f:
        while True:
            _check_identity(path, f, identity)
            n = carry
            eof = False
            while n < buf.shape[0]:
                want = buf.shape[0] - n
                if identity is not None:  # never past the size the first pass saw
                    want = min(want, identity[0] - offset - n)
                got = f.readinto(memoryview(buf)[n : n + want]) if want > 0 else 0
                if not got:
                    eof = True
                    break
                n += got
            if eof:
                if n:
                    yield buf, n, offset
                _check_identity(path, f, identity)  # nothing appended or rewritten while parsing
                return
            last = _last_newline(buf, n)
            if last < 0:  # one line longer than the buffer: grow and keep reading
                bigger = np.empty(buf.shape[0] * 2, dtype=np.uint8)
                bigger[:n] = buf[:n]
                buf, carry = bigger, n
                continue
            yield buf, last + 1, offset
            rest = n - last - 1
            buf[:rest] = buf[last + 1 : n]
            offset += last + 1
            carry = rest


def _blank_bom(buf: np.ndarray, n: int) -> None:
    """Overwrite a leading UTF-8 byte order mark with spaces (same length: offsets and line numbers
    unchanged). The buffer is a private mapping or our own read buffer, so the file is never touched.
    """
    skip = bom_length(buf[: min(n, len(BOM))].tobytes())
    buf[:skip] = _SP


def kernels_compiled() -> bool:
    """Whether numba's on-disk cache holds the parser's kernels for this source (so the first parse
    does not compile for a minute). Reads numba's cache index (a private API: any surprise → True,
    i.e. no notice)."""
    try:
        return bool(_fill_chunk._cache._cache_file._load_index())  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - a numba internals change must not break parsing
        return True


#: One parse at a time per process: the parallel kernels run on numba's threading layer, and its
#: ``workqueue`` layer (numba's fallback when neither TBB nor OpenMP loads) aborts the whole process
#: when two Python threads launch parallel kernels at once — which Dask's threaded workers
#: (``LocalCluster(processes=False)``) or a user's threads do. Each parse already uses every numba thread.
_ONE_PARSE_AT_A_TIME = threading.Lock()


def parse_path(
    path: Path, opts: S.ParseOptions, *, n_threads: int | None = None, chunk: int | None = None
) -> RawParse:
    """Parse a file with the numba kernels; raise :class:`ParseFailure` at the first bad token.

    A gzip/bzip2/xz/zstd file (:func:`ltr.io.compression.compression_of`) is decompressed on the fly
    and parsed in one pass (:func:`_parse_stream`); byte offsets then count decompressed bytes.
    """
    threads = (
        numba.get_num_threads()
        if n_threads is None
        else max(1, min(int(n_threads), numba.config.NUMBA_NUM_THREADS))
    )
    path = Path(path)
    with _ONE_PARSE_AT_A_TIME:  # see _ONE_PARSE_AT_A_TIME
        previous = numba.get_num_threads()
        numba.set_num_threads(threads)
        try:
            kind = compression_of(path)
            if kind is None:
                return _parse(path, opts, threads, CHUNK if chunk is None else chunk)
            return _parse_stream(path, opts, threads, STREAM_CHUNK if chunk is None else chunk)
        finally:
            numba.set_num_threads(previous)


@dataclass
class _Plan:
    """What the counting pass learnt: per-chunk upper bounds and the shape of the result."""

    counts: list[np.ndarray]  # per chunk, per part: (lines, ':' bytes, lone CRs)
    has_qid: bool
    n_features: int
    dense: bool


#: Growable arrays start with at least this many bytes (zeroed by ``calloc``, so the pages stay
#: virtual until written). An allocation this large is always its own ``mmap`` in glibc, so growing it
#: with ``realloc`` remaps pages instead of copying; a smaller one may sit on the heap, where ``realloc``
#: copies it and briefly holds it twice (measured: +30 MB of peak on a 70 MB file).
_GROW_START = 64 << 20


def _room(a: np.ndarray, length: int) -> np.ndarray:
    """``a`` with at least ``length`` rows: the first rows kept, new rows zero, grown in place when large.

    >>> a = _room(np.zeros(0, dtype=np.float32), 3); a[:3] = 1; b = _room(a, 5)
    >>> b.shape[0] >= 5, b[:5].tolist()
    (True, [1.0, 1.0, 1.0, 0.0, 0.0])
    """
    if a.shape[0] >= length:
        return a
    if a.nbytes < _GROW_START:  # a fresh calloc'd block, the rows written so far copied (small)
        row = max(a.itemsize * int(np.prod(a.shape[1:], dtype=np.int64)), 1)
        bigger = np.zeros((max(length, -(-_GROW_START // row)), *a.shape[1:]), dtype=a.dtype)
        bigger[: a.shape[0]] = a
        return bigger
    a.resize((length, *a.shape[1:]), refcheck=False)  # realloc: pages remapped; the new rows zeroed
    return a


class _Output:
    """The result arrays and how much of them is written; filled chunk by chunk.

    Grown (:meth:`grow`, :func:`_room`) before every chunk by that chunk's upper bounds: first into
    a ``calloc``'d block of :data:`_GROW_START` bytes, then in place with ``realloc``, which remaps the
    pages of such a block instead of copying it, so the arrays never exist twice; or allocated once
    for the plan's totals (untouched tails of zeros/empty arrays are never paged in).
    """

    def __init__(self, opts: S.ParseOptions, has_qid: bool, n_features: int, dense: bool,
                 lines: int = 0, colons: int = 0) -> None:  # fmt: skip
        self.opts, self.has_qid, self.n_features, self.dense = opts, has_qid, n_features, dense
        dtype = np.dtype(opts.dtype)
        self.y = np.zeros(lines, dtype=np.float64)
        self.qid = np.zeros(lines if has_qid else 0, dtype=np.int64)
        if dense:
            self.X = np.zeros((lines, n_features), dtype=dtype)
            self.indptr = np.zeros(1, dtype=np.int64)
            self.indices = np.zeros(0, dtype=np.int32)
            self.data = np.zeros(0, dtype=dtype)
        else:
            self.X = np.zeros((0, 0), dtype=dtype)
            self.indptr = np.zeros(lines + 1, dtype=np.int64)
            self.indices = np.empty(colons, dtype=np.int32)
            self.data = np.empty(colons, dtype=dtype)
        self.dst_r = 0  # rows / entries actually written so far (after compaction)
        self.dst_k = 0
        self.replaced = 0

    def grow(self, rows: int, entries: int) -> None:
        """Room for ``rows`` more rows and ``entries`` more entries after the written ones."""
        need_r, need_k = self.dst_r + rows, self.dst_k + entries
        self.y = _room(self.y, need_r)
        if self.has_qid:
            self.qid = _room(self.qid, need_r)
        if self.dense:
            self.X = _room(self.X, need_r)  # new rows are zeros
        else:
            self.indptr = _room(self.indptr, need_r + 1)
            self.indices = _room(self.indices, need_k)
            self.data = _room(self.data, need_k)

    def trim(self) -> None:
        """Give back the capacity beyond the written rows and entries (in place)."""
        n_rows, nnz = int(self.dst_r), int(self.dst_k)
        for name, n in (("y", n_rows), ("qid", n_rows if self.has_qid else 0), ("X", n_rows if self.dense else 0),
                        ("indptr", n_rows + 1 if not self.dense else 1), ("indices", 0 if self.dense else nnz),
                        ("data", 0 if self.dense else nnz)):  # fmt: skip
            a = getattr(self, name)
            if a.shape[0] > n:
                a.resize((n, *a.shape[1:]), refcheck=False)

    def fill(self, buf: np.ndarray, n: int, offset: int, c: np.ndarray, parts: int, shift: int) -> None:
        """Parse the complete lines of buf[:n] (file offset ``offset``) after the written rows."""
        opts = self.opts
        bounds = _part_bounds(buf, n, parts)
        # parts start where the previous chunk's data actually ended (dst), plus upper bounds
        row_offsets = self.dst_r + np.concatenate([[0], np.cumsum(c[:-1, 0])]).astype(np.int64)
        k_offsets = self.dst_k + np.concatenate([[0], np.cumsum(c[:-1, 1])]).astype(np.int64)
        errs = np.zeros((parts, 9), dtype=np.int64)
        lo_label, hi_label = opts.label_range if opts.label_range is not None else (0.0, 0.0)
        _fill_chunk(
            buf, bounds, offset, row_offsets, k_offsets, row_offsets + c[:, 0], k_offsets + c[:, 1], shift,
            self.n_features, opts.n_features is None, self.has_qid, opts.allow_unsorted, opts.integer_labels, opts.allow_negative_labels,
            opts.label_range is not None, lo_label, hi_label, opts.nonfinite_code, opts.huge, self.dense,
            self.y, self.qid, self.X, self.indptr, self.indices, self.data, errs,
        )  # fmt: skip
        bad = np.flatnonzero(errs[:, 0])
        if bad.size:
            e = errs[bad[0]]
            raise ParseFailure(int(e[0]), int(e[1]), int(e[2]), int(e[3]), int(e[4]), int(e[5]))
        self.replaced += int(errs[:, 6].sum())
        self.dst_r, self.dst_k = _compact(
            row_offsets, k_offsets, errs, self.dst_r, self.dst_k, self.dense, self.has_qid, self.y, self.qid,
            self.X, self.indptr, self.indices, self.data,
        )  # fmt: skip

    def result(self, trim: bool = False) -> RawParse:
        """The written rows as a :class:`RawParse` (``trim``: give the unused capacity back first)."""
        n_rows, nnz = int(self.dst_r), int(self.dst_k)
        if trim:
            self.trim()
        y, qid, X, indptr, indices, data = self.y, self.qid, self.X, self.indptr, self.indices, self.data
        raw = RawParse(
            y=y[:n_rows], qid=qid[:n_rows] if self.has_qid else None, n_features=self.n_features,
            n_replaced=self.replaced,
        )  # fmt: skip
        if self.dense:
            raw.dense = X[:n_rows]
        else:
            indptr, indices, data = indptr[: n_rows + 1], indices[:nnz], data[:nnz]
            if self.opts.allow_unsorted:
                kept = _canonicalize_rows(indptr, indices, data)
                indices, data = indices[:kept], data[:kept]
            raw.indptr, raw.indices, raw.data = indptr, indices, data
        return raw


class _Counter:
    """Pass 1, one chunk at a time: line/entry upper bounds, the first row's qid flag, the largest index."""

    def __init__(self, opts: S.ParseOptions, parts: int) -> None:
        self.opts, self.parts = opts, parts
        self.shift = 0 if opts.zero_based else 1
        self.need_max = opts.n_features is None
        self.counts: list[np.ndarray] = []
        self.first_flag = -1
        self.max_col = -1

    def count(self, buf: np.ndarray, n: int, offset: int) -> np.ndarray:
        """Check and count one chunk (a UTF-16 start or a lone CR raises); returns its bounds."""
        if offset == 0:
            if is_utf16(buf[: min(n, 2)].tobytes()):
                raise ParseFailure(S.UTF16, 0, 0, 2)
            _blank_bom(buf, n)
        bounds = _part_bounds(buf, n, self.parts)
        out = np.zeros((self.parts, 3), dtype=np.int64)
        _bound_chunk(buf, bounds, out)
        if out[:, 2].any():  # CR-only line endings: reported before anything else, as by _pyparse
            at = offset + _first_lone_cr(buf, n)
            raise ParseFailure(S.LONE_CR, at, at, at + 1)
        self.counts.append(out)
        if self.first_flag < 0:
            self.first_flag = _first_qid(buf, n)
        if self.need_max and self.opts.allow_unsorted:  # any token may hold a line's largest index
            exact = np.zeros((self.parts, 4), dtype=np.int64)
            _count_chunk(buf, bounds, self.shift, True, exact)
            self.max_col = max(self.max_col, int(exact[:, 2].max()))
        elif self.need_max:  # the last one does in a valid line; the fill pass checks the others
            last = np.full(self.parts, -1, dtype=np.int64)
            _max_index_chunk(buf, bounds, self.shift, last)
            self.max_col = max(self.max_col, int(last.max()))
        return out

    @property
    def n_features(self) -> int:
        return self.opts.n_features if not self.need_max else self.max_col + 1

    def totals(self) -> tuple[int, int]:
        allc = np.concatenate(self.counts) if self.counts else np.zeros((0, 3), np.int64)
        return int(allc[:, 0].sum()), int(allc[:, 1].sum())

    def dense(self) -> bool:
        """The output layout for the rows counted so far (the whole file once every chunk is counted)."""
        lines, colons = self.totals()
        has_qid = self.first_flag == 1
        return choose_dense(self.opts, lines, max(colons - lines * has_qid, 0), self.n_features)

    def plan(self) -> _Plan:
        return _Plan(self.counts, self.first_flag == 1, self.n_features, self.dense())


def _parse(path: Path, opts: S.ParseOptions, threads: int, chunk: int) -> RawParse:
    """Two passes over the memory-mapped file: count (:class:`_Counter`), then fill (:func:`_fill_pass`)."""
    parts = threads if threads > 1 else 1
    identity = _identity(path.stat())
    counter = _Counter(opts, parts)
    for buf, n, offset in _chunks(path, chunk, identity):
        counter.count(buf, n, offset)
    return _fill_pass(path, _chunks(path, chunk, identity), counter.plan(), opts, parts)


def _fill_pass(path: Path, chunks, plan: _Plan, opts: S.ParseOptions, parts: int) -> RawParse:
    """Pass 2: every chunk parsed straight into arrays allocated once for the plan's totals."""
    lines = int(sum(int(c[:, 0].sum()) for c in plan.counts))
    colons = int(sum(int(c[:, 1].sum()) for c in plan.counts))
    out = _Output(opts, plan.has_qid, plan.n_features, plan.dense, lines, colons)
    shift = 0 if opts.zero_based else 1
    for ci, (buf, n, offset) in enumerate(chunks):
        if ci >= len(plan.counts):
            raise _changed(path)
        if offset == 0:
            _blank_bom(buf, n)
        try:
            out.fill(buf, n, offset, plan.counts[ci], parts, shift)
        except ParseFailure as fail:
            if fail.code == S.FILE_CHANGED:
                raise _changed(path) from None
            raise
    return out.result()


# --- compressed files: one streaming pass --------------------------------------------------------
STREAM_CHUNK = 16 << 20  # bytes per decompressed chunk; two such buffers are alive at once


def _parse_stream(path: Path, opts: S.ParseOptions, threads: int, chunk: int) -> RawParse:
    """Parse a compressed file in one pass over its decompressed stream (:func:`_stream_chunks`).

    A second pass would decompress the file twice, so each chunk is counted and then parsed at once
    into arrays that grow by the chunk's upper bounds (:class:`_Output` with ``grow``). The output
    layout (dense or CSR) and, without ``n_features``, the column count are taken from the rows
    seen so far; when the whole file disagrees (its density is on the other side of
    ``opts.density`` than its beginning's, or a later dense row has a larger index), the counts are
    completed and the stream is parsed again with the exact plan, as for a plain file. The result
    and every error are those of :func:`_parse` on the decompressed file.
    """
    parts = threads if threads > 1 else 1
    shift = 0 if opts.zero_based else 1
    identity = _identity(path.stat())
    counter = _Counter(opts, parts)
    out: _Output | None = None
    failure: ParseFailure | None = None  # a fill error waits: a lone CR later in the file comes first
    for buf, n, offset in _stream_chunks(path, chunk):
        if failure is not None and failure.code in (S.LONE_CR, S.UTF16):
            continue  # read to the end all the same: a corrupt stream is reported as corrupt
        try:
            c = counter.count(buf, n, offset)
        except ParseFailure as fail:  # comes first, as in the plain counting pass
            failure, out = fail, None
            continue
        if failure is not None or counter.first_flag < 0:  # failed, or no data row yet
            continue
        if out is None:
            out = _Output(opts, counter.first_flag == 1, counter.n_features, counter.dense())
        elif counter.n_features > out.n_features:
            if out.dense:  # the rows written have too few columns: parse again with the exact plan
                failure = ParseFailure(S.INDEX_TOO_LARGE, 0, 0, 0)
                out = None
                continue
            out.n_features = counter.n_features
        out.grow(int(c[:, 0].sum()), int(c[:, 1].sum()))
        try:
            out.fill(buf, n, offset, c, parts, shift)
        except ParseFailure as fail:
            failure, out = fail, None
    if _identity(path.stat()) != identity:  # rewritten while it was read: the text may be mixed
        raise _changed(path)
    if failure is not None and not (failure.code == S.INDEX_TOO_LARGE and counter.need_max):
        raise failure
    plan = counter.plan()
    if out is not None and failure is None and out.dense == plan.dense:
        out.n_features = plan.n_features
        return out.result(trim=True)
    if out is None and failure is None:  # no data rows at all
        return _Output(opts, plan.has_qid, plan.n_features, plan.dense).result()
    del out
    if _identity(path.stat()) != identity:
        raise _changed(path)
    return _fill_pass(path, _stream_chunks(path, chunk), plan, opts, parts)


def _stream_chunks(path: Path, chunk: int):
    """Yield (buffer, n_valid, offset) like :func:`_chunks`, from the decompressed bytes of ``path``.

    A thread decompresses the next chunk into a second buffer while the caller parses the current
    one (the decompressors and the nogil kernels release the GIL), so decompression overlaps
    parsing; at most two chunk buffers exist (a buffer grows only for a line longer than it).
    Decompression errors are raised here as the reader's ``DataError``.
    """
    free: queue.Queue = queue.Queue()
    ready: queue.Queue = queue.Queue()
    stop = object()
    for _ in range(2):
        free.put(np.empty(chunk, dtype=np.uint8))

    def produce() -> None:
        try:
            with open_input(path) as f:
                carry = b""
                offset = 0
                while True:
                    buf = free.get()
                    if buf is stop:
                        return
                    n = len(carry)
                    if n >= buf.shape[0]:  # the other buffer grew for a long line: so must this one
                        buf = np.empty(2 * n, dtype=np.uint8)
                    buf[:n] = np.frombuffer(carry, dtype=np.uint8)
                    while True:
                        while n < buf.shape[0]:
                            got = f.readinto(memoryview(buf)[n:])
                            if not got:
                                break
                            n += got
                        if n < buf.shape[0]:  # end of the data
                            ready.put((buf, n, offset, True))
                            return
                        last = _last_newline(buf, n)
                        if last >= 0:
                            break
                        bigger = np.empty(buf.shape[0] * 2, dtype=np.uint8)  # one line longer than a chunk
                        bigger[:n] = buf[:n]
                        buf = bigger
                    carry = buf[last + 1 : n].tobytes()
                    ready.put((buf, last + 1, offset, False))
                    offset += last + 1
        except BaseException as exc:  # handed to the consumer, which raises it
            ready.put(exc)

    worker = threading.Thread(target=produce, name=f"decompress {path.name}", daemon=True)
    worker.start()
    try:
        while True:
            item = ready.get()
            if isinstance(item, BaseException):
                raise item
            buf, n, offset, last = item
            if n:
                yield buf, n, offset
            if last:
                return
            free.put(buf)
    finally:
        free.put(stop)
        worker.join()
