"""A run's metric conventions: read once from ``eval`` and the data's label scale, checked against the data.

:class:`EvalConventions` holds ``eval.preset`` + ``eval.conventions`` resolved (under the ``ltr``
preset ERR's top grade follows the data's label scale, :func:`label_scale`) and computes every number
of a run with them. :func:`check_conventions_fit` refuses conventions the data cannot satisfy
(document ids for ``docno`` tie breaking, labels within ERR's ``err_gmax``, a gain table or the
``exp2`` range, a relevance threshold below every label), naming the override that fixes it — from
the data config alone before the data is read, and against the loaded splits
(:func:`check_data_fits`) before the fit.

>>> import numpy as np
>>> from ltr.data import RankingData
>>> conv = EvalConventions.from_config({"preset": "sklearn", "conventions": {"no_relevant": "skip"}})
>>> data = RankingData(np.array([[3.0], [1.0], [2.0], [5.0]]), np.array([1.0, 0, 0, 0]), np.array([1, 1, 2, 2]))
>>> conv.evaluate(["ndcg@2"], data, data.X[:, 0].astype(float))["ndcg@2"]  # query 2 has no relevant document
array([ 1., nan])
>>> conv.describe()["no_relevant"], conv.describe()["preset"]
('skip', 'sklearn+overrides')
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

import numpy as np

from ltr.core.config_check import plain
from ltr.core.errors import ConfigError, MetricError
from ltr.data import RankingData
from ltr.data.registry import REGISTRY, declared_label_range
from ltr.distributed.shards import (
    ShardedSplit,
)
from ltr.metrics import Conventions, describe_conventions, evaluate, parse_metric, resolve_conventions
from ltr.metrics.conventions import MAX_EXP2_LABEL
from ltr.metrics.registry import REGISTRY as METRICS

#: presets whose ERR top grade follows the data's label scale (every tool's preset keeps its fixed value)
GMAX_FROM_DATA = ("ltr",)


@dataclass(frozen=True)
class LabelScale:
    """The labels' range ``[low, high]`` and where it was read: ``data.label_range`` (declared by the data
    config, the registry or the synthetic generator) or the training labels (your own files without one)."""

    low: float
    high: float
    source: str

    @property
    def declared(self) -> bool:
        return self.source == "data.label_range"


def label_scale(data_cfg: Any, splits: Mapping[str, Any] | None = None) -> LabelScale | None:
    """The label scale of a run's data: declared (:func:`ltr.data.registry.declared_label_range`), else
    the min and max label of the ``train`` split when loaded, else ``None``.

    >>> label_scale({"kind": "mq2008"})
    LabelScale(low=0.0, high=2.0, source='data.label_range')
    >>> from ltr.data import RankingData
    >>> label_scale({"kind": "svmlight"}, {"train": RankingData(np.ones((2, 1)), np.array([0.0, 6]), np.array([1, 1]))})
    LabelScale(low=0.0, high=6.0, source='the training labels')
    """
    declared = declared_label_range(data_cfg or {})
    if declared is not None:
        return LabelScale(declared[0], declared[1], "data.label_range")
    train = (splits or {}).get("train")
    if train is None or train.n_docs == 0:
        return None
    low, high = label_bounds(train)
    return LabelScale(low, high, "the training labels")


def label_bounds(split: RankingData | ShardedSplit) -> tuple[float, float]:
    """The smallest and largest label of a split with rows: from its labels, or for a split the Dask
    workers hold, from what each shard reported (the labels never reach the driver).

    >>> from ltr.data import RankingData
    >>> label_bounds(RankingData(np.ones((3, 1)), np.array([2.0, 0, 1]), np.array([1, 1, 2])))
    (0.0, 2.0)
    """
    if isinstance(split, ShardedSplit):
        return split.min_label, split.max_label
    labels = np.asarray(split.y, dtype=np.float64)
    return float(labels.min()), float(labels.max())


@dataclass(frozen=True)
class EvalConventions:
    """The metric conventions of a run, read once from the ``eval`` group and used for every number.

    ``preset`` and ``overrides`` are the user's spelling (logged as ``metric_conventions.*``; a
    ``null`` convention is the preset's value and not an override); ``resolved`` is the validated
    :class:`~ltr.metrics.Conventions` every metric is computed with. Under the ``ltr`` preset ERR's top
    grade ``err_gmax`` is the top of the data's label scale (``gmax_source`` says where it was read)
    unless ``eval.conventions.err_gmax`` sets it; the presets of tools keep their fixed value.

    >>> scale = LabelScale(0.0, 2.0, "data.label_range")
    >>> c = EvalConventions.from_config({"preset": "ltr"}, scale)
    >>> c.resolved.err_gmax, c.gmax_note, c.describe()["preset"]
    (2, 'ERR: gmax=2 from data.label_range', 'ltr')
    >>> EvalConventions.from_config({"preset": "lightgbm"}, scale).resolved.err_gmax
    4
    """

    preset: str
    overrides: Mapping[str, Any]
    resolved: Conventions
    gmax_source: str | None = None

    @classmethod
    def from_config(cls, eval_cfg: Mapping[str, Any], scale: LabelScale | None = None) -> EvalConventions:
        """From ``eval.preset``, ``eval.conventions`` and the data's label scale (an unknown name or value
        raises ``MetricError``)."""
        preset = str(eval_cfg.get("preset", "ltr"))
        overrides = {k: v for k, v in plain(eval_cfg.get("conventions")).items() if v is not None}
        base = resolve_conventions(preset)
        source = None
        if preset in GMAX_FROM_DATA and "err_gmax" not in overrides and scale is not None:
            base, source = replace(base, err_gmax=max(1, math.ceil(scale.high))), scale.source
        return cls(preset, MappingProxyType(overrides), resolve_conventions(base, **overrides), source)

    @property
    def gmax_note(self) -> str | None:
        """``ERR: gmax=G from <source>`` when the data chose ERR's top grade, else ``None``."""
        if self.gmax_source is None:
            return None
        return f"ERR: gmax={self.resolved.err_gmax} from {self.gmax_source}"

    def describe(self) -> dict[str, str]:
        """:func:`ltr.metrics.describe_conventions` of the conventions in force, named by the preset."""
        described = describe_conventions(self.resolved)
        described["preset"] = self.preset + ("+overrides" if self.overrides else "")
        return described

    def evaluate(self, metrics: Sequence[str], data: Any, scores: np.ndarray) -> dict[str, np.ndarray]:
        """Per-query values of ``metrics`` for ``scores`` on ``data`` (a RankingData split; its
        ``docid`` breaks score ties under ``ties=docno_desc``/``docno_asc``)."""
        docno = getattr(data, "docid", None)
        return evaluate(list(metrics), data.y, scores, data.offsets, preset=self.resolved, docno=docno)


