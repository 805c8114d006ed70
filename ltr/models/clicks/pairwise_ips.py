"""Pairwise IPS LambdaMART: LightGBM's lambdarank gradients with each pair weighted by 1/θ of its clicked side.

A LightGBM custom objective (``params["objective"] = PairwiseIPSObjective(...)``) for training on click
logs with known or estimated examination propensities θ_r (Joachims, Swaminathan & Schnabel, WSDM 2017,
*Unbiased Learning-to-Rank with Biased Feedback*; Hu et al., WWW 2019, *Unbiased LambdaMART*, with the
propensities fixed instead of learned; Wang et al., WSDM 2018). Under the position-based model a click
on the document at position r is seen with probability θ_r, so weighting every (clicked i, non-clicked j)
pair by ``w_ij = 1/θ_{pos(i)}`` makes the pairwise loss an unbiased estimate of the loss on relevance
(the non-clicked side's weight 1/θ⁻ is 1 under the PBM without trust bias).

Per query (one session of the log), documents in the order of the current scores ``s`` (descending,
ties in input order, rank ``ρ`` 0-based), for every pair (h, l) with ``label_h > label_l`` and
``min(ρ_h, ρ_l) < truncation_level`` — exactly LightGBM's ``lambdarank`` pairs (``rank_objective.hpp``):

    Δ_hl = (G(label_h) − G(label_l)) · |D(ρ_h) − D(ρ_l)| / maxDCG@truncation_level,   D(ρ) = 1/log2(2 + ρ)
    Δ_hl ← Δ_hl / (0.01 + |s_h − s_l|)                  (``norm``, unless all scores of the query are equal)
    p_hl = 1 / (1 + exp(σ (s_h − s_l)))                 (probability that the pair is mis-ordered)
    λ_hl = σ · Δ_hl · p_hl,    η_hl = σ² · Δ_hl · p_hl (1 − p_hl)
    gradient_h −= w_hl λ_hl,   gradient_l += w_hl λ_hl,   hessian_h += w_hl η_hl,   hessian_l += w_hl η_hl

with ``w_hl = pair_weight[h]`` (``1/max(θ_{pos(h)}, floor)`` for clicks: labels are 0/1, so ``h`` is the
clicked document). ``norm`` then multiplies the query's gradients and hessians by ``log2(1 + S)/S`` with
``S = Σ 2 w_hl λ_hl``, LightGBM's normalisation applied to the weighted lambdas: a session's total pull
grows like log2 of its IPS-weighted lambdas, which tempers the variance of large weights (a noise click
deep in the list) — measured in docs/position_bias.md against normalising by the unweighted sum, which
keeps w_hl exactly but won less often. With every ``w = 1`` this is LightGBM's lambdarank gradient;
LightGBM reads the sigmoid from a table of 2^20 bins over ±50/σ, this code computes it exactly, so the
two differ by the table's resolution (relative ≈ 1e-4; ``tests/test_pairwise_ips.py`` compares the
trees both train).

One session, the clicked document shown at position 2 with θ_2 = 0.5 (weight 2), all scores 0
(p = 1/2, maxDCG = 1): its pairs with the documents at ranks 1 and 3 have Δ = 1 − 1/log2 3 = 0.3691 and
1/log2 3 − 1/2 = 0.1309, so λ = 0.1845 and 0.0655, weighted 0.3691 and 0.1309; S = 1, the factor
log2(2)/1 = 1:

>>> obj = PairwiseIPSObjective(offsets=[0, 3], labels=[0, 1, 0], pair_weight=[1.0, 2.0, 1.0])
>>> grad, hess = obj(np.zeros(3), None)
>>> grad.round(4).tolist()
[0.3691, -0.5, 0.1309]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numba import njit

#: LightGBM's ``0.01f`` in the score-distance normalisation (a float32 constant widened to double)
SCORE_DISTANCE_OFFSET = float(np.float32(0.01))


@njit(cache=True, nogil=True)
def _discount(rank):  # pragma: no cover - compiled
    return 1.0 / np.log2(2.0 + rank)


@njit(cache=True, nogil=True)
def _inverse_max_dcg(labels, gain, k):  # pragma: no cover - compiled
    """1 / DCG@k of the ideal order of ``labels`` (0 when that DCG is 0), as LightGBM's ``CalMaxDCGAtK``."""
    ideal = -np.sort(-labels)
    dcg = 0.0
    for i in range(min(k, ideal.shape[0])):
        dcg += gain[int(ideal[i])] * _discount(i)
    return 1.0 / dcg if dcg > 0.0 else 0.0


