"""Compiled resampling kernels shared by the bootstrap, the randomisation test and Tukey's HSD.

Every kernel runs ``B`` independent resamples without a Python loop and without materialising an
index matrix: resample ``b`` draws its random numbers from its own SplitMix64 stream seeded with
``seeds[b]`` (64-bit seeds drawn from a :class:`numpy.random.Generator` by the caller). Hence a
result depends only on the caller's seed, never on chunking or thread count, and memory is O(B).

Bounded integers use Lemire's multiply-shift with rejection (exactly uniform on ``0..n-1``).
SplitMix64 (Steele, Lea & Flood 2014) passes BigCrush and costs about 1 ns per 64-bit draw.
"""

from __future__ import annotations

import numba
import numpy as np

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_MASK32 = np.uint64(0xFFFFFFFF)
_S27 = np.uint64(27)
_S30 = np.uint64(30)
_S31 = np.uint64(31)
_S32 = np.uint64(32)
_ONE = np.uint64(1)


@numba.njit(inline="always")
def _next(state: np.uint64) -> tuple[np.uint64, np.uint64]:
    """One SplitMix64 step: (new state, 64 random bits)."""
    state = state + _GOLDEN
    z = state
    z = (z ^ (z >> _S30)) * _MIX1
    z = (z ^ (z >> _S27)) * _MIX2
    return state, z ^ (z >> _S31)


@numba.njit(inline="always")
def _bounded(state: np.uint64, n: np.uint64, threshold: np.uint64) -> tuple[np.uint64, np.int64]:
    """Uniform integer in ``[0, n)`` (Lemire 2019); ``threshold = 2**32 mod n``."""
    while True:
        state, z = _next(state)
        m = (z >> _S32) * n
        if (m & _MASK32) >= threshold:
            return state, np.int64(m >> _S32)


def bounded_threshold(n: int) -> np.uint64:
    """Rejection threshold ``2**32 mod n`` of :func:`_bounded`."""
    return np.uint64((1 << 32) % n)


@numba.njit(cache=True, nogil=True)
def bootstrap_sums(values: np.ndarray, weights: np.ndarray, seeds: np.ndarray, out: np.ndarray) -> None:
    """``out[b] = Σ_j w[i_j] x[i_j] / Σ_j w[i_j]`` over ``n`` indices ``i_j`` drawn with replacement.

    Each 64-bit draw yields two 32-bit candidates; a candidate is mapped to ``[0, n)`` by Lemire's
    multiply-shift and rejected (skipped) in the rare biased zone, so every index is exactly uniform.
    An empty ``weights`` array means unit weights.
    """
    n = values.shape[0]
    un = np.uint64(n)
    threshold = np.uint64((np.uint64(1) << _S32) % un)
    weighted = weights.shape[0] == n
    for b in range(seeds.shape[0]):
        state = seeds[b]
        # two independent accumulator chains (one per 32-bit half) hide floating-point add latency
        t0 = 0.0
        t1 = 0.0
        w0 = 0.0
        w1 = 0.0
        drawn = 0
        while drawn < n:
            state, z = _next(state)
            m = (z >> _S32) * un
            if (m & _MASK32) >= threshold:
                i = np.int64(m >> _S32)
                if weighted:
                    t0 += weights[i] * values[i]
                    w0 += weights[i]
                else:
                    t0 += values[i]
                drawn += 1
            if drawn < n:
                m = (z & _MASK32) * un
                if (m & _MASK32) >= threshold:
                    i = np.int64(m >> _S32)
                    if weighted:
                        t1 += weights[i] * values[i]
                        w1 += weights[i]
                    else:
                        t1 += values[i]
                    drawn += 1
        out[b] = (t0 + t1) / (w0 + w1) if weighted else (t0 + t1) / n


@numba.njit(cache=True, nogil=True)
def sign_flip_sums(diffs: np.ndarray, seeds: np.ndarray, out: np.ndarray) -> None:
    """``out[b] = Σ_i s_i d_i`` with independent fair signs ``s_i = ±1`` (64 signs per draw)."""
    n = diffs.shape[0]
    for b in range(seeds.shape[0]):
        state = seeds[b]
        total = 0.0
        bits = np.uint64(0)
        left = 0
        for i in range(n):
            if left == 0:
                state, bits = _next(state)
                left = 64
            total += diffs[i] * (1.0 - 2.0 * np.float64(bits & _ONE))  # branch-free sign
            bits = bits >> _ONE
            left -= 1
        out[b] = total


@numba.njit(cache=True, nogil=True)
def max_permuted_range(table: np.ndarray, seeds: np.ndarray, out: np.ndarray) -> None:
    """Randomised Tukey HSD null: shuffle each row of ``table`` (queries × systems) independently,
    then ``out[b] = max_j mean_j − min_j mean_j`` over the shuffled column means."""
    n, k = table.shape
    sums = np.empty(k)
    row = np.empty(k)
    thresholds = np.empty(k + 1, dtype=np.uint64)  # Lemire threshold 2**32 mod m for m = 1..k
    for m in range(1, k + 1):
        thresholds[m] = (np.uint64(1) << _S32) % np.uint64(m)
    for b in range(seeds.shape[0]):
        state = seeds[b]
        sums[:] = 0.0
        for q in range(n):
            for j in range(k):
                row[j] = table[q, j]
            for j in range(k - 1, 0, -1):  # Fisher–Yates
                state, r = _bounded(state, np.uint64(j + 1), thresholds[j + 1])
                tmp = row[j]
                row[j] = row[r]
                row[r] = tmp
            for j in range(k):
                sums[j] += row[j]
        hi = sums[0]
        lo = sums[0]
        for j in range(1, k):
            if sums[j] > hi:
                hi = sums[j]
            if sums[j] < lo:
                lo = sums[j]
        out[b] = (hi - lo) / n


def draw_seeds(rng: np.random.Generator, B: int) -> np.ndarray:
    """``B`` independent 64-bit stream seeds from ``rng`` (one per resample)."""
    return rng.integers(0, np.iinfo(np.uint64).max, size=B, dtype=np.uint64, endpoint=True)