def curve_metrics(eval_cfg: Mapping[str, Any]) -> list[str]:
    """The ``metric@k`` names (k = 1..max_k) stored per query for the @k plot (``eval.curve``).

    >>> curve_metrics({"curve": {"metric": "ndcg", "max_k": 3}})
    ['ndcg@1', 'ndcg@2', 'ndcg@3']
    """
    curve = eval_cfg.get("curve") or {}
    max_k = int(curve.get("max_k", 0) or 0)
    return [f"{curve.get('metric', 'ndcg')}@{k}" for k in range(1, max_k + 1)]


def check_splits(data_cfg: Any, splits: Mapping[str, Any]) -> None:
    """A run needs a ``train`` split; raise :class:`ConfigError` naming the data config otherwise."""
    if "train" not in splits:
        raise ConfigError(f"data '{data_cfg.name}' has no train split (got {sorted(splits)})")


def read_conventions(eval_cfg: Any, scale: LabelScale | None) -> EvalConventions:
    """:meth:`EvalConventions.from_config`, its ``MetricError`` as a ``ConfigError`` naming ``eval``."""
    try:
        return EvalConventions.from_config(eval_cfg, scale)
    except MetricError as exc:  # eval.preset or a key/value of eval.conventions (the message names it)
        raise ConfigError(f"eval: {exc}") from exc


