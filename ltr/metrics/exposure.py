"""Expected exposure of stochastic rankings, and the exposure gap between two groups of documents.

A user who browses a ranking gives the document at rank i the attention D(i): the discount of a browsing
model (:class:`~ltr.metrics.conventions.Conventions`; by default rank-biased precision's user with
patience p = 0.5, D(i) = 0.5^(i−1), as Diaz et al. use; a discount fitted to a click log by
``python -m ltr.clicks discount`` works the same way). A ranker that samples its rankings from a
Plackett-Luce distribution over its scores s/τ (temperature τ; drawn by sorting s/τ + Gumbel noise)
spreads that attention. Per query (Diaz, Mitra, Ekstrand, Biega & Carterette, CIKM 2020):

* the **expected exposure** of document d: ε_d = E_σ[D(rank_σ(d))], the mean over ``samples`` rankings;
* the **target exposure** ε*_d: what an ideal stochastic ranker gives, ranking by label with equal labels
  in random order, so every document of grade g gets the mean of D over the ranks grade g occupies;
* **EE-L** = ‖ε − ε*‖² (lower is better), **EE-D** = ‖ε‖² (disparity: lower spreads attention more
  equally), **EE-R** = 2·ε·ε* (relevance: higher is better), with EE-L = EE-D − EE-R + ‖ε*‖².

With documents split into two groups (a feature above a threshold, a sidecar file), the **exposure
gap** of a query is the mean ε of group A minus the mean ε of group B (NaN when a group is empty there).

Worked example, deterministic ranker (τ → 0: ``temperature=0``), D(i) = 0.5^(i−1), labels (1, 0, 1) ranked
in that order: ε = (1, 0.5, 0.25); the ideal ranks the two relevant documents 1–2 in random order, so
ε* = (0.75, 0.25, 0.75); EE-L = 0.0625 + 0.0625 + 0.25 = 0.375, EE-D = 1.3125, EE-R = 2·(0.75 + 0.125 +
0.1875) = 2.125.

>>> v = expected_exposure([1, 0, 1], [3.0, 2.0, 1.0], [0, 3], temperature=0.0)
>>> [round(float(v[m][0]), 4) for m in ("ee_l", "ee_d", "ee_r")]
[0.375, 1.3125, 2.125]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ltr.core.config_check import setting
from ltr.core.errors import ConfigError, MetricError
from ltr.metrics.conventions import Conventions, resolve_conventions


@dataclass
class ExposureConfig:
    """The ``exposure:`` block of an ``ltr.compare`` experiment: EE-L, EE-D, EE-R (and the exposure gap with a
    ``group``) of every system's test rankings, compared like the other metrics."""

    temperature: float = setting(1.0, low=0.0)  # Plackett-Luce over scores / temperature (0: deterministic)
    samples: int = setting(100, low=1)  # rankings sampled per query
    persistence: float = setting(
        0.5, low=0.0, high=1.0, open_low=True, open_high=True
    )  # RBP patience p in (0, 1)
    group: str | None = setting(None)  # FEATURE>VALUE: the exposure gap of those documents vs the rest
    seed: int = setting(0, low=0)


def exposure_metrics(cfg: Any) -> list[str]:
    """The measures an ``exposure:`` block adds (``exposure_gap`` only with a group).

    >>> exposure_metrics({"group": "3>0.5"})
    ['ee_l', 'ee_d', 'ee_r', 'exposure_gap']
    """
    return [*EXPOSURE_MEASURES, *(("exposure_gap",) if cfg.get("group") else ())]


def exposure_of(data: Any, scores: ArrayLike, cfg: Any) -> dict[str, np.ndarray]:
    """:func:`expected_exposure` of one system's ``scores`` on ``data`` (a RankingData) as an ``exposure:``
    block says."""
    return expected_exposure(
        data.y, scores, data.offsets,
        browsing=Conventions(discount="geometric", discount_persistence=float(cfg["persistence"])),
        temperature=float(cfg["temperature"]), samples=int(cfg["samples"]), seed=int(cfg["seed"]),
        groups=document_groups(data.X, str(cfg["group"])) if cfg.get("group") else None,
    )  # fmt: skip


