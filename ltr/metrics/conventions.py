"""Metric conventions: every silent setting that makes ranking tools disagree, as one explicit record.

A :class:`Conventions` instance fixes the gain, the discount, how score ties are broken, what a query
without relevant documents scores, and the few denominators on which tools differ. Presets
(:data:`PRESETS`) reproduce each peer tool; :func:`resolve_conventions` applies keyword overrides to a
preset and validates every value, and :func:`describe_conventions` flattens the result into strings
for logging (MLflow params, table footers).

Example
-------
>>> c = resolve_conventions("ltr", ties="stable")
>>> c.gain, c.ties, c.no_relevant
('exp2', 'stable', 'skip')
>>> describe_conventions("trec")["gain"]
'linear'
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from ltr.core.config_check import Constraint, check_value
from ltr.core.errors import MetricError
from ltr.metrics.registry import REGISTRY, parse_metric

GAINS = ("exp2", "linear")
DISCOUNTS = ("log2", "log", "reciprocal", "power", "geometric", "linear")
TIES = ("stable", "pessimistic", "optimistic", "docno_desc", "docno_asc", "average")
NO_RELEVANT = ("zero", "one", "skip")
P_DENOMINATORS = ("k", "min_k_n")
AP_DENOMINATORS = ("R", "min_R_k")
#: Largest label whose exp2 gain 2^l − 1 is finite in float64.
MAX_EXP2_LABEL = 1023


@dataclass(frozen=True)
class Conventions:
    """The conventions in force for one evaluation.

    Attributes
    ----------
    gain : ``"exp2"`` (G(l) = 2^l − 1), ``"linear"`` (G(l) = l) or a tuple table (G(l) = table[l]).
    discount : ``"log2"`` (D(i) = 1/log2(i+1)), ``"log"`` (D(i) = 1/log_b(i+a) with ``discount_base`` b
        and ``discount_offset`` a), ``"reciprocal"`` (D(i) = 1/i), ``"power"`` (D(i) = i^−η with
        ``discount_exponent`` η), ``"geometric"`` (D(i) = p^(i−1), rank-biased precision's user, with
        ``discount_persistence`` p) or ``"linear"`` (D(i) = max(0, 1 − s(i−1)) with ``discount_slope`` s);
        i is the 1-based rank. The last three are the families ``python -m ltr.clicks discount`` fits to
        a click log (:mod:`ltr.clicks.discount`).
    ties : how documents with equal scores are ordered: ``stable`` (input order), ``pessimistic``
        (lower label first), ``optimistic`` (higher label first), ``docno_desc`` / ``docno_asc``
        (by document id), ``average`` (exact expectation over a uniformly random order of each tie group).
    no_relevant : value of a query whose metric normaliser is zero (no relevant document): ``zero``,
        ``one`` or ``skip`` (NaN, counted by :func:`ltr.metrics.mean`). See ``docs/metrics.md`` for
        which metrics take 1 under ``one``.
    p_denominator : P@k divides hits by ``k`` or by ``min_k_n`` = min(k, n).
    ap_denominator : AP(@k) divides by ``R`` (relevant documents) or ``min_R_k`` = min(R, k).
    rel_threshold : a document is relevant for binary metrics (AP, RR, P, R) when label >= this.
    err_gmax : ERR stop probability R(g) = (2^g − 1) / 2^gmax.
    no_relevant_by_metric : per-family exceptions to ``no_relevant``, as ``(family, choice)`` pairs
        (accepts a dict), e.g. CatBoost scores MAP 0 but NDCG 1 on a query without relevant documents.
    default_k : the cutoff of a metric name without ``@k`` (None = the whole list). XGBoost reads a
        bare ``ndcg`` / ``map`` / ``pre`` as cutoff 32, so its presets set 32.
    discount_flat_ranks : the top ranks left undiscounted: D(i) = 1 for i <= this, the ``discount``
        formula below it (Järvelin & Kekäläinen's DCG with log base b: ``discount="log"``,
        ``discount_base`` b, ``discount_offset`` 0 and ``discount_flat_ranks`` b; the LETOR scripts use
        b = 2: ranks 1 and 2 get 1, rank i >= 3 gets 1/log2(i)).
    zero_beyond_list : metric families whose value at cutoff k is 0 for a query with fewer than k
        documents (the LETOR scripts' NDCG@k); other families truncate at the list's end.
    discount_exponent, discount_persistence, discount_slope : the parameters of ``discount="power"``
        (η >= 0), ``"geometric"`` (0 < p <= 1) and ``"linear"`` (0 <= s < 1).
    """

    gain: str | tuple[float, ...] = "exp2"
    discount: str = "log2"
    discount_base: float = 2.0
    discount_offset: float = 1.0
    ties: str = "average"
    no_relevant: str = "skip"
    p_denominator: str = "k"
    ap_denominator: str = "R"
    rel_threshold: float = 1.0
    err_gmax: int = 4
    no_relevant_by_metric: tuple[tuple[str, str], ...] = ()
    default_k: int | None = None
    discount_flat_ranks: int = 0
    zero_beyond_list: tuple[str, ...] = ()
    discount_exponent: float = 1.0
    discount_persistence: float = 0.8
    discount_slope: float = 0.1

    def no_relevant_for(self, family: str) -> str:
        """The ``no_relevant`` choice in force for a metric family.

        >>> PRESETS["catboost"].no_relevant_for("map"), PRESETS["catboost"].no_relevant_for("ndcg")
        ('zero', 'one')
        """
        return dict(self.no_relevant_by_metric).get(family, self.no_relevant)

    def gain_values(self, labels: np.ndarray) -> np.ndarray:
        """G(l) for an array of labels (float64).

        >>> Conventions(gain="exp2").gain_values(np.array([0, 1, 3])).tolist()
        [0.0, 1.0, 7.0]
        >>> Conventions(gain=(0.0, 0.5, 4.0)).gain_values(np.array([2, 1])).tolist()
        [4.0, 0.5]
        """
        labels = np.asarray(labels, dtype=np.float64)
        if isinstance(self.gain, tuple):
            table = np.asarray(self.gain, dtype=np.float64)
            idx = labels.astype(np.int64)
            if labels.size and (np.any(idx != labels) or idx.min() < 0 or idx.max() >= table.shape[0]):
                bad = labels[(idx != labels) | (idx < 0) | (idx >= table.shape[0])][0]
                raise MetricError(
                    f"gain table has {table.shape[0]} entries (labels 0..{table.shape[0] - 1}) "
                    f"but got label {bad:g}"
                )
            return table[idx]
        if self.gain == "exp2":
            if labels.size and labels.max() > MAX_EXP2_LABEL:
                raise MetricError(
                    f"gain='exp2': label {labels.max():g} overflows 2^l - 1 in float64 (labels must be "
                    f"<= {MAX_EXP2_LABEL}); use gain='linear' or a gain table"
                )
            return np.exp2(labels) - 1.0
        return labels.copy()

    def discounts(self, n: int) -> np.ndarray:
        """D(1..n) as a float64 array.

        >>> Conventions().discounts(3).round(6).tolist()
        [1.0, 0.63093, 0.5]
        >>> Conventions(discount="reciprocal").discounts(3).tolist()
        [1.0, 0.5, 0.3333333333333333]
        >>> PRESETS["letor"].discounts(4).round(6).tolist()  # 1, 1, 1/log2(3), 1/log2(4)
        [1.0, 1.0, 0.63093, 0.5]
        >>> Conventions(discount="geometric", discount_persistence=0.5).discounts(3).tolist()
        [1.0, 0.5, 0.25]
        >>> Conventions(discount="linear", discount_slope=0.4).discounts(4).round(6).tolist()
        [1.0, 0.6, 0.2, 0.0]
        """
        flat = min(self.discount_flat_ranks, n)
        i = np.arange(flat + 1, n + 1, dtype=np.float64)
        if self.discount == "reciprocal":
            below = 1.0 / i
        elif self.discount == "power":
            below = i**-self.discount_exponent
        elif self.discount == "geometric":
            below = self.discount_persistence ** (i - 1.0)
        elif self.discount == "linear":
            below = np.maximum(0.0, 1.0 - self.discount_slope * (i - 1.0))
        elif self.discount == "log2":
            below = 1.0 / np.log2(i + 1.0)
        else:
            below = math.log(self.discount_base) / np.log(i + self.discount_offset)
        return np.concatenate([np.ones(flat), below])


def _choice(name: str, value: Any, choices: Sequence[str]) -> str:
    return _setting(name, value, str, Constraint(choices=tuple(choices)))


def _setting(name: str, value: Any, kind: Any, constraint: Constraint | None = None) -> Any:
    """A numeric convention checked by :func:`ltr.core.config_check.check_value`, as a :class:`MetricError`."""
    return check_value(value, kind, constraint, f"convention {name}", error=MetricError)


def _validated(c: Conventions) -> Conventions:
    gain = c.gain
    if isinstance(gain, str):
        _choice("gain", gain, GAINS)
    elif isinstance(gain, Sequence | np.ndarray) and len(gain) > 0:
        try:
            gain = tuple(float(g) for g in gain)
        except (TypeError, ValueError) as exc:
            raise MetricError(f"convention gain table must hold numbers, got {c.gain!r}") from exc
        if not all(math.isfinite(g) and g >= 0 for g in gain):
            raise MetricError(f"convention gain table must hold finite values >= 0, got {c.gain!r}")
    else:
        raise MetricError(f"convention gain={c.gain!r} is not one of {', '.join(GAINS)} or a table of gains")
    _choice("discount", c.discount, DISCOUNTS)
    base = _setting("discount_base", c.discount_base, float)
    offset = _setting("discount_offset", c.discount_offset, float)
    flat = _setting("discount_flat_ranks", c.discount_flat_ranks, int, Constraint(low=0))
    if c.discount == "log":
        _setting("discount_base", base, float, Constraint(low=1.0, open_low=True))
        if not flat + 1.0 + offset > 1.0:
            raise MetricError(
                f"convention discount_offset: must be > {-flat} so that log_b({flat + 1}+a) > 0 "
                f"(the first discounted rank is {flat + 1}), got {offset!r}"
            )
    exponent = _setting("discount_exponent", c.discount_exponent, float, Constraint(low=0.0))
    persistence = _setting(
        "discount_persistence", c.discount_persistence, float, Constraint(low=0.0, high=1.0, open_low=True)
    )
    slope = _setting("discount_slope", c.discount_slope, float, Constraint(low=0.0, high=1.0, open_high=True))
    _choice("ties", c.ties, TIES)
    _choice("no_relevant", c.no_relevant, NO_RELEVANT)
    _choice("p_denominator", c.p_denominator, P_DENOMINATORS)
    _choice("ap_denominator", c.ap_denominator, AP_DENOMINATORS)
    rel_threshold = _setting("rel_threshold", c.rel_threshold, float)
    err_gmax = _setting("err_gmax", c.err_gmax, int, Constraint(low=1))
    by_metric = c.no_relevant_by_metric
    if isinstance(by_metric, Mapping):
        by_metric = tuple(by_metric.items())
    try:
        by_metric = tuple(sorted((str(f), str(v)) for f, v in by_metric))
    except (TypeError, ValueError) as exc:
        raise MetricError(
            f"convention no_relevant_by_metric must map metric families to choices, got {c.no_relevant_by_metric!r}"
        ) from exc
    for family, choice in by_metric:
        if family not in REGISTRY:
            raise MetricError(
                f"convention no_relevant_by_metric names unknown metric family {family!r}; "
                f"families: {', '.join(REGISTRY)}"
            )
        _choice(f"no_relevant_by_metric[{family}]", choice, NO_RELEVANT)
    return replace(
        c,
        gain=gain,
        discount_base=base,
        discount_offset=offset,
        err_gmax=err_gmax,
        rel_threshold=rel_threshold,
        no_relevant_by_metric=by_metric,
        default_k=_setting("default_k", c.default_k, int | None, Constraint(low=1)),
        discount_flat_ranks=flat,
        zero_beyond_list=_families("zero_beyond_list", c.zero_beyond_list),
        discount_exponent=exponent,
        discount_persistence=persistence,
        discount_slope=slope,
    )


def _families(name: str, value: Any) -> tuple[str, ...]:
    """A convention naming metric families (a name or a list of names, aliases accepted), as sorted
    canonical family names."""
    if isinstance(value, str):
        value = (value,)
    if not isinstance(value, Sequence | np.ndarray) or not all(isinstance(f, str) for f in value):
        raise MetricError(f"convention {name} must be a list of metric families, got {value!r}")
    families = set()
    for family in value:
        try:
            spec = parse_metric(family)
        except MetricError:
            spec = None
        if spec is None or spec.k is not None:
            raise MetricError(
                f"convention {name} names unknown metric family {family!r}; families: {', '.join(REGISTRY)}"
            )
        families.add(spec.family)
    return tuple(sorted(families))


#: Presets reproducing each tool (see docs/metrics.md for how each one was verified).
PRESETS: dict[str, Conventions] = {
    # ltr's reporting default (docs/metrics.md, "Conventions").
    "ltr": Conventions(),
    # NIST trec_eval and pytrec_eval: linear gain, ties by docno descending, empty topics score 0.
    "trec": Conventions(gain="linear", ties="docno_desc", no_relevant="zero"),
    # LightGBM ndcg@k / map@k: exp2 gain (label_gain 2^i - 1), stable sort, empty queries score 1,
    # AP divided by min(R, k).
    "lightgbm": Conventions(gain="exp2", ties="stable", no_relevant="one", ap_denominator="min_R_k"),
    # XGBoost ndcg / map / pre: exp2 gain, stable sort, empty queries 1, P@k / min(k, n), AP / min(R, k),
    # a bare name means @32.
    "xgboost": Conventions(
        gain="exp2",
        ties="stable",
        no_relevant="one",
        p_denominator="min_k_n",
        ap_denominator="min_R_k",
        default_k=32,
    ),
    # scikit-learn ndcg_score / dcg_score (ignore_ties=False): linear gain, average ties, empty -> 0.
    "sklearn": Conventions(gain="linear", ties="average", no_relevant="zero"),
    # ranx ndcg (Järvelin & Kekäläinen, linear gain) and ndcg_burges (exp2 gain); empty queries 0.
    "ranx": Conventions(gain="linear", ties="stable", no_relevant="zero"),
    "ranx_burges": Conventions(gain="exp2", ties="stable", no_relevant="zero"),
    # CatBoost NDCG/DCG (type Base = linear gain), pessimistic ties, empty queries 1 (MAP: 0),
    # P@k / min(k, n), AP / min(R, k).
    "catboost": Conventions(
        gain="linear",
        ties="pessimistic",
        no_relevant="one",
        no_relevant_by_metric=(("map", "zero"),),
        p_denominator="min_k_n",
        ap_denominator="min_R_k",
    ),
    # gdeval.pl (TREC Web track): exp2 gain, docno-descending ties, topics without relevant skipped.
    "gdeval": Conventions(gain="exp2", ties="docno_desc", no_relevant="skip", err_gmax=4),
}


# XGBoost ndcg- / map-: as xgboost but empty queries score 0.
PRESETS["xgboost_minus"] = replace(PRESETS["xgboost"], no_relevant="zero")

# LETOR 4.0 Eval-Score-4.0.pl (MQ2007/MQ2008): gains {0, 1, 3}; ranks 1 and 2 undiscounted, rank i >= 3
# gets 1/log2(i); Perl's stable sort keeps file order among ties; P@k and MAP count labels >= 1 as
# relevant (P@k pads a short list with irrelevant documents: / k); a query without relevant documents
# scores 0 and counts; NDCG@k of a query with fewer than k documents is 0 (docs/metrics.md).
PRESETS["letor"] = Conventions(
    gain=(0.0, 1.0, 3.0),
    discount="log",
    discount_base=2.0,
    discount_offset=0.0,
    discount_flat_ranks=2,
    ties="stable",
    no_relevant="zero",
    p_denominator="k",
    ap_denominator="R",
    rel_threshold=1.0,
    zero_beyond_list=("ndcg",),
)
# MSLR-WEB10K/30K Eval-Score-MSLR.pl: as letor with gains 2^l - 1 for labels 0..4 and P@k/MAP relevant
# = label >= 2.
PRESETS["mslr"] = replace(PRESETS["letor"], gain=(0.0, 1.0, 3.0, 7.0, 15.0), rel_threshold=2.0)
# Yahoo! Learning to Rank Challenge evaluate.py (Chapelle & Chang 2011): ERR over the whole list with
# R = (2^g - 1)/16, NDCG@10 with 2^g - 1 gains and 1/log(1+i); a query whose ideal DCG is 0 scores
# NDCG 1 (ERR keeps its natural 0); submissions were rankings, made from scores by a stable sort.
PRESETS["yahoo"] = Conventions(gain="exp2", discount="log2", ties="stable", no_relevant="one", err_gmax=4)


def resolve_conventions(preset: str | Conventions = "ltr", **overrides: Any) -> Conventions:
    """The preset's conventions with ``overrides`` applied, validated.

    Raises :class:`MetricError` for an unknown preset, an unknown convention name or a bad value.

    >>> resolve_conventions("lightgbm", no_relevant="zero").no_relevant
    'zero'
    """
    if isinstance(preset, Conventions):
        base = preset
    elif isinstance(preset, str) and preset in PRESETS:
        base = PRESETS[preset]
    else:
        raise MetricError(f"unknown metric preset {preset!r}; known presets: {', '.join(PRESETS)}")
    known = {f.name for f in fields(Conventions)}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise MetricError(
            f"unknown metric convention(s) {', '.join(unknown)}; known conventions: {', '.join(sorted(known))}"
        )
    return _validated(replace(base, **overrides))


def describe_conventions(preset: str | Conventions = "ltr", **overrides: Any) -> dict[str, str]:
    """A flat ``{name: value}`` string dict of the conventions in force (for MLflow params / logs).

    The discount is written out as a formula so a log line is self-explanatory.

    >>> d = describe_conventions("ltr")
    >>> d["preset"], d["gain"], d["discount"], d["ties"], d["no_relevant"], d["err_gmax"]
    ('ltr', 'exp2', '1/log2(i+1)', 'average', 'skip', '4')
    >>> describe_conventions("ltr", discount="log", discount_base=10, discount_offset=2)["discount"]
    '1/log_10(i+2)'
    >>> describe_conventions("ltr", discount="geometric", discount_persistence=0.5)["discount"]
    '0.5^(i-1)'
    >>> d = describe_conventions("letor")
    >>> d["discount"], d["gain"], d["zero_beyond_list"]
    ('1 for i<=2 else 1/log_2(i)', 'table(0,1,3)', 'ndcg')
    """
    c = resolve_conventions(preset, **overrides)
    if c.discount == "log2":
        discount = "1/log2(i+1)"
    elif c.discount == "reciprocal":
        discount = "1/i"
    elif c.discount == "power":
        discount = f"i^-{c.discount_exponent:g}"
    elif c.discount == "geometric":
        discount = f"{c.discount_persistence:g}^(i-1)"
    elif c.discount == "linear":
        discount = f"max(0, 1-{c.discount_slope:g}*(i-1))"
    elif c.discount_offset == 0:
        discount = f"1/log_{c.discount_base:g}(i)"
    else:
        discount = f"1/log_{c.discount_base:g}(i+{c.discount_offset:g})"
    if c.discount_flat_ranks:
        discount = f"1 for i<={c.discount_flat_ranks} else {discount}"
    gain = c.gain if isinstance(c.gain, str) else "table(" + ",".join(f"{g:g}" for g in c.gain) + ")"
    name = preset if isinstance(preset, str) else "custom"
    if overrides:
        name += "+overrides"
    return {
        "preset": name,
        "gain": gain,
        "discount": discount,
        "ties": c.ties,
        "no_relevant": c.no_relevant,
        "p_denominator": c.p_denominator,
        "ap_denominator": c.ap_denominator,
        "rel_threshold": f"{c.rel_threshold:g}",
        "err_gmax": str(c.err_gmax),
        "no_relevant_by_metric": ",".join(f"{f}={v}" for f, v in c.no_relevant_by_metric) or "-",
        "default_k": "all" if c.default_k is None else str(c.default_k),
        "discount_flat_ranks": str(c.discount_flat_ranks),
        "zero_beyond_list": ",".join(c.zero_beyond_list) or "-",
    }


def conventions_from_mapping(values: Mapping[str, Any]) -> Conventions:
    """Build validated conventions from a mapping that may carry a ``preset`` key (e.g. a config group).

    >>> conventions_from_mapping({"preset": "trec", "ties": "average"}).ties
    'average'
    """
    values = dict(values)
    preset = values.pop("preset", "ltr")
    return resolve_conventions(preset, **values)
