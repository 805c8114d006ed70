"""The scoring networks of the neural rankers: pure JAX functions over a flat parameter dict.

Parameters are a ``{name: array}`` dict (names such as ``dense_0.w``), so they are written as they
are to a ``.npz`` file and read back without pickle. Two scorers, both applied after the fitted
feature transform ``z = (t(x) − μ) / σ`` (``t`` = signed log1p ``sign(x)·log(1 + |x|)`` or the
identity, ``μ``/``σ`` the training mean and standard deviation, ``σ = 1`` for a feature constant in training):

* ``mlp`` — each document on its own: ``h_0 = z``, ``h_k = relu(h_{k−1} W_k + b_k)`` for each width
  of ``hidden_units`` (dropout at rate ``p`` after each, in training only), ``s = h_K w + b``;
* ``attention`` — the context-aware scorer of Pobrotyn et al. (2020): the same MLP embeds each
  document (width ``d`` = the last of ``hidden_units``), then ``attention_layers`` Transformer
  encoder blocks let every document attend to the others of its list (padding is never attended to):
  ``h ← LN(h + MHA(h)); h ← LN(h + relu(h W_1 + b_1) W_2 + b_2)`` with ``attention_heads`` heads and
  a feed-forward width of ``2d``; ``s = h w + b``. A document's score depends on its list.

Initialisation: He-normal ``N(0, 2 / fan_in)`` for ReLU layers, ``N(0, 1 / fan_in)`` for the
attention projections and the output, zero biases, unit layer-norm gains — from one seed.

>>> import jax, numpy as np
>>> spec = NetworkSpec(n_features=3, hidden_units=(4,), scorer="mlp")
>>> params = init_params(spec, jax.random.PRNGKey(0))
>>> sorted(params), params["dense_0.w"].shape
(['dense_0.b', 'dense_0.w', 'out.b', 'out.w'], (3, 4))
>>> x = np.ones((2, 5, 3), np.float32); mask = np.ones((2, 5), bool)
>>> apply(params, spec, Standardise.identity(3).arrays, x, mask).shape
(2, 5)
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from ltr.data.normalize import Moments

SCORERS: tuple[str, ...] = ("mlp", "attention")
TRANSFORMS: tuple[str, ...] = ("log1p_zscore", "zscore", "none")
LAYER_NORM_EPS = 1e-5


@dataclass(frozen=True)
class NetworkSpec:
    """The shape of a network (hashable: it is a static argument of the compiled functions)."""

    n_features: int
    hidden_units: tuple[int, ...]
    scorer: str = "mlp"
    attention_heads: int = 2
    attention_layers: int = 1
    dropout: float = 0.0
    log1p: bool = False  # the feature transform starts with signed log1p (Standardise.log1p)


@dataclass(frozen=True)
class Standardise:
    """The fitted feature transform: ``z = (t(x) − mean) / scale``, ``t`` signed log1p when ``log1p``."""

    log1p: bool
    mean: np.ndarray  # (n_features,) float32
    scale: np.ndarray  # (n_features,) float32, > 0

    @classmethod
    def identity(cls, n_features: int) -> Standardise:
        return cls(False, np.zeros(n_features, np.float32), np.ones(n_features, np.float32))

    @classmethod
    def fit(cls, kind: str, stats: Moments) -> Standardise:
        """From the training rows' moments of ``t(x)`` (:func:`ltr.data.normalize.column_moments`, combined
        over blocks by Chan et al.'s update); ``kind`` one of :data:`TRANSFORMS`.

        A feature whose training values are all equal gets ``scale = 1``: its standard deviation is
        then rounding residue (< 1e-9 of its mean; float32 features resolve 6e-8), and dividing by it
        would multiply a later, different value by 1e9 or more.

        >>> from ltr.data.normalize import column_moments, signed_log1p
        >>> x = signed_log1p(np.array([[0.0, 0.1], [2.0, 0.1], [4.0, 0.1]]))
        >>> s = Standardise.fit("log1p_zscore", column_moments(x))
        >>> s.scale.tolist()[1], round(float(s.scale[0]), 4)
        (1.0, 0.6715)
        """
        n_features = stats.mean.shape[0]
        if kind == "none":
            return cls.identity(n_features)
        std = np.sqrt(stats.m2 / np.maximum(stats.count, 1.0))
        scale = np.where(std > 1e-9 * np.abs(stats.mean), std, 1.0)
        return cls(kind == "log1p_zscore", stats.mean.astype(np.float32), scale.astype(np.float32))

    @property
    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """``(mean, scale)``: what :func:`apply` takes (``log1p`` is the spec's, a compile-time constant)."""
        return self.mean, self.scale


def _dense(key: jax.Array, n_in: int, n_out: int, gain: float) -> tuple[jax.Array, jax.Array]:
    w = jax.random.normal(key, (n_in, n_out), jnp.float32) * jnp.sqrt(gain / n_in)
    return w, jnp.zeros((n_out,), jnp.float32)


def init_params(spec: NetworkSpec, key: jax.Array) -> dict[str, jax.Array]:
    """Fresh parameters for ``spec`` from the PRNG ``key`` (see the module docstring for the scheme)."""
    params: dict[str, jax.Array] = {}
    keys = iter(jax.random.split(key, 2 + len(spec.hidden_units) + 6 * spec.attention_layers))
    width = spec.n_features
    for i, units in enumerate(spec.hidden_units):
        params[f"dense_{i}.w"], params[f"dense_{i}.b"] = _dense(next(keys), width, units, 2.0)
        width = units
    if spec.scorer == "attention":
        for layer in range(spec.attention_layers):
            p = f"block_{layer}"
            for name in ("q", "k", "v", "o"):
                params[f"{p}.{name}.w"], params[f"{p}.{name}.b"] = _dense(next(keys), width, width, 1.0)
            params[f"{p}.ff1.w"], params[f"{p}.ff1.b"] = _dense(next(keys), width, 2 * width, 2.0)
            params[f"{p}.ff2.w"], params[f"{p}.ff2.b"] = _dense(next(keys), 2 * width, width, 1.0)
            for norm in ("ln1", "ln2"):
                params[f"{p}.{norm}.g"] = jnp.ones((width,), jnp.float32)
                params[f"{p}.{norm}.b"] = jnp.zeros((width,), jnp.float32)
    params["out.w"], params["out.b"] = _dense(next(keys), width, 1, 1.0)
    return params


def expected_shapes(spec: NetworkSpec) -> dict[str, tuple[int, ...]]:
    """Every parameter's shape for ``spec`` (a saved file is checked against it before use)."""
    shapes = jax.eval_shape(lambda key: init_params(spec, key), jax.random.PRNGKey(0))
    return {name: tuple(value.shape) for name, value in shapes.items()}


def _embed(params: dict[str, jax.Array], spec: NetworkSpec, z: jax.Array, key: jax.Array | None) -> jax.Array:
    h = z
    for i in range(len(spec.hidden_units)):
        h = jax.nn.relu(h @ params[f"dense_{i}.w"] + params[f"dense_{i}.b"])
        if key is not None and spec.dropout > 0:
            key, sub = jax.random.split(key)
            keep = jax.random.bernoulli(sub, 1.0 - spec.dropout, h.shape)
            h = jnp.where(keep, h / (1.0 - spec.dropout), 0.0)
    return h


def _layer_norm(h: jax.Array, gain: jax.Array, bias: jax.Array) -> jax.Array:
    mean = jnp.mean(h, axis=-1, keepdims=True)
    var = jnp.mean((h - mean) ** 2, axis=-1, keepdims=True)
    return (h - mean) / jnp.sqrt(var + LAYER_NORM_EPS) * gain + bias


def _self_attention(
    params: dict[str, jax.Array], p: str, h: jax.Array, mask: jax.Array, heads: int
) -> jax.Array:
    """Multi-head self-attention within each list; padded documents are never attended to."""
    *lead, length, width = h.shape
    d = width // heads

    def project(name: str) -> jax.Array:
        out = h @ params[f"{p}.{name}.w"] + params[f"{p}.{name}.b"]
        return out.reshape(*lead, length, heads, d)

    q, k, v = project("q"), project("k"), project("v")
    logits = jnp.einsum("...qhd,...khd->...hqk", q, k) / jnp.sqrt(jnp.float32(d))
    logits = jnp.where(mask[..., None, None, :], logits, jnp.float32(-1e30))
    attended = jnp.einsum("...hqk,...khd->...qhd", jax.nn.softmax(logits, axis=-1), v)
    return attended.reshape(*lead, length, width) @ params[f"{p}.o.w"] + params[f"{p}.o.b"]


def apply(
    params: dict[str, jax.Array],
    spec: NetworkSpec,
    transform: tuple[jax.Array, jax.Array],
    x: jax.Array,
    mask: jax.Array,
    key: jax.Array | None = None,
) -> jax.Array:
    """Scores ``[B, L]`` of the padded lists ``x[B, L, F]`` (``mask``: real documents); ``key``: dropout on.

    ``transform`` is the fitted ``(mean, scale)`` (:attr:`Standardise.arrays`); the MLP also scores
    rows without lists (``x[N, F]``, any ``mask``).
    """
    mean, scale = transform
    if spec.log1p:
        x = jnp.sign(x) * jnp.log1p(jnp.abs(x))
    h = _embed(params, spec, (x - mean) / scale, key)
    if spec.scorer == "attention":
        for layer in range(spec.attention_layers):
            p = f"block_{layer}"
            h = _layer_norm(
                h + _self_attention(params, p, h, mask, spec.attention_heads),
                params[f"{p}.ln1.g"],
                params[f"{p}.ln1.b"],
            )
            ff = (
                jax.nn.relu(h @ params[f"{p}.ff1.w"] + params[f"{p}.ff1.b"]) @ params[f"{p}.ff2.w"]
                + params[f"{p}.ff2.b"]
            )
            h = _layer_norm(h + ff, params[f"{p}.ln2.g"], params[f"{p}.ln2.b"])
    return (h @ params["out.w"])[..., 0] + params["out.b"][0]
