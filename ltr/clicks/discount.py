"""The discount your users imply: discount families fitted to examination by position, and compared.

NDCG's discount D(r) is a user model: how much attention rank r gets, relative to rank 1. A click log
measures it, so the choice of discount can be tested instead of assumed. Two kinds of input:

* **counts**: clicks k_r out of n_r impressions at position r, from a log in which relevance does not
  depend on position (a randomised log, e.g. RandTop-n). Model: k_r ~ Binomial(n_r, c·D(r)), c the
  click probability at position 1 (fitted too). Log-likelihood
  ℓ = Σ_r k_r·log(c·D(r)) + (n_r − k_r)·log(1 − c·D(r)).
* **examination estimates** θ_r (relative to θ_1 = 1) with a CI, as ``python -m ltr.clicks propensity
  --output`` writes them from any log its estimators can de-bias. Model (normal approximation):
  θ̂_r ~ Normal(D(r), s_r²), s_r = (CI width) / (2·z), z the normal quantile of the CI's level. Position 1
  is the reference and is not fitted; a position without a CI carries no weight and is left out.

The families (each has D(1) = 1; the ``eval.conventions`` that make a metric use the fitted curve are
in :attr:`DiscountFit.conventions`):

==========  ==========================  ===============  ==========================================
family      D(r)                        parameter        eval.conventions
==========  ==========================  ===============  ==========================================
log2        1 / log2(r + 1)             (none)           discount=log2 (ltr's default)
log         log(1 + a) / log(r + a)     offset a > 0     discount=log, discount_base=1+a, discount_offset=a
letor       1 (r ≤ 2), 1 / log2(r)      (none)           the LETOR 4.0 script's step (the letor preset)
jarvelin    min(1, log b / log r)       base b > 1       discount=log, base b, offset 0, flat ranks ⌊b⌋
power       r^−η                        exponent η ≥ 0   discount=power, discount_exponent=η
geometric   p^(r − 1)                   0 < p ≤ 1        discount=geometric, discount_persistence=p
linear      max(0, 1 − s·(r − 1))       0 ≤ s < 1        discount=linear, discount_slope=s
==========  ==========================  ===============  ==========================================

Each family is fitted by maximum likelihood: its parameter by the profile likelihood (a grid refined by
Brent's method), c inside (Brent's method; ℓ is concave in c). The parameter gets a profile-likelihood
CI, {θ : 2·(ℓ̂ − ℓ_profile(θ)) ≤ χ²₁(confidence)}. AIC = 2k − 2ℓ̂ (k counts c) ranks the families; the
deviance against the saturated model (one free value per position) gives a χ² goodness-of-fit p-value
on m − k degrees of freedom. The best family has the lowest AIC (on a tie: fewer parameters).

Segments (device, query class, any column of the log): every family is fitted per segment, and the
likelihood-ratio test of :func:`segment_test` says whether the segments' curves differ: one parameter for
all segments (each with its own c) against one per segment, G = 2·(Σ_s ℓ̂_s − ℓ̂_shared), df = S − 1.

The textbook example, positions 1–3 clicked 120, 60 and 30 times out of 200 impressions each (a
randomised log): click rates 0.6, 0.3, 0.15, halving at each position, which is exactly the geometric
user with p = 0.5 and c = 0.6:

>>> counts = PositionCounts.of([1, 2, 3], [120, 60, 30], [200, 200, 200])
>>> fit = fit_discounts(counts)
>>> fit.best.family, round(fit.best.params["p"], 6), round(fit.best.scale, 6)
('geometric', 0.5, 0.6)
>>> fit.best.overrides()  # for ltr.train / ltr.compare: metrics that use this curve
'eval.conventions.discount=geometric eval.conventions.discount_persistence=0.5'
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ltr.clicks.logs import PARQUET_SUFFIXES, read_click_log, read_position_counts
from ltr.core.errors import DataError

#: how many grid points the profile likelihood of a family's parameter is searched on before Brent
GRID_POINTS = 241


@dataclass(frozen=True)
class Family:
    """A discount family: D(r; θ) with D(1) = 1 and at most one parameter θ in [low, high]."""

    name: str
    formula: str
    parameter: str | None  # the parameter's name (None: a fixed curve)
    low: float = 0.0
    high: float = 0.0
    log_grid: bool = False  # search the parameter on a log scale
    curve: Callable[[np.ndarray, float], np.ndarray] = field(repr=False, default=lambda r, t: r * 0.0)
    as_conventions: Callable[[float], dict[str, Any]] = field(repr=False, default=lambda t: {})

    def discounts(self, positions: np.ndarray, theta: float = math.nan) -> np.ndarray:
        """D(r) at 1-based ``positions``."""
        return self.curve(np.asarray(positions, dtype=np.float64), theta)


def _log_offset(r: np.ndarray, a: float) -> np.ndarray:
    return np.log1p(a) / np.log(r + a)


def _jarvelin(r: np.ndarray, b: float) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.minimum(1.0, math.log(b) / np.log(r))  # log 1 = 0: rank 1 gets 1


FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family(
            "log2", "1/log2(r+1)", None, curve=lambda r, t: 1.0 / np.log2(r + 1.0),
            as_conventions=lambda t: {"discount": "log2"},
        ),
        Family(
            "log", "log(1+a)/log(r+a)", "a", 1e-3, 1e3, True, _log_offset,
            lambda a: {"discount": "log", "discount_base": 1.0 + a, "discount_offset": a},
        ),
        Family(
            "letor", "1 for r<=2, else 1/log2(r)", None, curve=lambda r, t: _jarvelin(r, 2.0),
            as_conventions=lambda t: {
                "discount": "log", "discount_base": 2.0, "discount_offset": 0.0, "discount_flat_ranks": 2,
            },
        ),
        Family(
            "jarvelin", "min(1, log(b)/log(r))", "b", 1.0 + 1e-6, 1e3, True, _jarvelin,
            lambda b: {
                "discount": "log", "discount_base": b, "discount_offset": 0.0,
                "discount_flat_ranks": math.floor(b),
            },
        ),
        Family(
            "power", "r^-eta", "eta", 0.0, 10.0, False, lambda r, eta: r**-eta,
            lambda eta: {"discount": "power", "discount_exponent": eta},
        ),
        Family(
            "geometric", "p^(r-1)", "p", 1e-6, 1.0, False, lambda r, p: p ** (r - 1.0),
            lambda p: {"discount": "geometric", "discount_persistence": p},
        ),
        Family(
            "linear", "max(0, 1-s*(r-1))", "s", 0.0, 1.0 - 1e-9, False,
            lambda r, s: np.maximum(0.0, 1.0 - s * (r - 1.0)),
            lambda s: {"discount": "linear", "discount_slope": s},
        ),
    )
}  # fmt: skip


# --- inputs ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PositionCounts:
    """Clicks and impressions per 1-based position (one segment), from a randomised log."""

    position: np.ndarray
    clicks: np.ndarray
    impressions: np.ndarray
    source: str = "counts"

    @classmethod
    def of(
        cls,
        position: Sequence[int],
        clicks: Sequence[float],
        impressions: Sequence[float],
        source: str = "counts",
    ) -> PositionCounts:
        """Checked counts: positions ≥ 1 and distinct (sorted here), 0 ≤ clicks ≤ impressions, some
        clicks and some non-clicks, at least two positions with impressions.

        >>> PositionCounts.of([2, 1], [5, 9], [10, 10]).position.tolist()
        [1, 2]
        """
        pos = np.asarray(position, dtype=np.int64)
        k = np.asarray(clicks, dtype=np.float64)
        n = np.asarray(impressions, dtype=np.float64)
        order = np.argsort(pos, kind="stable")
        pos, k, n = pos[order], k[order], n[order]
        if pos.size and pos[0] < 1:
            raise DataError(f"{source}: position {pos[0]} (positions are 1-based)")
        if np.any(np.diff(pos) == 0):
            raise DataError(f"{source}: position {pos[np.flatnonzero(np.diff(pos) == 0)[0]]} is given twice")
        bad = (k < 0) | (n < 0) | (k > n) | ~np.isfinite(k) | ~np.isfinite(n)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise DataError(
                f"{source}: position {pos[i]} has {k[i]:g} clicks out of {n[i]:g} impressions "
                "(need 0 <= clicks <= impressions)"
            )
        seen = n > 0
        if seen.sum() < 2:
            raise DataError(
                f"{source}: impressions at {int(seen.sum())} position(s); a discount needs at least two"
            )
        if k.sum() == 0 or (n - k).sum() == 0:
            which = "no clicks" if k.sum() == 0 else "no non-clicks"
            raise DataError(f"{source}: {which} at any position: the counts cannot identify examination")
        return cls(pos[seen], k[seen], n[seen], source)

    def pooled_with(self, other: PositionCounts) -> PositionCounts:
        """The two segments' counts added position by position."""
        pos = np.union1d(self.position, other.position)
        k, n = np.zeros(pos.size), np.zeros(pos.size)
        for part in (self, other):
            at = np.searchsorted(pos, part.position)
            k[at] += part.clicks
            n[at] += part.impressions
        return PositionCounts(pos, k, n, self.source)