@njit(cache=True, nogil=True)
def pairwise_lambdas(
    offsets, labels, scores, pair_weight, gain, sigmoid, norm, truncation_level, grad, hess
):  # pragma: no cover - compiled
    """Fill ``grad``/``hess`` (zeroed here) with the weighted lambdarank gradients of the module docstring."""
    grad[:] = 0.0
    hess[:] = 0.0
    for q in range(offsets.shape[0] - 1):
        a = offsets[q]
        n = offsets[q + 1] - a
        if n < 2:
            continue
        s = scores[a : a + n]
        y = labels[a : a + n]
        order = np.argsort(-s, kind="mergesort")  # stable: ties keep input order (std::stable_sort)
        inverse_max_dcg = _inverse_max_dcg(y, gain, truncation_level)
        spread = s[order[0]] != s[order[n - 1]]
        total = 0.0
        for i in range(min(n - 1, truncation_level)):
            for j in range(i + 1, n):
                yi = y[order[i]]
                yj = y[order[j]]
                if yi == yj:
                    continue
                if yi > yj:
                    high_rank, low_rank = i, j
                else:
                    high_rank, low_rank = j, i
                high = order[high_rank]
                low = order[low_rank]
                delta_score = s[high] - s[low]
                delta = (
                    (gain[int(y[high])] - gain[int(y[low])])
                    * abs(_discount(high_rank) - _discount(low_rank))
                    * inverse_max_dcg
                )
                if norm and spread:
                    delta /= SCORE_DISTANCE_OFFSET + abs(delta_score)
                p = 1.0 / (1.0 + np.exp(sigmoid * delta_score))
                lam = sigmoid * delta * p
                curvature = sigmoid * sigmoid * delta * p * (1.0 - p)
                w = pair_weight[a + high]
                grad[a + high] -= w * lam
                grad[a + low] += w * lam
                hess[a + high] += w * curvature
                hess[a + low] += w * curvature
                total += 2.0 * w * lam
        if norm and total > 0.0:
            factor = np.log2(1.0 + total) / total
            for t in range(a, a + n):
                grad[t] *= factor
                hess[t] *= factor


def exp2_gain(max_label: int) -> np.ndarray:
    """LightGBM's default ``label_gain``: ``2^l − 1`` for l = 0..max_label.

    >>> exp2_gain(3).tolist()
    [0.0, 1.0, 3.0, 7.0]
    """
    return np.exp2(np.arange(max_label + 1, dtype=np.float64)) - 1.0


def ips_pair_weights(position: np.ndarray, theta: np.ndarray, floor: float = 0.0) -> np.ndarray:
    """``1/max(θ_r, floor)`` per row (``r`` = its 0-based display position): the weight of every pair whose
    preferred (clicked) side is that row.

    >>> ips_pair_weights(np.array([0, 1, 2]), np.array([1.0, 0.5, 0.1]), floor=0.2).tolist()
    [1.0, 2.0, 5.0]
    """
    return 1.0 / np.maximum(np.asarray(theta, dtype=np.float64), floor)[np.asarray(position)]


class PairwiseIPSObjective:
    """A LightGBM custom objective ``(preds, dataset) -> (grad, hess)`` over fixed query ``offsets``.

    ``labels`` are the integer grades (clicks 0/1), ``pair_weight`` the per-row weight of pairs whose
    preferred side is that row (:func:`ips_pair_weights`; all ones = LightGBM's lambdarank).
    ``sigmoid``, ``norm``, ``truncation_level`` and ``label_gain`` mean what LightGBM's ``sigmoid``,
    ``lambdarank_norm``, ``lambdarank_truncation_level`` and ``label_gain`` mean (same defaults).
    The dataset argument is not read: the objective is built for one training set.
    """

    def __init__(
        self,
        *,
        offsets: Sequence[int] | np.ndarray,
        labels: Sequence[float] | np.ndarray,
        pair_weight: Sequence[float] | np.ndarray,
        sigmoid: float = 1.0,
        norm: bool = True,
        truncation_level: int = 30,
        label_gain: Sequence[float] | np.ndarray | None = None,
    ) -> None:
        self.offsets = np.asarray(offsets, dtype=np.int64)
        self.labels = np.asarray(labels, dtype=np.float64)
        self.pair_weight = np.asarray(pair_weight, dtype=np.float64)
        self.sigmoid = float(sigmoid)
        self.norm = bool(norm)
        self.truncation_level = int(truncation_level)
        max_label = int(self.labels.max()) if self.labels.size else 0
        self.label_gain = exp2_gain(max_label) if label_gain is None else np.asarray(label_gain, np.float64)

    def __call__(self, preds: np.ndarray, dataset: Any) -> tuple[np.ndarray, np.ndarray]:
        grad = np.empty(self.labels.shape[0], dtype=np.float64)
        hess = np.empty_like(grad)
        pairwise_lambdas(
            self.offsets,
            self.labels,
            np.asarray(preds, dtype=np.float64),
            self.pair_weight,
            self.label_gain,
            self.sigmoid,
            self.norm,
            self.truncation_level,
            grad,
            hess,
        )
        return grad, hess
