"""The numba kernels of :meth:`ltr.data.RankingData.fingerprint`: two 64-bit sums over rows and entries.

Every row ``r`` (its index in the *whole* split, so a part of the rows knows where it starts) and
every non-zero entry ``(r, c, v)`` of ``X`` contribute one 64-bit term to each of two lanes; a lane
is the sum of its terms mod 2^64. With ``k_r`` = SplitMix64's output number ``r + 1`` (seed 0) and
``bits(x)`` the IEEE bits of ``x`` as float64 (``-0.0`` as ``0.0``, every NaN as one NaN)::

    row term     u = fmix64(fmix64(k_r ^ bits(y_r)) ^ qid_r)
    entry term   u = fmix64(k_r + (c + 1) * C) ^ bits(v)          (v != 0; C an odd constant)
    lanes        lane0 += mix13(u),  lane1 += fmix64(u ^ L)

``fmix64`` is MurmurHash3's finaliser, ``mix13`` Stafford's Mix13 (SplitMix64's): both bijections
of 64-bit words with full avalanche. So the lanes of rows ``[0, n)`` are the sums of the lanes of
any cut of them into row ranges (:func:`dense_lanes` / :func:`csr_lanes` take the range's first row);
for a fixed position each term is a bijection of the value, label or qid, so a value, label or qid
changed to another number always changes both lanes; an entry that appears or disappears adds or
removes a pseudo-random term, and terms of different positions are unrelated (a row moved elsewhere
changes its terms). It is a checksum for accidental differences, not a cryptographic hash.

>>> import numpy as np
>>> X = np.array([[0.0, 1.5], [2.0, 0.0], [0.0, 0.0]], dtype=np.float32)
>>> y, qid = np.array([1.0, 0.0, 2.0]), np.array([4, 4, 5])
>>> whole = dense_lanes(X, y, qid, 0)
>>> top, rest = dense_lanes(X[:1], y[:1], qid[:1], 0), dense_lanes(X[1:], y[1:], qid[1:], 1)
>>> [(a + b) % 2**64 for a, b in zip(top, rest)] == list(whole)
True
>>> dense_lanes(X.astype(np.float64), y, qid, 0) == whole, dense_lanes(X, y, qid, 1) == whole
(True, False)
"""

from __future__ import annotations

import numpy as np
from numba import njit, types

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)  # SplitMix64's increment
_COLUMN = np.uint64(0xC2B2AE3D27D4EB4F)  # odd: (c + 1) * C is one-to-one in c
_LANE1 = np.uint64(0x27D4EB2F165667C5)
_NAN_BITS = np.uint64(0x7FF8000000000000)


def _array(dtype: types.Type, ndim: int = 1) -> types.Array:
    """A read-only C-contiguous array type: writable arrays convert to it, and the parse cache's
    memory-mapped ones are read-only, so one compiled version serves both."""
    return types.Array(dtype, ndim, "C", readonly=True)


_LANES = types.UniTuple(types.uint64, 2)
_Y, _QID = _array(types.float64), _array(types.int64)
#: the kernels' signatures, compiled (or loaded from numba's cache) when this module is imported
DENSE_SIGNATURES = [_LANES(_array(v, 2), _Y, _QID, types.int64) for v in (types.float32, types.float64)]
CSR_SIGNATURES = [
    _LANES(_array(v), _array(i), _array(types.int64), _Y, _QID, types.int64)
    for v in (types.float32, types.float64)
    for i in (types.int32, types.int64)
]


@njit(cache=True, inline="always")
def _fmix64(x):
    x ^= x >> np.uint64(33)
    x *= np.uint64(0xFF51AFD7ED558CCD)
    x ^= x >> np.uint64(33)
    x *= np.uint64(0xC4CEB9FE1A85EC53)
    x ^= x >> np.uint64(33)
    return x


@njit(cache=True, inline="always")
def _mix13(x):
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


@njit(cache=True, inline="always")
def _bits(v):
    """IEEE bits of ``v`` as float64: ``-0.0`` as ``0.0``, every NaN as one NaN."""
    f = np.float64(v) + 0.0  # -0.0 + 0.0 is 0.0
    if f != f:
        return _NAN_BITS
    return np.float64(f).view(np.uint64)


@njit(cache=True, inline="always")
def _row_key(row):
    return _mix13((np.uint64(row) + np.uint64(1)) * _GOLDEN)


@njit(cache=True, inline="always")
def _row_term(key, label, qid):
    return _fmix64(_fmix64(key ^ _bits(label)) ^ np.uint64(qid))


@njit(cache=True, inline="always")
def _entry_term(key, column, value):
    return _fmix64(key + (np.uint64(column) + np.uint64(1)) * _COLUMN) ^ _bits(value)


@njit(DENSE_SIGNATURES, cache=True)
def dense_lanes(X, y, qid, first_row):
    """The two lanes of the rows of a dense ``X`` (C-contiguous), ``y`` (float64) and ``qid`` (int64),
    whose first row is row ``first_row`` of the split."""
    n, m = X.shape
    lane0 = np.uint64(0)
    lane1 = np.uint64(0)
    for r in range(n):
        key = _row_key(first_row + r)
        u = _row_term(key, y[r], qid[r])
        lane0 += _mix13(u)
        lane1 += _fmix64(u ^ _LANE1)
        for c in range(m):
            v = X[r, c]
            if v != 0:  # NaN != 0 too
                u = _entry_term(key, c, v)
                lane0 += _mix13(u)
                lane1 += _fmix64(u ^ _LANE1)
    return lane0, lane1


@njit(CSR_SIGNATURES, cache=True)
def csr_lanes(data, indices, indptr, y, qid, first_row):
    """The two lanes of the rows of a CSR matrix without duplicate entries (explicit zeros are
    skipped; the order of a row's entries does not matter), as :func:`dense_lanes` for a dense one.
    ``indptr`` (int64) holds the rows' bounds in ``data`` and ``indices``: ``indptr[r]:indptr[r + 1]``."""
    n = indptr.shape[0] - 1
    lane0 = np.uint64(0)
    lane1 = np.uint64(0)
    for r in range(n):
        key = _row_key(first_row + r)
        u = _row_term(key, y[r], qid[r])
        lane0 += _mix13(u)
        lane1 += _fmix64(u ^ _LANE1)
        lo, hi = indptr[r], indptr[r + 1]
        values, columns = data[lo:hi], indices[lo:hi]  # slices: no negative-index checks in the loop
        for j in range(hi - lo):
            v = values[j]
            if v != 0:
                u = _entry_term(key, columns[j], v)
                lane0 += _mix13(u)
                lane1 += _fmix64(u ^ _LANE1)
    return lane0, lane1
