"""Compiled per-query kernels (numba). Private: the validated entry point is :func:`ltr.metrics.evaluate`.

Every kernel loops over queries in compiled code and works on values already put in ranked order,
with the tie groups of that order given as ``bounds`` (tie group ``g`` occupies sorted rows
``bounds[g]:bounds[g+1]``) and ``qgrp`` (query ``q`` owns tie groups ``qgrp[q]:qgrp[q+1]``). When ties
are broken deterministically every group is a single row, and each formula below reduces to the usual
one. For a tie group the value is the exact expectation over a uniformly random order of its rows
(McSherry & Najork, ECIR 2008; the ERR/RR form uses elementary symmetric means, see
:func:`cascade_sum`). Ranks ``i`` in the formulas are 1-based; ``k`` is the cutoff (>= list length for
"whole list").
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _insertion_rank(scores, key, use_key, out, start, stop):  # pragma: no cover - compiled
    """Stable in-place insertion sort of the rows out[start:stop] (score descending, then key)."""
    for t in range(start + 1, stop):
        j = out[t]
        sj = scores[j]
        kj = key[j]
        pos = t
        while pos > start:
            prev = out[pos - 1]
            sp = scores[prev]
            if sp > sj or (sp == sj and (not use_key or key[prev] <= kj)):
                break
            out[pos] = prev
            pos -= 1
        out[pos] = j


@njit(cache=True, nogil=True)
def _sort_rows(scores, key, use_key, out, start, stop):  # pragma: no cover - compiled
    """Stable sort of the rows out[start:stop] by score descending, then key ascending."""
    if stop - start <= 64:
        _insertion_rank(scores, key, use_key, out, start, stop)
        return
    rows = out[start:stop].copy()
    neg = -scores[rows]
    if use_key:
        first = np.argsort(key[rows], kind="mergesort")
        second = np.argsort(neg[first], kind="mergesort")
        out[start:stop] = rows[first[second]]
    else:
        out[start:stop] = rows[np.argsort(neg, kind="mergesort")]


@njit(cache=True, nogil=True)
def rank_order(scores, key, offsets, use_key, depth):  # pragma: no cover - compiled
    """Row indices in ranked order: per query by score descending, ties by ``key`` ascending (when
    ``use_key``) and then by input order (both sorts used are stable).

    With ``depth`` >= 1 only the rows scoring at least the depth-th largest score of their query are
    ranked (the top ``depth`` plus every row tied with the last of them, so tie groups stay whole);
    ``depth`` = 0 ranks every row. Returns (order, offsets of the ranked rows per query).

    Top-``depth`` selection: split the list into ``depth`` non-empty blocks; the smallest block
    maximum t0 is <= the depth-th largest score (each block holds a score >= t0), so the rows
    scoring >= t0 (typically ~2·depth) contain the answer; only they are sorted.
    """
    nq = offsets.shape[0] - 1
    new_off = np.zeros(nq + 1, np.int64)
    out = np.empty(offsets[nq], np.int64)
    pos = 0
    for q in range(nq):
        a = offsets[q]
        b = offsets[q + 1]
        n = b - a
        start = pos
        if depth > 0 and n > depth:
            t0 = np.inf
            for blk in range(depth):
                lo = a + (blk * n) // depth
                hi = a + ((blk + 1) * n) // depth
                m = scores[lo]
                for j in range(lo + 1, hi):
                    m = max(m, scores[j])
                t0 = min(t0, m)
            for j in range(a, b):
                if scores[j] >= t0:
                    out[pos] = j
                    pos += 1
            _sort_rows(scores, key, use_key, out, start, pos)
            last = scores[out[start + depth - 1]]
            keep = depth
            while start + keep < pos and scores[out[start + keep]] == last:
                keep += 1
            pos = start + keep
        else:
            for j in range(a, b):
                out[pos] = j
                pos += 1
            _sort_rows(scores, key, use_key, out, start, pos)
        new_off[q + 1] = pos
    return out[:pos].copy(), new_off


_TOP_BIT = np.uint64(1 << 63)
_CANONICAL_NAN = np.uint64(0x7FF8000000000000)


@njit(cache=True, nogil=True)
def packed_keys(scores, offsets, queries, bits, width):  # pragma: no cover - compiled
    """A (len(queries), width) uint64 matrix whose ascending order is each list's ranking by score
    (``width`` ≥ the longest list, every list shorter than 2**bits).

    Entry (i, c) packs row ``offsets[queries[i]] + c``: the bits of −score mapped to unsigned order
    (negative: all bits flipped; else the sign bit set; −0.0 as +0.0, every NaN as one positive NaN,
    which sorts after +inf as numpy sorts NaN last), its low ``bits`` bits replaced by the column c.
    Unused columns hold 2^64 − 1 and sort last. Scores that differ only in those low bits get equal
    high bits: :func:`settle_packed` orders such runs by the exact scores.
    """
    low = np.uint64((1 << bits) - 1)
    block = np.full((queries.shape[0], width), np.uint64(0xFFFFFFFFFFFFFFFF))
    for i in range(queries.shape[0]):
        a = offsets[queries[i]]
        for c in range(offsets[queries[i] + 1] - a):
            x = 0.0 - scores[a + c]  # 0.0 - 0.0 is +0.0: the two zeros pack alike
            u = _CANONICAL_NAN if x != x else np.float64(x).view(np.uint64)
            u ^= (np.uint64(0) - (u >> np.uint64(63))) | _TOP_BIT  # no branch on the sign: it is random
            block[i, c] = (u & ~low) | np.uint64(c)
    return block


@njit(cache=True, nogil=True, inline="always")
def _ranks_before(scores, key, use_key, i, j):  # pragma: no cover - compiled
    """Whether row i ranks above row j: higher score (NaN last), then smaller ``key`` when ``use_key``, then row."""
    si = scores[i]
    sj = scores[j]
    if si != sj and (si == si or sj == sj):
        return sj != sj or si > sj
    if use_key and key[i] != key[j]:
        return key[i] < key[j]
    return i < j


@njit(cache=True, nogil=True)
def settle_packed(
    sorted_keys, queries, offsets, scores, key, use_key, bits, out
):  # pragma: no cover - compiled
    """Ranked rows from a row-wise sort of :func:`packed_keys`, exactly what :func:`rank_order` gives.

    Query ``queries[i]``'s rows are the columns in the low ``bits`` bits of the first n sorted keys
    (n its length; padding sorts last). Keys with equal high bits are runs of equal scores, or of
    scores equal in all but the packed bits: each run is ordered by score, then ``key`` (when
    ``use_key``), then row, and written to ``out[offsets[q]:offsets[q+1]]``.
    """
    low = np.uint64((1 << bits) - 1)
    shift = np.uint64(bits)
    for i in range(queries.shape[0]):
        q = queries[i]
        a = offsets[q]
        n = offsets[q + 1] - a
        for c in range(n):
            out[a + c] = a + np.int64(sorted_keys[i, c] & low)
        start = 0
        while start < n:
            high = sorted_keys[i, start] >> shift
            stop = start + 1
            while stop < n and sorted_keys[i, stop] >> shift == high:
                stop += 1
            if stop - start > 1:
                if stop - start <= 64:
                    for t in range(a + start + 1, a + stop):
                        j = out[t]
                        p = t
                        while p > a + start and _ranks_before(scores, key, use_key, j, out[p - 1]):
                            out[p] = out[p - 1]
                            p -= 1
                        out[p] = j
                else:  # by row, then key, then score: stable sorts, the last one deciding first
                    rows = np.sort(out[a + start : a + stop])
                    if use_key:
                        rows = rows[np.argsort(key[rows], kind="mergesort")]
                    rows = rows[np.argsort(-scores[rows], kind="mergesort")]
                    out[a + start : a + stop] = rows
            start = stop


@njit(cache=True, nogil=True)
def _id_after(ids, i, j, sign):  # pragma: no cover - compiled
    """Whether id row ``i`` sorts after id row ``j`` (lexicographic on the code units; ``sign`` -1
    reverses the order)."""
    for c in range(ids.shape[1]):
        if ids[i, c] != ids[j, c]:
            return (ids[i, c] > ids[j, c]) == (sign > 0)
    return False


@njit(cache=True, nogil=True)
def order_tie_groups(order, bounds, tied_at, ids, sign):  # pragma: no cover - compiled
    """Sort the rows of every tie group of ``order`` (group g = positions bounds[g]:bounds[g+1]) by
    document id, stably, in place: ascending (``sign`` 1) or descending (-1). ``ids[tied_at[p]]`` is
    the id of the row at position ``p`` as code units (``tied_at`` may be ``order`` itself, with one
    row of ``ids`` per document), so only tied rows are compared and only within their group (binary
    insertion: g·log g comparisons, one for a row already after its predecessor)."""
    widest = 0
    for g in range(bounds.shape[0] - 1):
        widest = max(widest, bounds[g + 1] - bounds[g])
    rows = np.empty(widest, order.dtype)  # one pair of buffers, not one per group
    idx = np.empty(widest, tied_at.dtype)
    for g in range(bounds.shape[0] - 1):
        a = bounds[g]
        b = bounds[g + 1]
        if b - a <= 1:
            continue
        for t in range(b - a):
            rows[t] = order[a + t]
            idx[t] = tied_at[a + t]
        for t in range(1, b - a):
            r = rows[t]
            k = idx[t]
            if not _id_after(ids, idx[t - 1], k, sign):  # in place already (ids often follow the rows)
                continue
            lo = 0
            hi = t
            while lo < hi:  # the first earlier row that sorts after this one (stable)
                mid = (lo + hi) // 2
                if _id_after(ids, idx[mid], k, sign):
                    hi = mid
                else:
                    lo = mid + 1
            for p in range(t, lo, -1):
                rows[p] = rows[p - 1]
                idx[p] = idx[p - 1]
            rows[lo] = r
            idx[lo] = k
        for t in range(b - a):
            order[a + t] = rows[t]


@njit(cache=True, nogil=True)
def discounted_sum(values, bounds, qgrp, offsets, disc, k):  # pragma: no cover - compiled
    """Per query Σ_{i<=k} E[v_i] D(i); in a tie group at ranks s+1..e, E[v_i] = mean of the group.

    With ``values`` = gains this is DCG@k; with ``disc`` = 1 and ``values`` = binary relevance it is
    the (expected) number of relevant documents in the top k.
    """
    nq = qgrp.shape[0] - 1
    out = np.zeros(nq)
    for q in range(nq):
        start = offsets[q]
        total = 0.0
        for g in range(qgrp[q], qgrp[q + 1]):
            s = bounds[g] - start
            if s >= k:
                break
            e = bounds[g + 1] - start
            if e - s == 1:
                total += values[bounds[g]] * disc[s]
            else:
                mean = 0.0
                for r in range(bounds[g], bounds[g + 1]):
                    mean += values[r]
                mean /= e - s
                dsum = 0.0
                for p in range(s, min(e, k)):
                    dsum += disc[p]
                total += mean * dsum
        out[q] = total
    return out


@njit(cache=True, nogil=True)
def mean_ndcg(expected_gain, offsets, ideal_gain, ideal_offsets, disc, k, sizes):  # pragma: no cover
    """Per query (1/m) Σ_{j=1..m} NDCG@j, m = min(k, n): the mean of the NDCG curve over the top m ranks.

    ``expected_gain`` holds each ranked row's gain, or its tie group's mean gain (E[DCG@j] by
    linearity, as in :func:`discounted_sum`); IDCG@j sums the query's ideal gains sorted descending;
    NDCG@j = 0 where IDCG@j = 0.
    """
    nq = offsets.shape[0] - 1
    out = np.zeros(nq)
    for q in range(nq):
        m = min(k, sizes[q])
        if m == 0:
            continue
        ideal = np.sort(ideal_gain[ideal_offsets[q] : ideal_offsets[q + 1]])[::-1]
        dcg = 0.0
        idcg = 0.0
        total = 0.0
        for p in range(m):
            dcg += expected_gain[offsets[q] + p] * disc[p]
            if p < ideal.shape[0]:
                idcg += ideal[p] * disc[p]
            if idcg > 0.0:
                total += dcg / idcg
        out[q] = total / m
    return out


@njit(cache=True, nogil=True)
def cascade_sum(stop, bounds, qgrp, offsets, k):  # pragma: no cover - compiled
    """Per query Σ_{r<=k} (1/r) R_r Π_{i<r} (1 − R_i): ERR with R = stop probabilities, RR with R ∈ {0,1}.

    For a tie group at 0-based ranks s..s+m−1 with x_j = 1 − R_j, the product over every earlier
    group is order-free, and for a random order E[R_(j) Π_{t<j} x_(t)] = E_{j−1} − E_j with
    E_q = e_q(x) / C(m, q) the elementary symmetric mean (E[Π of the first q] minus E[Π of the
    first q + 1]). E_q is built by the convex recursion
    E_q(x_1..x_n) = ((n−q)/n) E_q(x_1..x_{n−1}) + (q/n) x_n E_{q−1}(x_1..x_{n−1}), for q <= k − s.
    """
    nq = qgrp.shape[0] - 1
    out = np.zeros(nq)
    for q in range(nq):
        start = offsets[q]
        total = 0.0
        before = 1.0
        for g in range(qgrp[q], qgrp[q + 1]):
            s = bounds[g] - start
            if s >= k or before == 0.0:
                break
            m = bounds[g + 1] - bounds[g]
            if m == 1:
                total += before * stop[bounds[g]] / (s + 1)
                before *= 1.0 - stop[bounds[g]]
                continue
            depth = min(m, k - s)
            esm = np.zeros(depth + 1)
            esm[0] = 1.0
            prod = 1.0
            for n in range(1, m + 1):
                x = 1.0 - stop[bounds[g] + n - 1]
                prod *= x
                for qq in range(min(n, depth), 0, -1):
                    esm[qq] = ((n - qq) / n) * esm[qq] + (qq / n) * x * esm[qq - 1]
            part = 0.0
            for j in range(1, depth + 1):
                part += (esm[j - 1] - esm[j]) / (s + j)
            total += before * part
            before *= prod
        out[q] = total
    return out


@njit(cache=True, nogil=True)
def precision_sum(rel, bounds, qgrp, offsets, k):  # pragma: no cover - compiled
    """Per query Σ_{i<=k} E[rel_i · hits(<=i)] / i, the numerator of AP@k.

    In a tie group of m rows holding r relevant ones, with h relevant rows ranked above the group,
    the j-th row of the group gives E[rel · hits] = (r/m) (h + 1 + (j − 1)(r − 1)/(m − 1)).
    """
    nq = qgrp.shape[0] - 1
    out = np.zeros(nq)
    for q in range(nq):
        start = offsets[q]
        total = 0.0
        hits = 0.0
        if qgrp[q + 1] - qgrp[q] == offsets[q + 1] - start:  # no ties: every group is one row
            for t in range(start, min(offsets[q + 1], start + k)):
                x = rel[t]  # 0 or 1: adds (hits + 1) / rank at a relevant row, exactly 0.0 elsewhere
                hits += x
                total += x * hits / (t - start + 1)
            out[q] = total
            continue
        for g in range(qgrp[q], qgrp[q + 1]):
            s = bounds[g] - start
            if s >= k:
                break
            m = bounds[g + 1] - bounds[g]
            r = 0.0
            for t in range(bounds[g], bounds[g + 1]):
                r += rel[t]
            if r > 0.0:
                if m == 1:
                    total += (hits + 1.0) / (s + 1)
                else:
                    for j in range(1, min(m, k - s) + 1):
                        total += (r / m) * (hits + 1.0 + (j - 1) * (r - 1.0) / (m - 1)) / (s + j)
            hits += r
        out[q] = total
    return out


@njit(cache=True, nogil=True)
def ideal_dcg(gain, offsets, disc, k):  # pragma: no cover - compiled
    """Per query Σ_{i<=k} G_(i) D(i) over the gains sorted descending (the ideal DCG@k)."""
    nq = offsets.shape[0] - 1
    out = np.zeros(nq)
    for q in range(nq):
        a = offsets[q]
        b = offsets[q + 1]
        n = b - a
        if n == 0:
            continue
        g = np.sort(gain[a:b])
        total = 0.0
        for i in range(min(k, n)):
            total += g[n - 1 - i] * disc[i]
        out[q] = total
    return out


@njit(cache=True, nogil=True)
def ideal_dcg_counts(counts, disc, k, table, grades_by_gain):  # pragma: no cover - compiled
    """Ideal DCG@k from per-query grade counts (``counts[q, g]`` documents of grade g): no sort.

    ``table[g]`` is the gain of grade g and ``grades_by_gain`` the grades in decreasing gain order;
    the ideal list is grades_by_gain[0] repeated count times, then grades_by_gain[1], …
    Also returns, per query, whether any document has a positive gain (IDCG > 0).
    """
    nq = counts.shape[0]
    out = np.zeros(nq)
    positive = np.zeros(nq, np.bool_)
    for q in range(nq):
        total = 0.0
        pos = 0
        for t in range(grades_by_gain.shape[0]):
            g = grades_by_gain[t]
            c = counts[q, g]
            if c > 0 and pos == 0:
                positive[q] = table[g] > 0
            while c > 0 and pos < k:
                total += table[g] * disc[pos]
                pos += 1
                c -= 1
            if pos >= k:
                break
        out[q] = total
    return out, positive


@njit(cache=True, nogil=True)
def query_stats(labels, offsets, threshold, n_grades):  # pragma: no cover - compiled
    """One pass over the labels: per query the number of labels >= threshold, the largest label
    (0 for an empty query) and, when ``n_grades`` > 0, the count of each grade 0..n_grades−1;
    and whether every label is a whole number (the counts are valid only then)."""
    nq = offsets.shape[0] - 1
    n_rel = np.zeros(nq)
    top = np.zeros(nq)
    counts = np.zeros((nq, max(n_grades, 1)), np.int32)
    whole = True
    for q in range(nq):
        r = 0.0
        m = 0.0
        for i in range(offsets[q], offsets[q + 1]):
            v = labels[i]
            if v >= threshold:
                r += 1.0
            if v > m:
                m = v
            if whole:
                if v != np.floor(v):
                    whole = False
                elif n_grades > 0:
                    counts[q, int(v)] += 1
        n_rel[q] = r
        top[q] = m
    return n_rel, top, whole, counts


@njit(cache=True, nogil=True)
def tie_groups(sorted_scores, offsets):  # pragma: no cover - compiled
    """Tie groups of ranked lists: ``bounds`` (group g = rows bounds[g]:bounds[g+1]) and ``qgrp``
    (query q owns groups qgrp[q]:qgrp[q+1]); a group never spans two queries."""
    n = sorted_scores.shape[0]
    nq = offsets.shape[0] - 1
    bounds = np.empty(n + 1, np.int64)
    qgrp = np.empty(nq + 1, np.int64)
    g = 0
    for q in range(nq):
        qgrp[q] = g
        for i in range(offsets[q], offsets[q + 1]):
            if i == offsets[q] or sorted_scores[i] != sorted_scores[i - 1]:
                bounds[g] = i
                g += 1
    qgrp[nq] = g
    bounds[g] = n
    return bounds[: g + 1], qgrp  # a view: a copy of up to n + 1 ints costs more than the slack
