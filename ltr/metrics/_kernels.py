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
def rank_order(scores, key, offsets, use_key):  # pragma: no cover - compiled
    """Row indices in ranked order: per query by score descending, ties by ``key`` ascending
    (when ``use_key``) and then by input order (mergesort is stable)."""
    n = scores.shape[0]
    out = np.empty(n, np.int64)
    for q in range(offsets.shape[0] - 1):
        a = offsets[q]
        b = offsets[q + 1]
        if b - a == 0:
            continue
        neg = -scores[a:b]
        if use_key:
            first = np.argsort(key[a:b], kind="mergesort")
            second = np.argsort(neg[first], kind="mergesort")
            out[a:b] = first[second] + a
        else:
            out[a:b] = np.argsort(neg, kind="mergesort") + a
    return out


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
