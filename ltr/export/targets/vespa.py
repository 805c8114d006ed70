"""Vespa: the model file its ``lightgbm()`` / ``xgboost()`` rank features import, plus a rank profile.

Vespa turns each tree into ``if(condition, left, right)`` ranking expressions (its importers in
``model-integration``): XGBoost's ``split < (float)split_condition`` and LightGBM's
``feature < threshold`` — ``<``, not LightGBM's own ``<=`` — each written ``!(feature >= t)``
when a missing (NaN) value goes left, since the backend's comparisons with NaN are false. ltr
writes ``t = next float32 above`` the canonical ``x <= t'`` threshold, exact for float32 feature
values, in both files:

* models trained with LightGBM only → ``lightgbm()`` JSON in LightGBM's ``dump_model`` layout
  (``feature_names``, ``tree_info[].tree_structure`` with ``default_left``), read by Vespa only:
  LightGBM itself would read the thresholds as ``<=``;
* any XGBoost tree (or a fold of both) → ``xgboost()`` JSON (:mod:`ltr.export.targets.dumps`);
* ``linear`` → the rank profile itself (written to the output path): ``bias + Σ w_j·feature_j``.

The base score is folded into the first tree; the objectives have no output transform (the
``objective`` written is the training one, none of Vespa's ``binary``/``poisson`` transforms).
Features are named by the feature map; with the default ``f1 … fN`` define them as rank-profile
functions (the written ``.sd`` snippet lists them).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from ltr.core.errors import ConfigError
from ltr.export.targets.dumps import model_dump, read_dump, strict_bound
from ltr.export.trees import (
    Exportable,
    Gap,
    LinearScorer,
    Tree,
    TreeBuilder,
    TreeEnsemble,
    Written,
    float32_below_double,
    gap_note,
)

MISSING = "nan"
SUFFIX = ".json"
PROFILE_SUFFIX = ".sd"
_TERM = re.compile(r"^\s*\+?\s*\(?(?P<w>[-+0-9.eE]+(?:inf)?)\)?(?:\s*\*\s*(?P<name>\S+))?\s*$")


def _lightgbm_node(tree: Tree, n: int, gaps: list[Gap]) -> dict[str, Any]:
    if tree.is_leaf[n]:
        return {"leaf_value": float(tree.value[n])}
    return {
        "split_feature": int(tree.feature[n]),
        "threshold": strict_bound(tree, n, gaps),
        "decision_type": "<=",
        "default_left": bool(tree.nan_left[n]),
        "missing_type": "NaN",
        "left_child": _lightgbm_node(tree, int(tree.left[n]), gaps),
        "right_child": _lightgbm_node(tree, int(tree.right[n]), gaps),
    }


def lightgbm_json(model: TreeEnsemble, names: list[str], gaps: list[Gap]) -> dict[str, Any]:
    """The ``lightgbm()`` file (LightGBM ``dump_model`` layout, thresholds for Vespa's ``<``)."""
    return {
        "name": "tree",
        "objective": model.objective,
        "max_feature_idx": model.n_features - 1,
        "feature_names": names,
        "pandas_categorical": [],
        "tree_info": [
            {"tree_index": k, "tree_structure": _lightgbm_node(t, 0, gaps)}
            for k, t in enumerate(model.base_folded().trees)
        ],
    }


def rank_profile(model: Exportable, names: list[str], out: Path, profile: str) -> str:
    """The rank-profile snippet that scores with the written model (or, for linear, is the model)."""
    used = names if isinstance(model, LinearScorer) else sorted({names[f] for f in model.thresholds()})
    functions = "".join(
        f"    # function {n}() {{ expression: ... }}\n" for n in used if re.fullmatch(r"f\d+", n)
    )
    if isinstance(model, LinearScorer):
        terms = "\n".join(
            f"            + ({float(w)!r}) * {n}" for w, n in zip(model.weights, names, strict=True)
        )
        expression = f"{float(model.bias)!r}\n{terms}"
    else:
        kind = "lightgbm" if model.source == "lightgbm" else "xgboost"
        expression = f'{kind}("{out.name}")'
    return (
        f"rank-profile {profile} inherits default {{\n{functions}"
        f"    first-phase {{\n        expression {{\n            {expression}\n        }}\n    }}\n}}\n"
    )


def outputs(out: Path, model: Exportable) -> tuple[Path, ...]:
    """The files :func:`write` writes: ``out`` and, for trees, the rank profile ``out`` with suffix ``.sd``
    (an ``out`` that already ends in ``.sd`` would be overwritten by the profile: refused)."""
    if isinstance(model, LinearScorer):
        return (out,)
    if out.suffix == PROFILE_SUFFIX:
        raise ConfigError(
            f"--out {out}: Vespa's rank profile is written to --out with suffix {PROFILE_SUFFIX}, which is --out "
            f"itself; give the model file another suffix (e.g. {out.with_suffix(SUFFIX).name})"
        )
    return (out, out.with_suffix(PROFILE_SUFFIX))


def write(model: Exportable, out: Path, names: list[str], *, model_name: str, **_: Any) -> Written:
    """Write the model file ``out`` and the rank profile beside it (``.sd``); for linear, ``out`` is the profile."""
    profile_path = out if isinstance(model, LinearScorer) else out.with_suffix(PROFILE_SUFFIX)
    gaps: list[Gap] = []
    if isinstance(model, TreeEnsemble):
        lightgbm = model.source == "lightgbm"
        body: Any = lightgbm_json(model, names, gaps) if lightgbm else model_dump(model, names, gaps)
        out.write_text(json.dumps(body, indent=1) + "\n")
    profile_path.write_text(rank_profile(model, names, out, model_name))
    unique = tuple(sorted(set(gaps)))
    return Written(
        missing=MISSING,
        gaps=unique,
        how_to_load=(
            *(gap_note(g, names) for g in unique),
            *(() if isinstance(model, LinearScorer) else (f"copy {out} to <application>/models/{out.name}",)),
            f"add the rank profile in {profile_path} to the schema; query with ranking={model_name}",
        ),
    )


def _read_lightgbm(body: dict[str, Any], names: list[str]) -> TreeEnsemble:
    column = {name: j for j, name in enumerate(names)}
    trees = []
    for info in body["tree_info"]:
        build = TreeBuilder()

        def add(node: dict[str, Any], build: TreeBuilder = build) -> int:
            i = build.add()
            if "leaf_value" in node:
                build.leaf(i, node["leaf_value"])
                return i
            left, right = add(node["left_child"]), add(node["right_child"])
            feature = column[body["feature_names"][node["split_feature"]]]
            below = float32_below_double(float(node["threshold"]))  # Vespa: feature < threshold
            build.split(i, feature, below, bool(node["default_left"]), left, right)
            return i

        add(info["tree_structure"])
        trees.append(build.tree())
    return TreeEnsemble(tuple(trees), 0.0, len(names), source="vespa")


def _read_linear(profile: str, names: list[str]) -> LinearScorer:
    body = profile.split("expression {", 1)[1].split("}", 1)[0]
    weights, bias = np.zeros(len(names)), 0.0
    for line in filter(str.strip, body.splitlines()):
        match = _TERM.match(line)
        if match is None:
            raise ValueError(f"unexpected expression line {line!r}")
        if match["name"] is None:
            bias = float(match["w"])
        else:
            weights[names.index(match["name"])] = float(match["w"])
    return LinearScorer(weights, bias)


def score(out: Path, X: np.ndarray, names: list[str]) -> np.ndarray:
    """Scores of float32 rows as Vespa computes them from the written files (NaN = missing)."""
    text = out.read_text()
    if text.startswith("rank-profile"):
        return _read_linear(text, names).predict(X)
    body = json.loads(text)
    if isinstance(body, list):
        return read_dump(body, names, "vespa", float32_leaves=False).predict(X)
    return _read_lightgbm(body, names).predict(X)