@dataclass(frozen=True)
class ExaminationEstimates:
    """Examination relative to position 1, with each position's standard error (from its CI)."""

    position: np.ndarray
    examination: np.ndarray
    se: np.ndarray  # NaN or 0: no CI, left out of the fit
    source: str = "propensities"
    confidence: float = 0.95

    @classmethod
    def from_json(cls, data: Mapping[str, Any], source: str) -> ExaminationEstimates:
        """From ``ltr.clicks propensity --json``: ``position``, ``examination``, ``ci_low``, ``ci_high``
        and ``confidence`` (0.95 when absent)."""
        from scipy.stats import norm  # deferred: scipy.stats loads in ~0.5 s

        keys = ("position", "examination", "ci_low", "ci_high")
        if not isinstance(data, Mapping) or not all(isinstance(data.get(k), list) for k in keys):
            raise DataError(
                f"{source}: needs the lists {', '.join(keys)} (python -m ltr.clicks propensity --json)"
            )
        lengths = {len(data[k]) for k in keys}
        if len(lengths) != 1:
            raise DataError(f"{source}: {', '.join(keys)} must have the same length")
        confidence = data.get("confidence", 0.95)
        if not isinstance(confidence, int | float) or not 0 < confidence < 1:
            raise DataError(f"{source}: confidence must be a number in (0, 1), got {confidence!r}")

        def numbers(key: str) -> np.ndarray:
            values = data[key]
            if not all(v is None or (isinstance(v, int | float) and not isinstance(v, bool)) for v in values):
                raise DataError(f"{source}: every {key} value must be a number or null")
            return np.array([np.nan if v is None else v for v in values], dtype=np.float64)

        pos, theta, low, high = (numbers(k) for k in keys)
        if list(pos) != list(range(1, len(pos) + 1)):
            raise DataError(f"{source}: position must be 1, 2, …, {len(pos)} in order")
        if not np.all(np.isfinite(theta) & (theta > 0)):
            raise DataError(f"{source}: every examination value must be a finite number > 0")
        se = (high - low) / (2.0 * norm.ppf(0.5 + confidence / 2.0))
        usable = np.isfinite(se) & (se > 0) & (pos > 1)
        if usable.sum() < 1:
            raise DataError(f"{source}: no position after the first has a CI; nothing to fit a discount to")
        return cls(pos.astype(np.int64), theta, se, source, float(confidence))