def config_has_docids(data_cfg: Any) -> bool | None:
    """Whether the data config loads document ids (``data.parse.docid``; your own files may also set
    ``+data.docid``); ``False`` for the synthetic data, ``None`` (unknown) for a kind ``ltr`` does not know."""
    kind = str(data_cfg.get("kind") or data_cfg.get("name") or "")
    if kind == "synthetic":
        return False
    if kind != "svmlight" and kind not in REGISTRY:
        return None
    parse = data_cfg.get("parse") or {}
    return bool(parse.get("docid") or (kind == "svmlight" and data_cfg.get("docid")))


def _families(eval_cfg: Any) -> set[str]:
    names = [*map(str, eval_cfg.metrics), *curve_metrics(eval_cfg)[:1]]
    return {parse_metric(name).family for name in names}


def check_conventions_fit(
    cfg: Any, conventions: EvalConventions, labels: tuple[float, str] | None, *, docids: bool | None
) -> None:
    """Refuse conventions the data cannot satisfy, with the override that fixes it (see :func:`check_run_config`).

    ``labels`` is the top label and what it is, as the message says it (``"the test labels go"``);
    ``docids`` whether the data has document ids (``None``: unknown).
    """
    c = conventions.resolved
    preset = f"eval.preset={conventions.preset}"
    if c.ties in ("docno_desc", "docno_asc") and docids is False:
        raise ConfigError(
            f"{preset} breaks score ties by document id (ties: {c.ties}), but data '{cfg.data.get('name')}' "
            f"has no document ids: set eval.conventions.ties=average (or stable) to keep the preset's other "
            "conventions, or load the ids of files with '# docid = X' comments with data.parse.docid=true"
        )
    if labels is None:
        return
    top, what = labels
    where = f"{what} up to {top:g}"
    families = _families(cfg.eval)
    if "err" in families and top > c.err_gmax:
        given = (
            "eval.conventions.err_gmax" if "err_gmax" in conventions.overrides else f"the value of {preset}"
        )
        raise ConfigError(
            f"{where}, above ERR's top grade {c.err_gmax} ({given}): set eval.conventions.err_gmax={math.ceil(top)}"
        )
    binary = sorted(f for f in families if METRICS[f].binary)
    if binary and 0 < top < c.rel_threshold:  # every query would be skipped (or scored 0) without a word
        raise ConfigError(
            f"{where}, below the relevance threshold {c.rel_threshold:g} of {', '.join(binary)}: no document "
            f"would count as relevant; set eval.conventions.rel_threshold={min(1.0, top):g}"
        )
    if families & {"ndcg", "dcg"}:
        if isinstance(c.gain, tuple) and top >= len(c.gain):
            raise ConfigError(
                f"{where}, but the gain table eval.conventions.gain has {len(c.gain)} entries (labels 0.."
                f"{len(c.gain) - 1}): give one gain per label 0..{math.ceil(top)}"
            )
        if c.gain == "exp2" and top > MAX_EXP2_LABEL:
            raise ConfigError(
                f"{where}, and gain exp2 (2^l - 1) overflows above label {MAX_EXP2_LABEL}: "
                "set eval.conventions.gain=linear"
            )


def check_data_fits(cfg: Any, splits: Mapping[str, Any]) -> EvalConventions:
    """After loading, before training: the conventions of the run (ERR's gmax from the data's label scale
    under the ``ltr`` preset) checked against the labels and document ids the splits have."""
    check_splits(cfg.data, splits)
    if not any(split in splits for split in cfg.eval.splits):
        raise ConfigError(
            f"eval.splits={list(cfg.eval.splits)}: none of them is a split of the data {sorted(splits)}"
        )
    conventions = read_conventions(cfg.eval, label_scale(cfg.data, splits))
    tops = {split: label_bounds(d)[1] for split, d in splits.items() if d.n_docs}
    top_split = max(tops, key=tops.__getitem__, default=None)
    labels = None if top_split is None else (tops[top_split], f"the {top_split} labels go")
    docids = all(getattr(d, "docid", None) is not None for d in splits.values())
    check_conventions_fit(cfg, conventions, labels, docids=docids)
    return conventions