#: the browsing model of Diaz et al.: rank-biased precision's user with patience 0.5
DEFAULT_BROWSING = Conventions(discount="geometric", discount_persistence=0.5)
EXPOSURE_MEASURES = ("ee_l", "ee_d", "ee_r")
LOWER_IS_BETTER = ("ee_l", "ee_d")


def target_exposure(labels: np.ndarray, discounts: np.ndarray) -> np.ndarray:
    """ε* of one query's documents: each gets the mean of D over the ranks its grade takes in the ideal order.

    >>> target_exposure(np.array([1, 0, 1]), np.array([1.0, 0.5, 0.25])).tolist()
    [0.75, 0.25, 0.75]
    """
    order = np.argsort(-labels, kind="stable")
    out = np.empty(labels.size)
    grades, start = labels[order], 0
    while start < labels.size:
        end = start + int(np.sum(grades[start:] == grades[start]))
        out[order[start:end]] = discounts[start:end].mean()
        start = end
    return out


def sampled_exposure(
    scores: np.ndarray, discounts: np.ndarray, *, temperature: float, samples: int, rng: np.random.Generator
) -> np.ndarray:
    """ε of one query's documents: the mean D(rank) over ``samples`` Plackett-Luce rankings of scores/τ
    (Gumbel-max sampling); ``temperature=0``: the deterministic ranking (ties in input order)."""
    n = scores.size
    if temperature == 0:
        order = np.argsort(-scores, kind="stable")
        out = np.empty(n)
        out[order] = discounts[:n]
        return out
    keys = scores / temperature + rng.gumbel(size=(samples, n))
    order = np.argsort(-keys, axis=1)
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(n)[None, :].repeat(samples, axis=0), axis=1)
    return discounts[ranks].mean(axis=0)


def expected_exposure(
    labels: ArrayLike,
    scores: ArrayLike,
    offsets: ArrayLike,
    *,
    browsing: Conventions | str = DEFAULT_BROWSING,
    k: int | None = None,
    temperature: float = 1.0,
    samples: int = 100,
    seed: int = 0,
    groups: ArrayLike | None = None,
    **overrides: Any,
) -> dict[str, np.ndarray]:
    """Per query: ``ee_l``, ``ee_d``, ``ee_r`` (module docstring) and, with ``groups`` (a boolean per
    document: group A), ``exposure_gap``. ``browsing``: the discount's conventions (a preset name with
    ``overrides``, e.g. ``"ltr", discount="power", discount_exponent=0.7``); ``k``: D = 0 below rank k."""
    y = np.asarray(labels, dtype=np.float64)
    s = np.asarray(scores, dtype=np.float64)
    off = np.asarray(offsets, dtype=np.int64)
    if y.shape != s.shape or y.ndim != 1 or off.ndim != 1 or off.size < 1 or off[0] != 0 or off[-1] != y.size:
        raise MetricError(
            f"exposure: labels ({y.size}) and scores ({s.size}) must match the offsets' {off[-1]} rows"
        )
    if np.any(np.diff(off) < 0) or not np.all(np.isfinite(s)):
        raise MetricError("exposure: offsets must not decrease and scores must be finite")
    if not (isinstance(temperature, int | float) and temperature >= 0):
        raise ConfigError(
            f"exposure temperature must be >= 0 (0: the deterministic ranking), got {temperature!r}"
        )
    if not (isinstance(samples, int) and samples >= 1):
        raise ConfigError(f"exposure samples must be an integer >= 1, got {samples!r}")
    c = (
        browsing
        if isinstance(browsing, Conventions) and not overrides
        else resolve_conventions(browsing, **overrides)
    )
    group = None if groups is None else np.asarray(groups, dtype=bool)
    if group is not None and group.shape != y.shape:
        raise MetricError(f"exposure: groups needs one value per document ({y.size}), got {group.size}")
    if group is not None:
        require_both_groups(group, "exposure group: it")
    n_q = off.size - 1
    width = int(np.diff(off).max(initial=1))
    discounts = c.discounts(max(width, 1))
    if k is not None:
        discounts = np.where(np.arange(discounts.size) < k, discounts, 0.0)
    rng = np.random.default_rng(seed)
    out = {
        m: np.full(n_q, np.nan)
        for m in (*EXPOSURE_MEASURES, *(("exposure_gap",) if group is not None else ()))
    }
    for q in range(n_q):
        a, b = off[q], off[q + 1]
        if a == b:
            continue
        eps = sampled_exposure(s[a:b], discounts, temperature=float(temperature), samples=samples, rng=rng)
        target = target_exposure(y[a:b], discounts)
        out["ee_l"][q] = float(np.sum((eps - target) ** 2))
        out["ee_d"][q] = float(np.sum(eps**2))
        out["ee_r"][q] = float(2.0 * np.sum(eps * target))
        if group is not None:
            g = group[a:b]
            if g.any() and (~g).any():
                out["exposure_gap"][q] = float(eps[g].mean() - eps[~g].mean())
    return out