# --- likelihoods -------------------------------------------------------------------------------------------
def _binomial(counts: PositionCounts, d: np.ndarray) -> tuple[float, float]:
    """(max over c of ℓ(c), the maximising c) for discounts ``d``: ℓ is concave in c on (0, 1/max d]."""
    from scipy.optimize import minimize_scalar  # deferred: scipy.optimize loads in ~0.3 s
    from scipy.special import xlog1py, xlogy  # deferred: as above

    k, n = counts.clicks, counts.impressions
    if np.any((d <= 0) & (k > 0)):
        return -math.inf, math.nan  # clicks where the curve says nobody looks

    def loglik(c: float) -> float:
        p = np.minimum(c * d, 1.0)
        return float(np.sum(xlogy(k, p) + xlog1py(n - k, -p)))

    top = 1.0 / float(d.max())
    best = minimize_scalar(
        lambda c: -loglik(c), bounds=(1e-12, top), method="bounded", options={"xatol": 1e-12}
    )
    c = float(best.x)
    value = loglik(c)
    if loglik(top) >= value:  # the maximum on the boundary (every impression at position 1 clicked)
        c, value = top, loglik(top)
    return value, c


def _saturated_binomial(counts: PositionCounts) -> float:
    from scipy.special import xlog1py, xlogy  # deferred: scipy loads in ~0.3 s

    k, n = counts.clicks, counts.impressions
    p = k / n
    return float(np.sum(xlogy(k, p) + xlog1py(n - k, -p)))


def _gaussian(est: ExaminationEstimates, d: np.ndarray) -> tuple[float, float]:
    use = np.isfinite(est.se) & (est.se > 0) & (est.position > 1)
    z = (est.examination[use] - d[use]) / est.se[use]
    return float(-0.5 * np.sum(z**2) - np.sum(np.log(est.se[use] * math.sqrt(2 * math.pi)))), 1.0


