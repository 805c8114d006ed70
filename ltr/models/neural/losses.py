"""The ranking losses of the neural rankers: rax's losses, one value per list, padding-invariant.

A batch is ``scores[B, L]``, ``labels[B, L]`` (graded relevance) and ``mask[B, L]`` (False on the
padding that evens out the lists' lengths). :func:`list_losses` returns one value per list, from
rax (Google's learning-to-rank library on JAX); :func:`batch_loss` is their weighted mean. With
``n`` the list's real items, ``G(y) = 2^y − 1`` and ``D(r) = 1 / log2(1 + r)``:

================  ====================================================================================
loss              per-list value ``ℓ(s, y)``
================  ====================================================================================
``softmax``       ListNet's top-one cross-entropy (Cao et al. 2007; ``rax.softmax_loss`` with
                  ``label_fn=rax.utils.normalize_probabilities``):
                  ``ℓ = − Σ_i (y_i / Σ_j y_j) · log softmax(s)_i``
``listmle``       the Plackett–Luce likelihood of the label order (Xia et al. 2008; ``rax.listmle_loss``):
                  π sorts the items by label, descending (ties: list order),
                  ``ℓ = − Σ_k [ s_π(k) − log Σ_{m ≥ k} exp s_π(m) ]``
``approxndcg``    minus NDCG with smooth ranks (Qin, Liu and Li 2010; ``rax.ndcg_metric`` with
                  ``rax.utils.approx_ranks``): ``r̂_i = 1 + Σ_{j ≠ i} σ((s_j − s_i) / T)``,
                  ``ℓ = − Σ_i G(y_i) · D(r̂_i) / IDCG`` (0 without a relevant item; ``T``: ``temperature``)
``pairwise``      RankNet's logistic loss, mean over the pairs ``P = {(i, j): y_i > y_j}``
                  (``rax.pairwise_logistic_loss``): ``ℓ = (1/|P|) Σ_P log(1 + exp(−(s_i − s_j)))``
``lambdaloss``    LambdaLoss' NDCG-Loss2 (Wang et al. 2018; ``rax.pairwise_logistic_loss`` with
                  ``rax.dcg2_lambdaweight(normalize=True)``): the pairwise loss with each pair weighted by
                  ``δ_ij = |G(y_i) − G(y_j)| · |D(|r_i − r_j|) − D(|r_i − r_j| + 1)| / IDCG``, ``r``
                  the ranks by ``s``: ``ℓ = (1/|P|) Σ_P δ_ij · log(1 + exp(−(s_i − s_j)))``
================  ====================================================================================

Two conventions are ours, and make every value independent of how much padding a list carries:

* rax multiplies the lambdaweights by the *padded* list length (``scores.shape[-1]``, "to avoid too
  small values"); :func:`list_losses` divides that back out, so ``δ_ij`` is the formula above;
* a list with no two different labels (all non-relevant, or all equal) carries no preference:
  :func:`batch_loss` gives it weight 0. (ListMLE would otherwise learn the list's arbitrary order.)

rax 0.4's ``approx_t12n`` calls ``jax.util.wraps``, which JAX 0.5 removed; ``approxndcg`` therefore
applies ``rax.utils.approx_ranks`` itself — the same computation, without the wrapper.

>>> import jax.numpy as jnp
>>> s, y, m = jnp.array([[2.0, 1.0, 0.0]]), jnp.array([[1.0, 0.0, 0.0]]), jnp.array([[True, True, False]])
>>> round(float(list_losses("pairwise", s, y, m)[0]), 6)  # log(1 + e^-1): one pair; padding ignored
0.313262
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import rax

#: the loss names a config's ``params.loss`` takes (the neural model names are ``neural_<loss>``)
LOSSES: tuple[str, ...] = ("softmax", "listmle", "approxndcg", "pairwise", "lambdaloss")


def _pairs(labels: jax.Array, mask: jax.Array) -> jax.Array:
    """The number of pairs ``(i, j)`` of real items with ``y_i > y_j``, per list."""
    better = labels[..., :, None] > labels[..., None, :]
    both = mask[..., :, None] & mask[..., None, :]
    return jnp.sum(better & both, axis=(-2, -1))


def _pairwise(
    scores: jax.Array, labels: jax.Array, mask: jax.Array, lambdaweight_fn: Callable | None
) -> jax.Array:
    """Mean logistic pair loss per list (rax's pair losses, summed per list over its valid pairs)."""
    per_pair = rax.pairwise_logistic_loss(
        scores, labels, where=mask, reduce_fn=None, lambdaweight_fn=lambdaweight_fn
    )
    total = jnp.sum(per_pair.reshape(*scores.shape[:-1], -1), axis=-1)
    if lambdaweight_fn is not None:  # rax scales lambdaweights by the padded length: undo it
        total = total / scores.shape[-1]
    return total / jnp.maximum(_pairs(labels, mask), 1)


def list_losses(
    loss: str, scores: jax.Array, labels: jax.Array, mask: jax.Array, *, temperature: float = 1.0
) -> jax.Array:
    """One loss value per list (``[B]``) for ``loss`` (one of :data:`LOSSES`; formulas in the module docstring)."""
    if loss == "softmax":
        probabilities = (
            rax.utils.normalize_probabilities
        )  # rax's default keeps raw grades: ListNet normalises
        return rax.softmax_loss(scores, labels, where=mask, reduce_fn=None, label_fn=probabilities)
    if loss == "listmle":
        return rax.listmle_loss(scores, labels, where=mask, reduce_fn=None)
    if loss == "approxndcg":
        step = functools.partial(_sigmoid_step, temperature=temperature)
        rank_fn = functools.partial(rax.utils.approx_ranks, step_fn=step)
        return -rax.ndcg_metric(scores, labels, where=mask, rank_fn=rank_fn, reduce_fn=None)
    if loss == "pairwise":
        return _pairwise(scores, labels, mask, None)
    if loss == "lambdaloss":
        weights = functools.partial(rax.dcg2_lambdaweight, normalize=True)
        return _pairwise(scores, labels, mask, weights)
    raise ValueError(f"unknown loss {loss!r}; expected one of {', '.join(LOSSES)}")  # checked by the config


def _sigmoid_step(x: jax.Array, *, temperature: float) -> jax.Array:
    return jax.nn.sigmoid(x / temperature)


def informative(labels: jax.Array, mask: jax.Array) -> jax.Array:
    """Per list: True when two of its real items have different labels (the list states a preference).

    >>> import jax.numpy as jnp
    >>> informative(jnp.array([[1.0, 0.0], [0.0, 0.0], [2.0, 1.0]]), jnp.array([[True, True], [True, True], [True, False]])).tolist()
    [True, False, False]
    """
    high = jnp.max(jnp.where(mask, labels, -jnp.inf), axis=-1)
    low = jnp.min(jnp.where(mask, labels, jnp.inf), axis=-1)
    return high > low


def batch_loss(
    loss: str,
    scores: jax.Array,
    labels: jax.Array,
    mask: jax.Array,
    list_weights: jax.Array,
    *,
    temperature: float = 1.0,
) -> jax.Array:
    """``Σ_q w_q ℓ_q / Σ_q w_q`` over the informative lists ``q`` of the batch (0 when none is).

    ``list_weights`` are the queries' weights (``RankingData.weight``; 1 without), 0 on padding lists.
    """
    values = list_losses(loss, scores, labels, mask, temperature=temperature)
    w = jnp.where(informative(labels, mask), list_weights, 0.0)
    values = jnp.where(w > 0, values, 0.0)  # a padding list's NaN (log-softmax of nothing) must not leak
    return jnp.sum(w * values) / jnp.maximum(jnp.sum(w), 1e-12)