def parse_group(spec: str) -> tuple[int, str, float]:
    """``FEATURE>VALUE`` (1-based feature id; also ``>=``, ``<``, ``<=``, ``==``) as (feature, operator, value).

    >>> parse_group("12>=0.5")
    (12, '>=', 0.5)
    """
    import re

    match = re.fullmatch(r"\s*(\d+)\s*(>=|<=|==|>|<)\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*", spec)
    if match is None:
        raise ConfigError(
            f"exposure group {spec!r}: expected FEATURE>VALUE, e.g. 12>0.5 (also >=, <, <=, ==), or an existing "
            "file of one 1/0 per document"
        )
    return int(match.group(1)), match.group(2), float(match.group(3))


def document_groups(X: Any, spec: str) -> np.ndarray:
    """Group A of every row: ``FEATURE>VALUE`` (:func:`feature_groups`), or a sidecar file with one ``1``/``0``
    (``true``/``false``) per row of the data, in its order. Errors name the file and line.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "groups.txt"
    >>> _ = p.write_text("1\\n0\\n")
    >>> document_groups(np.zeros((2, 1)), str(p)).tolist()
    [True, False]
    """
    from pathlib import Path

    path = Path(spec)
    if not path.is_file():
        return feature_groups(X, spec)
    words = {"1": True, "true": True, "0": False, "false": False}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"exposure group file {path}: cannot read it ({exc})") from exc
    values = []
    for number, line in enumerate(lines, start=1):
        word = line.strip().lower()
        if word not in words:
            raise ConfigError(
                f"{path}:{number}: expected 1 or 0 (true/false) for the document's group, got {line.strip()!r}"
            )
        values.append(words[word])
    if len(values) != X.shape[0]:
        raise ConfigError(
            f"exposure group file {path}: {len(values)} lines for {X.shape[0]} documents (one per row)"
        )
    return np.array(values, dtype=bool)


def require_both_groups(group: np.ndarray, subject: str) -> None:
    """A :class:`ConfigError` (``SUBJECT holds every document of the N; …``) unless ``group`` has members and
    non-members: the exposure gap compares the two.

    >>> require_both_groups(np.array([True, True]), "'1>0'")
    Traceback (most recent call last):
    ...
    ltr.core.errors.ConfigError: '1>0' holds every document of the 2; the gap between groups needs both
    """
    if group.all() or not group.any():
        which = "every document" if group.all() else "no document"
        raise ConfigError(f"{subject} holds {which} of the {group.size}; the gap between groups needs both")


def document_groups_checked(data: Any, spec: str) -> np.ndarray:
    """:func:`document_groups` of a RankingData, refused when the group holds no or every document."""
    group = document_groups(data.X, spec)
    require_both_groups(group, repr(spec))
    return group


def feature_groups(X: Any, spec: str) -> np.ndarray:
    """Group A of every row of ``X`` from ``FEATURE>VALUE`` (:func:`parse_group`).

    >>> feature_groups(np.array([[0.0, 2.0], [1.0, 0.5]]), "2>1").tolist()
    [True, False]
    """
    feature, op, value = parse_group(spec)
    if not 1 <= feature <= X.shape[1]:
        raise ConfigError(f"exposure group {spec!r}: feature {feature} is not in 1..{X.shape[1]}")
    column = X[:, feature - 1]
    column = np.asarray(column.toarray() if hasattr(column, "toarray") else column, dtype=np.float64).ravel()
    compare = {">": np.greater, ">=": np.greater_equal, "<": np.less, "<=": np.less_equal, "==": np.equal}[op]
    return compare(column, value)
