"""The export targets by ``--format`` name: each one's writer, checker and default file suffix.

Every target module has ``write(model, out, names, **options) -> Written`` and
``score(out, X, names) -> scores``: ``score`` reads the *written file* back with the target
engine's documented semantics (onnxruntime for ONNX, the engine itself for native files), which is
what the parity check (:mod:`ltr.export.parity`) compares with the model's own predictions.

>>> sorted(FORMATS)
['c', 'elasticsearch', 'lightgbm', 'onnx', 'opensearch', 'solr', 'vespa', 'xgboost']
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from ltr.core.errors import ConfigError
from ltr.core.extras import require_extra
from ltr.export.neural import NeuralScorer, is_neural, neural_exportable
from ltr.export.normalize import native_refusal
from ltr.export.reading import MCRANK_REFUSED, raw_feature_model
from ltr.export.selection import refuse_native
from ltr.export.targets import compiled, native, onnx, searchltr, solr, vespa
from ltr.export.trees import ExpectedGrade, Exportable, LinearScorer, TreeEnsemble, Written
from ltr.models.normalized import fitted_normalizer


@dataclass(frozen=True)
class Target:
    """One ``--format``: how to write the file and how to score it back."""

    name: str
    suffix: str
    write: Callable[..., Written]
    score: Callable[[Path, np.ndarray, list[str]], np.ndarray]
    native: bool = False  # writes the ranker's own engine file (no canonical model)
    extra: str | None = None  # the optional extra the format needs (ltr.core.extras.EXTRAS)
    #: every file ``write`` writes for ``--out`` (the side files too), given the model (None: native)
    outputs: Callable[[Path, Any], tuple[Path, ...]] = lambda out, model: (out,)


FORMATS: dict[str, Target] = {
    "onnx": Target("onnx", onnx.SUFFIX, onnx.write, onnx.score, extra="export"),
    "opensearch": Target("opensearch", searchltr.SUFFIX, searchltr.writer("opensearch"), searchltr.score),
    "elasticsearch": Target(
        "elasticsearch", searchltr.SUFFIX, searchltr.writer("elasticsearch"), searchltr.score
    ),
    "solr": Target("solr", solr.SUFFIX, solr.write, solr.score),
    "c": Target("c", compiled.SUFFIX, compiled.write, compiled.score, outputs=compiled.outputs),
    "vespa": Target("vespa", vespa.SUFFIX, vespa.write, vespa.score, outputs=vespa.outputs),
    "lightgbm": Target(
        "lightgbm", native.SUFFIX["lightgbm"], native.writer("lightgbm"), native.scorer("lightgbm"), True
    ),
    "xgboost": Target(
        "xgboost", native.SUFFIX["xgboost"], native.writer("xgboost"), native.scorer("xgboost"), True
    ),
}


def get_target(name: str) -> Target:
    """The target called ``name`` (a ConfigError listing the formats otherwise), its extra's modules
    importable (a ConfigError naming the missing one and the install otherwise): checked before any model
    is loaded."""
    if name not in FORMATS:
        raise ConfigError(f"--format: expected one of {', '.join(sorted(FORMATS))}, got {name!r}")
    target = FORMATS[name]
    if target.extra is not None:
        require_extra(target.extra, needed_for=f"--format {name}")
    return target


def exportable(ranker: Any, target: Target) -> Exportable | NeuralScorer | None:
    """What ``target`` writes of ``ranker`` (None for a native file); a model it cannot express is a ConfigError."""
    where = f"--format {target.name}"
    if is_neural(ranker):  # ONNX only, the MLP scorer only (ltr.export.neural)
        return neural_exportable(ranker, target.name)
    norm = fitted_normalizer(
        ranker
    )  # data.normalize: folded into the model, or refused (ltr.export.normalize)
    if target.native:
        refuse_native(ranker, target.name)  # data.features: a native file numbers only the kept columns
    if target.native and norm is not None:
        raise ConfigError(native_refusal(norm.method, target.name))
    model: Exportable | None = None if target.native else raw_feature_model(ranker, where)
    if isinstance(model, ExpectedGrade) and target.name != "onnx":
        raise ConfigError(f"--format {target.name}: " + MCRANK_REFUSED)
    return model


def export(
    ranker: Any, target: Target, out: Path, names: list[str], *, write_to: Path | None = None, **options: Any
) -> Written:
    """Write ``ranker`` in ``target``'s format: to ``write_to`` (a staging path with ``out``'s name,
    :mod:`ltr.export.staging`) or to ``out``; the messages name ``out``. A model it cannot express is a
    ConfigError, raised before anything is written."""
    model = exportable(ranker, target)
    path = write_to or out
    path.parent.mkdir(parents=True, exist_ok=True)
    written = target.write(model, path, names, ranker=ranker, **options)
    lines = tuple(line.replace(str(path.parent), str(out.parent)) for line in written.how_to_load)
    folded = folded_statement(ranker)
    return replace(written, how_to_load=(*lines, score_statement(model, ranker), *folded))


def folded_statement(ranker: Any) -> tuple[str, ...]:
    """The line saying a model's ``data.normalize`` transform is in the file (it takes raw features)."""
    norm = fitted_normalizer(ranker)
    if norm is None:
        return ()
    if is_neural(ranker):
        return (
            f"features: raw; data.normalize={norm.method} is computed in the graph, before the network (docs/export.md)",
        )
    into = "weights and bias" if getattr(ranker, "name", "") == "linear" else "split thresholds"
    return (f"features: raw; data.normalize={norm.method} is folded into the {into} (docs/export.md)",)


def score_statement(model: Exportable | NeuralScorer | None, ranker: Any) -> str:
    """What the exported scores are (the output transform stated, since none is applied)."""
    if isinstance(model, TreeEnsemble):
        return f"scores: raw margins of {model.objective} (base score folded in); no output transform"
    if isinstance(model, LinearScorer):
        return "scores: bias + Σ w_j·x_j (the linear model's own score)"
    if isinstance(model, NeuralScorer):
        transform = ranker.params_.get("feature_transform")
        return (
            f"scores: the {model.model} network's own score h·w + b of each document (feature_transform="
            f"{transform} and {len(model.layers)} ReLU layers in the graph); no output transform"
        )
    if isinstance(model, ExpectedGrade):
        return f"scores: Σ_k k·softmax_k over {len(model.classes)} classes (McRank's expected grade)"
    return f"scores: the {getattr(ranker, 'engine', 'engine')} file's own predict (its objective's transform)"