def _saturated_gaussian(est: ExaminationEstimates) -> float:
    use = np.isfinite(est.se) & (est.se > 0) & (est.position > 1)
    return float(-np.sum(np.log(est.se[use] * math.sqrt(2 * math.pi))))


# --- fits ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FamilyFit:
    """One family fitted to one input."""

    family: str
    formula: str
    params: dict[str, float]  # the family's parameter (empty for a fixed curve)
    ci: dict[str, tuple[float, float]]  # its profile-likelihood CI
    scale: float  # c: the click probability at position 1 (counts); 1 for examination estimates
    log_likelihood: float
    n_params: int  # k: the family's parameter and c (counts)
    aic: float
    deviance: float  # 2·(ℓ_saturated − ℓ̂)
    df: int  # positions − k
    p_value: float  # χ² goodness of fit (NaN when df = 0)
    conventions: dict[str, Any]  # the eval.conventions that make a metric use this curve

    def as_json(self) -> dict[str, Any]:
        return {
            "family": self.family,
            "formula": self.formula,
            "params": self.params,
            "ci": {name: list(bounds) for name, bounds in self.ci.items()},
            "scale": self.scale,
            "log_likelihood": self.log_likelihood,
            "n_params": self.n_params,
            "aic": self.aic,
            "deviance": self.deviance,
            "df": self.df,
            "p_value": None if math.isnan(self.p_value) else self.p_value,
            "conventions": self.conventions,
        }

    def overrides(self) -> str:
        """The ``ltr.train`` / ``ltr.compare`` overrides for :attr:`conventions`.

        >>> fit_discounts(PositionCounts.of([1, 2, 3], [120, 60, 30], [200] * 3)).best.overrides()
        'eval.conventions.discount=geometric eval.conventions.discount_persistence=0.5'
        """
        return " ".join(f"eval.conventions.{k}={_short(v)}" for k, v in self.conventions.items())


def _short(value: Any) -> str:
    return f"{value:.6g}" if isinstance(value, float) else str(value)


Data = PositionCounts | ExaminationEstimates


def _profile(data: Data, family: Family, theta: float) -> tuple[float, float]:
    d = family.discounts(data.position, theta)
    return _binomial(data, d) if isinstance(data, PositionCounts) else _gaussian(data, d)


def _argmax(objective: Callable[[float], float], family: Family) -> float:
    """The parameter in [family.low, family.high] that maximises ``objective``: the best of a grid
    (log-spaced when ``family.log_grid``), refined by Brent's method between its neighbours."""
    from scipy.optimize import minimize_scalar  # deferred: scipy.optimize loads in ~0.3 s

    lo, hi = family.low, family.high
    grid = np.geomspace(lo, hi, GRID_POINTS) if family.log_grid else np.linspace(lo, hi, GRID_POINTS)
    values = np.array([objective(float(t)) for t in grid])
    i = int(np.argmax(values))
    left, right = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
    refined = minimize_scalar(
        lambda t: -objective(t), bounds=(left, right), method="bounded", options={"xatol": 1e-10}
    )
    return float(refined.x) if -refined.fun >= values[i] else float(grid[i])


def fit_family(data: Data, family: Family, *, confidence: float = 0.95) -> FamilyFit:
    """``family`` fitted to ``data`` by maximum likelihood (module docstring).

    >>> counts = PositionCounts.of([1, 2, 3], [120, 60, 30], [200] * 3)
    >>> f = fit_family(counts, FAMILIES["power"])
    >>> f.family, f.n_params, f.df, f.aic > fit_family(counts, FAMILIES["geometric"]).aic
    ('power', 2, 1, True)
    """
    from scipy.optimize import brentq  # deferred: scipy.optimize loads in ~0.3 s
    from scipy.stats import chi2  # deferred: scipy.stats loads in ~0.5 s

    counts = isinstance(data, PositionCounts)
    if family.parameter is None:
        value, scale = _profile(data, family, math.nan)
        params: dict[str, float] = {}
        ci: dict[str, tuple[float, float]] = {}
        theta = math.nan
    else:
        lo, hi = family.low, family.high
        theta = _argmax(lambda t: _profile(data, family, t)[0], family)
        value, scale = _profile(data, family, theta)
        cut = value - chi2.ppf(confidence, 1) / 2.0

        def gap(t: float) -> float:
            return _profile(data, family, t)[0] - cut

        def bound(edge: float) -> float:
            if not gap(edge) < 0:
                return edge  # the likelihood stays within the CI up to the range's end
            return float(brentq(gap, min(edge, theta), max(edge, theta), xtol=1e-10))

        params = {family.parameter: theta}
        ci = {family.parameter: (bound(lo), bound(hi))}
    n_params = (1 if family.parameter else 0) + (1 if counts else 0)
    saturated = _saturated_binomial(data) if counts else _saturated_gaussian(data)
    m = (
        data.position.size
        if counts
        else int((np.isfinite(data.se) & (data.se > 0) & (data.position > 1)).sum())
    )
    deviance = max(2.0 * (saturated - value), 0.0)
    df = m - n_params
    p_value = float(chi2.sf(deviance, df)) if df > 0 and math.isfinite(deviance) else math.nan
    return FamilyFit(
        family=family.name,
        formula=family.formula,
        params=params,
        ci=ci,
        scale=scale if counts else 1.0,
        log_likelihood=value,
        n_params=n_params,
        aic=2.0 * n_params - 2.0 * value,
        deviance=deviance,
        df=df,
        p_value=p_value,
        conventions=family.as_conventions(theta),
    )


