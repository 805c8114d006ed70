"""A fast 64-bit checksum of byte arrays for the cache manifest (numba; several GB/s on one core).

The construction is XXH64's: four lanes over 8-byte words, each ``acc = rotl(acc + w·P2, 31)·P1``,
merged and avalanched at the end, with the length mixed in. It detects truncation and any changed
byte with probability 1 - 2^-64; it is not a cryptographic hash (nobody is attacking a local cache).

>>> import numpy as np
>>> a = np.arange(1000, dtype=np.float32)
>>> checksum(a) == checksum(a.copy()), checksum(a) == checksum(a[:-1])
(True, False)
"""

from __future__ import annotations

import numpy as np
from numba import njit

_P1 = np.uint64(11400714785074694791)
_P2 = np.uint64(14029467366897019727)
_P3 = np.uint64(1609587929392839161)
_P4 = np.uint64(9650029242287828579)
_P5 = np.uint64(2870177450012600261)


@njit(cache=True, inline="always")
def _rotl(x, r):
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


@njit(cache=True, inline="always")
def _round(acc, w):
    acc = acc + w * _P2
    return _rotl(acc, 31) * _P1


@njit(cache=True)
def _hash_words(words, tail, n_bytes):
    n = words.shape[0]
    v1 = _P1 + _P2
    v2 = _P2
    v3 = np.uint64(0)
    v4 = np.uint64(0) - _P1
    i = 0
    while i + 4 <= n:
        v1 = _round(v1, words[i])
        v2 = _round(v2, words[i + 1])
        v3 = _round(v3, words[i + 2])
        v4 = _round(v4, words[i + 3])
        i += 4
    h = _rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)
    for v in (v1, v2, v3, v4):
        h = (h ^ _round(np.uint64(0), v)) * _P1 + _P4
    h = h + np.uint64(n_bytes)
    while i < n:
        h = _rotl(h ^ _round(np.uint64(0), words[i]), 27) * _P1 + _P4
        i += 1
    for b in tail:
        h = _rotl(h ^ (np.uint64(b) * _P5), 11) * _P1
    h ^= h >> np.uint64(33)
    h *= _P2
    h ^= h >> np.uint64(29)
    h *= _P3
    h ^= h >> np.uint64(32)
    return h


def checksum(a: np.ndarray | bytes | memoryview) -> str:
    """Hex digest (16 digits) of the raw bytes of a C-contiguous array (or a bytes-like object)."""
    raw = np.frombuffer(a, dtype=np.uint8) if not isinstance(a, np.ndarray) else a
    raw = np.ascontiguousarray(raw).reshape(-1).view(np.uint8)
    n8 = raw.shape[0] // 8 * 8
    words = raw[:n8].view(np.uint64)
    return f"{int(_hash_words(words, raw[n8:], raw.shape[0])):016x}"