@dataclass(frozen=True)
class DiscountFit:
    """Every family fitted to one input, best first by AIC."""

    families: tuple[FamilyFit, ...]
    data: Data

    @property
    def best(self) -> FamilyFit:
        return self.families[0]

    def as_json(self) -> dict[str, Any]:
        data = self.data
        observed: dict[str, Any] = {"position": [int(p) for p in data.position]}
        if isinstance(data, PositionCounts):
            observed |= {"clicks": data.clicks.tolist(), "impressions": data.impressions.tolist()}
        else:
            observed |= {"examination": data.examination.tolist(), "se": [_finite(v) for v in data.se]}
        return {
            "best": {"family": self.best.family, "params": self.best.params},
            "families": [f.as_json() for f in self.families],
            "observed": observed,
        }


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def fit_discounts(
    data: Data, *, families: Sequence[str] | None = None, confidence: float = 0.95
) -> DiscountFit:
    """Every family in ``families`` (default: all of :data:`FAMILIES`) fitted to ``data``, best first.

    >>> fit = fit_discounts(PositionCounts.of([1, 2, 3], [120, 60, 30], [200] * 3))
    >>> log2 = next(f for f in fit.families if f.family == "log2")  # NDCG's default: rejected here
    >>> fit.best.family, fit.best.deviance < 1e-9, log2.p_value < 1e-3
    ('geometric', True, True)
    """
    names = list(FAMILIES) if families is None else list(dict.fromkeys(families))
    unknown = [name for name in names if name not in FAMILIES]
    if unknown:
        raise DataError(f"unknown discount family {unknown[0]!r}; families: {', '.join(FAMILIES)}")
    fits = [fit_family(data, FAMILIES[name], confidence=confidence) for name in names]
    fits.sort(key=lambda f: (f.aic, f.n_params))
    return DiscountFit(tuple(fits), data)


# --- segments --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SegmentTest:
    """Do the segments' users examine differently? One family's parameter shared by every segment (each
    segment keeps its own click rate c) against one parameter per segment: a likelihood-ratio test."""

    family: str
    statistic: float  # G = 2·(Σ_s ℓ̂_s − ℓ̂_shared)
    df: int  # S − 1 (one parameter per segment instead of one for all)
    p_value: float
    by_segment: dict[str, FamilyFit]
    shared: dict[str, float]  # the parameter every segment shares under the null
    shared_log_likelihood: float

    def as_json(self) -> dict[str, Any]:
        return {
            "family": self.family,
            "statistic": self.statistic,
            "df": self.df,
            "p_value": self.p_value,
            "shared": self.shared,
            "by_segment": {name: fit.as_json() for name, fit in self.by_segment.items()},
        }


def segment_test(
    segments: Mapping[str, PositionCounts], family: str, *, confidence: float = 0.95
) -> SegmentTest:
    """Fit ``family`` to each segment, and with one parameter for all (each segment's own c): the
    likelihood-ratio test of that shared curve, G = 2·(Σ_s ℓ̂_s − max_θ Σ_s ℓ_s(θ)), χ² on S − 1 df. The
    segments' click rates at position 1 may differ (their queries and documents do); only the shape of
    the discount is tested.

    >>> a = PositionCounts.of([1, 2, 3], [120, 60, 30], [200] * 3)
    >>> b = PositionCounts.of([1, 2, 3], [100, 80, 64], [200] * 3)
    >>> t = segment_test({"desktop": a, "mobile": b}, "geometric")
    >>> t.df, t.p_value < 1e-4, round(t.by_segment["desktop"].params["p"], 3), round(t.by_segment["mobile"].params["p"], 3)
    (1, True, 0.5, 0.8)
    """
    from scipy.stats import chi2  # deferred: scipy.stats loads in ~0.5 s

    if len(segments) < 2:
        raise DataError(f"segments: {len(segments)} segment(s) given; comparing curves needs at least two")
    chosen = FAMILIES[family]
    if chosen.parameter is None:
        raise DataError(f"the {family} discount has no parameter: nothing differs between segments but c")
    by_segment = {name: fit_family(c, chosen, confidence=confidence) for name, c in segments.items()}

    def shared(theta: float) -> float:
        return sum(_profile(c, chosen, theta)[0] for c in segments.values())

    theta = _argmax(shared, chosen)
    value = shared(theta)
    statistic = max(2.0 * (sum(f.log_likelihood for f in by_segment.values()) - value), 0.0)
    df = len(segments) - 1
    return SegmentTest(
        family, statistic, df, float(chi2.sf(statistic, df)), by_segment, {chosen.parameter: theta}, value
    )


# --- files ---------------------------------------------------------------------------------------------------
def read_discount_input(path: str | Path, *, segment: str | None = None) -> dict[str, Data]:
    """What ``python -m ltr.clicks discount PATH`` fits, by segment (``""``: no segments):

    * a JSON file from ``ltr.clicks propensity --output`` → :class:`ExaminationEstimates`;
    * a CSV / Parquet click log (``session, qid, doc, position, click``) → clicks and impressions per
      position, pooled or per value of its column ``segment`` (a randomised log: see the module docstring);
    * any other file: ``position clicks impressions [segment]`` lines
      (:func:`ltr.clicks.logs.read_position_counts`); ``segment`` is then not needed (the fourth field).
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: {'is a folder, not a file' if path.is_dir() else 'no such file'}")
    suffix = path.suffix.lower()
    if suffix == ".json":
        if segment is not None:
            raise DataError(f"--segment applies to a click log, not to the propensity file {path}")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise DataError(f"{path}: not a JSON propensity file ({exc})") from exc
        return {"": ExaminationEstimates.from_json(data, str(path))}
    if suffix in (".csv", *PARQUET_SUFFIXES):
        return _log_counts(path, segment)
    if segment is not None:
        raise DataError(
            f"--segment applies to a click log; in a counts file {path} the segment is the 4th field"
        )
    return {
        name: PositionCounts.of(*columns, source=f"{path}" + (f" (segment {name})" if name else ""))
        for name, columns in read_position_counts(path).items()
    }


def _log_counts(path: Path, segment: str | None) -> dict[str, Data]:
    """Clicks and impressions per position of a click log, per value of its column ``segment``."""
    log = read_click_log(path)
    if segment is None:
        labels = np.zeros(log.position.size, dtype=object)
    else:
        import pandas as pd  # deferred: pandas loads only when a click log file is read

        if path.suffix.lower() in PARQUET_SUFFIXES:
            frame = pd.read_parquet(path)
        else:
            frame = pd.read_csv(path, dtype=str, keep_default_na=False, skipinitialspace=True)
        frame.columns = [str(c).strip() for c in frame.columns]
        if segment not in frame.columns:
            raise DataError(
                f"{path}: --segment {segment}: no such column (columns: {', '.join(frame.columns)})"
            )
        labels = frame[segment].astype(str).str.strip().to_numpy(dtype=object)
        blank = np.flatnonzero((labels == "") | (labels == "nan"))
        if blank.size:
            raise DataError(
                f"{path}: --segment {segment}: data row {int(blank[0]) + 1} has no value ({blank.size} rows); "
                "every impression needs its segment"
            )
    out: dict[str, Data] = {}
    for name in dict.fromkeys(labels):  # first-seen order
        rows = labels == name
        pos = log.position[rows]
        top = int(pos.max())
        clicks = np.bincount(pos, weights=log.click[rows], minlength=top + 1)[1:]
        shown = np.bincount(pos, minlength=top + 1)[1:].astype(np.float64)
        where = f"{path}" + (f" (segment {segment}={name})" if segment is not None else "")
        out["" if segment is None else str(name)] = PositionCounts.of(
            np.arange(1, top + 1), clicks, shown, where
        )
    return out
