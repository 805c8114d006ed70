"""Checks of the engines' own model files before the engine reads them.

LightGBM, XGBoost and CatBoost trust their model files: a LightGBM ``model.txt`` cut short aborts the
process (``terminate called``, a segmentation fault) or silently loads fewer trees, and a damaged
XGBoost ``model.ubj`` can claim a length of gigabytes that the reader then allocates. So every file is
checked here first, with a bounded parse in Python (every length held against the bytes that are left),
and a damaged file — truncated at any byte, zeroed, empty, of another format — is one
:class:`~ltr.core.errors.DataError` naming the file (and the line, for a text model):

* LightGBM text (:func:`check_lightgbm_text`): the header (``tree``, ``max_feature_idx=``, ``tree_sizes=``),
  every ``Tree=k`` block (each array as long as ``num_leaves`` says, numbers that parse, children that
  form one tree, features that exist; the linear-tree and categorical arrays too), each block exactly its
  ``tree_sizes`` bytes, ``end of trees`` and the ``parameters:`` … ``end of parameters`` trailer;
* XGBoost (:func:`check_xgboost_model`): JSON parsed whole, or UBJSON walked marker by marker (no length
  beyond the file's end, no nesting beyond :data:`MAX_DEPTH`), a top-level object with ``learner``;
* CatBoost (:func:`check_catboost_model`): the ``CBM1`` header and the model's byte count within the file.

A file that passes and that the engine still rejects gives the engine's first line, through
:func:`engine_error` (the engines' loaders call it).
"""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path
from typing import Any

import numpy as np

from ltr.core.errors import DataError

#: the deepest UBJSON nesting accepted (XGBoost's own models nest 5 deep)
MAX_DEPTH = 64
#: LightGBM tree arrays with one entry per split node / per leaf (``num_leaves - 1`` / ``num_leaves``)
_NODE_ARRAYS = (
    "split_feature", "split_gain", "threshold", "decision_type", "left_child", "right_child",
    "internal_value", "internal_weight", "internal_count",
)  # fmt: skip
_LEAF_ARRAYS = ("leaf_value", "leaf_weight", "leaf_count")
#: a line of the ``parameters:`` section: ``[name: value]``
_PARAMETER_LINE = re.compile(r"\[[A-Za-z0-9_]+: [^\r\n\[\]]*\]")
_INT_ARRAYS = ("split_feature", "decision_type", "left_child", "right_child", "internal_count", "leaf_count")


def _read(path: Path, what: str) -> bytes:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DataError(f"{path}: cannot read {what} ({exc.strerror or exc})") from None
    if not data:
        raise DataError(f"{path}: empty file; not {what}")
    if not data.strip(b"\0"):
        raise DataError(f"{path}: all zero bytes; not {what} (overwritten or never written)")
    return data


# --- LightGBM --------------------------------------------------------------------------------------
def check_lightgbm_text(path: str | Path) -> None:
    """Refuse a LightGBM text model that is damaged (module docstring); silent when it is whole.

    >>> import tempfile
    >>> bad = Path(tempfile.mkdtemp()) / "model.txt"
    >>> _ = bad.write_text("tree\\nversion=v4\\n")
    >>> check_lightgbm_text(bad)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ltr.core.errors.DataError: .../model.txt:3: the LightGBM model ends in its header (no Tree= block, no 'end of trees'); the file is cut short
    """
    path = Path(path)
    what = "a LightGBM model (text)"
    data = _read(path, what)
    if not data.startswith(b"tree\n") and not data.startswith(b"tree\r\n"):
        raise DataError(f"{path}: not a LightGBM text model (it must start with a line 'tree')")
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: byte {exc.start} is not text; not a whole LightGBM text model") from None
    if "\0" in text:
        raise DataError(f"{path}: byte {text.index(chr(0))} is a zero byte; the LightGBM model is damaged")
    lone_cr = re.search("\r(?!\n)", text)
    if lone_cr:  # LightGBM splits lines at a CR too: the file's line structure is not what it says
        raise DataError(
            f"{path}: byte {lone_cr.start()} is a carriage return inside a line; the LightGBM model is damaged"
        )
    if not text.endswith("\n"):
        raise DataError(f"{path}: the last line has no line end; the LightGBM model is cut short")
    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    header, i = _key_values(path, lines, 1)
    if i >= len(lines) - 1 and "end of trees" not in text:
        raise DataError(
            f"{path}:{len(lines)}: the LightGBM model ends in its header (no Tree= block, no 'end of trees'); "
            "the file is cut short"
        )
    n_features = _int(path, header, "max_feature_idx", 1, minimum=0) + 1
    sizes = [_int_value(path, 1, "tree_sizes", s) for s in _items(header.get("tree_sizes", ""))]
    k = 0
    while i < len(lines) and lines[i].strip() != "end of trees":
        if not lines[i].strip():
            i += 1
            continue
        if lines[i].strip() != f"Tree={k}":
            raise DataError(f"{path}:{i + 1}: expected 'Tree={k}' or 'end of trees', got {lines[i][:40]!r}")
        first = i
        block, i = _key_values(path, lines, i + 1)
        while i < len(lines) and not lines[i].strip():
            i += 1
        if i >= len(lines):
            raise DataError(
                f"{path}:{len(lines)}: the LightGBM model ends inside tree {k}; the file is cut short"
            )
        if sizes and k < len(sizes) and starts[i] - starts[first] != sizes[k]:
            raise DataError(
                f"{path}:{first + 1}: tree {k} is {starts[i] - starts[first]} bytes, its tree_sizes entry says "
                f"{sizes[k]}; the LightGBM model is damaged"
            )
        _check_tree(path, first + 1, k, block, n_features)
        k += 1
    if i >= len(lines):
        raise DataError(f"{path}:{len(lines)}: no 'end of trees' line; the LightGBM model is cut short")
    if sizes and len(sizes) != k:
        raise DataError(
            f"{path}:{i + 1}: {k} trees, but tree_sizes lists {len(sizes)}; the LightGBM model is damaged"
        )
    rest = [line.strip() for line in lines[i + 1 :]]
    if "parameters:" in rest and "end of parameters" not in rest:
        raise DataError(f"{path}:{len(lines)}: no 'end of parameters' line; the LightGBM model is cut short")
    if "parameters:" not in rest:
        raise DataError(
            f"{path}:{len(lines)}: no 'parameters:' section after the trees; the LightGBM model is cut short"
        )
    first = i + 1 + rest.index("parameters:") + 1
    for j in range(first, i + 1 + rest.index("end of parameters")):
        if lines[j].strip() and not _PARAMETER_LINE.fullmatch(
            lines[j].rstrip("\r")
        ):  # LightGBM crashes on a damaged one
            raise DataError(
                f"{path}:{j + 1}: expected '[name: value]', got {lines[j][:40]!r}; the LightGBM model is damaged"
            )
    last = next((line for line in reversed(rest) if line), "")
    if last.startswith("pandas_categorical:"):
        try:
            json.loads(last[len("pandas_categorical:") :])
        except ValueError:
            raise DataError(f"{path}:{len(lines)}: the last line (pandas_categorical) is cut short") from None
    elif last != "end of parameters":
        raise DataError(
            f"{path}:{len(lines)}: unexpected last line {last[:40]!r}; the LightGBM model is damaged"
        )


def _key_values(path: Path, lines: list[str], i: int) -> tuple[dict[str, str], int]:
    """The ``key=value`` lines from line ``i`` up to the next blank line (or the end), and that line's index."""
    found: dict[str, str] = {}
    while i < len(lines) and lines[i].strip():
        key, sep, value = lines[i].rstrip("\r").partition("=")
        if not sep or not key:
            raise DataError(
                f"{path}:{i + 1}: expected key=value, got {lines[i][:40]!r}; the LightGBM model is damaged"
            )
        found[key] = value
        i += 1
    return found, i


def _int_value(path: Path, line: int, key: str, text: str, minimum: int | None = None) -> int:
    if not _INT.fullmatch(text):
        raise DataError(
            f"{path}:{line}: {key} has {text[:30]!r}, not an integer; the LightGBM model is damaged"
        )
    value = int(text)
    if minimum is not None and value < minimum:
        raise DataError(f"{path}:{line}: {key}={value} is below {minimum}; the LightGBM model is damaged")
    return value


def _int(path: Path, found: dict[str, str], key: str, line: int, minimum: int | None = None) -> int:
    if key not in found:
        raise DataError(f"{path}:{line}: no {key}=; the LightGBM model is damaged or cut short")
    return _int_value(path, line, key, found[key].strip(), minimum)


def _items(text: str) -> list[str]:
    """A LightGBM array's values: separated by single spaces, as LightGBM splits them (Python's ``split()``
    would also split at control characters such as ``\\x1e``, which LightGBM reads as part of a number)."""
    return text.strip(" ").split(" ") if text.strip(" ") else []


#: the numbers LightGBM writes (C ``%g``/``%.17g`` forms; ``inf``/``nan`` in any case); no ``_``, no other digits
_FLOAT = re.compile(
    r"[+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|inf|nan|infinity)", re.IGNORECASE
)
_INT = re.compile(r"[+-]?\d+")


def _array(path: Path, block: dict[str, str], key: str, n: int, line: int, *, integer: bool) -> list[float]:
    items = _items(block[key])
    if len(items) != n:
        raise DataError(
            f"{path}:{line}: {key} has {len(items)} values, the tree needs {n}; the LightGBM model is damaged"
        )
    pattern = _INT if integer else _FLOAT
    bad = next((v for v in items if not pattern.fullmatch(v)), None)
    if bad is not None:
        raise DataError(
            f"{path}:{line}: {key} holds {bad[:30]!r}, not a number; the LightGBM model is damaged"
        )
    return [int(v) if integer else float(v) for v in items]


def _check_tree(path: Path, line: int, k: int, block: dict[str, str], n_features: int) -> None:
    """One ``Tree=k`` block: the arrays LightGBM reads, each of the length and kind it needs."""
    where = f"tree {k}"
    n_leaves = _int(path, block, "num_leaves", line, minimum=1)
    n_cat = _int(path, block, "num_cat", line, minimum=0)
    required = (
        ("leaf_value",)
        if n_leaves == 1
        else ("split_feature", "threshold", "decision_type", "left_child", "right_child", "leaf_value")
    )
    for key in required:
        if key not in block:
            raise DataError(
                f"{path}:{line}: {where} has no {key}=; the LightGBM model is damaged or cut short"
            )
    arrays: dict[str, list[float]] = {}
    for key in (*_NODE_ARRAYS, *_LEAF_ARRAYS):
        if key in block and (n_leaves > 1 or key in _LEAF_ARRAYS):
            n = n_leaves - 1 if key in _NODE_ARRAYS else n_leaves
            arrays[key] = _array(path, block, key, n, line, integer=key in _INT_ARRAYS)
    if "shrinkage" in block:
        _array(path, block, "shrinkage", 1, line, integer=False)
    if n_leaves > 1:
        if any(not 0 <= f < n_features for f in arrays["split_feature"]):
            raise DataError(
                f"{path}:{line}: {where} splits on a feature beyond max_feature_idx; the LightGBM model is damaged"
            )
        children = [int(c) for c in (*arrays["left_child"], *arrays["right_child"])]
        nodes = sorted(c for c in children if c >= 0)
        leaves = sorted(~c for c in children if c < 0)
        if nodes != list(range(1, n_leaves - 1)) or leaves != list(range(n_leaves)):
            raise DataError(
                f"{path}:{line}: {where}'s children do not form one tree; the LightGBM model is damaged"
            )
    if n_cat:
        bounds = (
            _array(path, block, "cat_boundaries", n_cat + 1, line, integer=True)
            if "cat_boundaries" in block
            else None
        )
        if bounds is None or "cat_threshold" not in block:
            raise DataError(
                f"{path}:{line}: {where} has categorical splits without cat_boundaries/cat_threshold"
            )
        if any(b > a for a, b in zip(bounds[1:], bounds[:-1], strict=False)) or bounds[0] != 0:
            raise DataError(
                f"{path}:{line}: {where}'s cat_boundaries do not increase from 0; the LightGBM model is damaged"
            )
        _array(path, block, "cat_threshold", int(bounds[-1]), line, integer=True)
    if block.get("is_linear", "0").strip() not in ("0", ""):
        for key in ("leaf_const", "num_features"):
            if key not in block:
                raise DataError(
                    f"{path}:{line}: {where} is linear without {key}=; the LightGBM model is damaged"
                )
        _array(path, block, "leaf_const", n_leaves, line, integer=False)
        counts = _array(path, block, "num_features", n_leaves, line, integer=True)
        total = int(sum(counts))
        if any(c < 0 for c in counts):
            raise DataError(
                f"{path}:{line}: {where} has a negative num_features; the LightGBM model is damaged"
            )
        for key, integer in (("leaf_features", True), ("leaf_coeff", False)):
            if total and key not in block:
                raise DataError(
                    f"{path}:{line}: {where} is linear without {key}=; the LightGBM model is damaged"
                )
            if total:
                values = _array(path, block, key, total, line, integer=integer)
                if integer and any(not 0 <= f < n_features for f in values):
                    raise DataError(
                        f"{path}:{line}: {where}'s leaf_features name a feature beyond max_feature_idx"
                    )


# --- XGBoost ---------------------------------------------------------------------------------------
def check_xgboost_model(path: str | Path) -> None:
    """Refuse an XGBoost JSON / UBJSON model that is damaged (module docstring); silent when it is whole.

    >>> import tempfile
    >>> bad = Path(tempfile.mkdtemp()) / "model.ubj"
    >>> _ = bad.write_bytes(b"{L" + (2**40).to_bytes(8, "big") + b"learner")
    >>> check_xgboost_model(bad)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ltr.core.errors.DataError: .../model.ubj: byte 1: a key of 1099511627776 bytes runs past the end of the file (17 bytes); the XGBoost model (UBJSON) is cut short or damaged
    """
    path = Path(path)
    what = "an XGBoost model (JSON or UBJSON)"
    data = _read(path, what)
    if data[:1] != b"{":
        raise DataError(f"{path}: not an XGBoost JSON or UBJSON model (it must start with '{{')")
    second = data[1:].lstrip(b" \t\r\n")[:1]
    if second in (b'"', b"}"):
        try:
            model = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            reason = str(exc).splitlines()[0]
            raise DataError(
                f"{path}: not whole JSON ({reason}); the XGBoost model is cut short or damaged"
            ) from None
        kind = "JSON"
    else:
        model, kind = _Ubjson(path, data).document(), "UBJSON"
    if not isinstance(model, dict) or not isinstance(model.get("learner"), dict):
        raise DataError(f"{path}: a {kind} document without 'learner'; not an XGBoost model")
    _check_xgboost_trees(path, model["learner"])


#: per-node arrays of an XGBoost tree (each ``num_nodes`` long)
_XGB_NODE_ARRAYS = (
    "left_children", "right_children", "parents", "split_indices", "split_conditions", "default_left",
    "base_weights", "loss_changes", "sum_hessian",
)  # fmt: skip
#: XGBoost's parent of the root node
_XGB_NO_PARENT = 2147483647


def _check_xgboost_trees(path: Path, learner: dict[str, Any]) -> None:
    """Every tree's arrays as long as its ``num_nodes``, children and parents within it, features that exist:
    XGBoost follows these indices without checking them (a damaged one crashes it)."""

    def fail(reason: str) -> DataError:
        return DataError(f"{path}: {reason}; the XGBoost model is damaged")

    try:
        n_features = int(learner["learner_model_param"]["num_feature"])
        trees = learner["gradient_booster"]["model"]["trees"]
    except (KeyError, TypeError, ValueError):
        gbm = learner.get("gradient_booster")
        if isinstance(gbm, dict) and gbm.get("name") in ("gblinear",):
            return
        raise fail("no learner_model_param.num_feature or gradient_booster.model.trees") from None
    if not isinstance(trees, list):
        raise fail("gradient_booster.model.trees is not a list")
    for k, tree in enumerate(trees):
        try:
            n = int(tree["tree_param"]["num_nodes"])
            arrays = {key: np.asarray(tree[key]) for key in _XGB_NODE_ARRAYS}
        except (KeyError, TypeError, ValueError):
            raise fail(f"tree {k} lacks tree_param.num_nodes or a node array") from None
        short = [key for key, values in arrays.items() if values.shape != (n,)]
        if n < 1 or short:
            raise fail(f"tree {k}: {', '.join(short) or 'num_nodes'} not {n} values long")
        left, right = arrays["left_children"].astype(np.int64), arrays["right_children"].astype(np.int64)
        parents = arrays["parents"].astype(np.int64)
        leaf = left == -1
        children = np.concatenate([left[~leaf], right[~leaf]])
        if (
            np.any((right == -1) != leaf)
            or np.any((children < 1) | (children >= n))
            or np.unique(children).size != children.size
            or children.size != n - 1
        ):
            raise fail(f"tree {k}: its children do not form one tree of {n} nodes")
        internal = np.nonzero(~leaf)[0]
        expected = np.full(n, _XGB_NO_PARENT, dtype=np.int64)
        expected[left[internal]] = internal
        expected[right[internal]] = internal
        if np.any(parents[1:] != expected[1:]) or parents[0] not in (_XGB_NO_PARENT, -1):
            raise fail(f"tree {k}: its parents do not match its children")
        splits = arrays["split_indices"].astype(np.int64)[~leaf]
        if np.any((splits < 0) | (splits >= n_features)):
            raise fail(f"tree {k}: a split on a feature beyond num_feature={n_features}")


class _Ubjson:
    """A bounded UBJSON decoder: every length is held against the bytes left before anything is allocated,
    and nesting is limited to :data:`MAX_DEPTH`; typed numeric arrays become numpy arrays."""

    SIZES = {
        b"i": 1,
        b"U": 1,
        b"C": 1,
        b"I": 2,
        b"l": 4,
        b"d": 4,
        b"L": 8,
        b"D": 8,
        b"T": 0,
        b"F": 0,
        b"Z": 0,
        b"N": 0,
    }
    FORMATS = {
        b"i": ">i1",
        b"U": ">u1",
        b"C": ">u1",
        b"I": ">i2",
        b"l": ">i4",
        b"L": ">i8",
        b"d": ">f4",
        b"D": ">f8",
    }

    def __init__(self, path: Path, data: bytes) -> None:
        self.path, self.data, self.pos = path, data, 0

    def fail(self, reason: str) -> DataError:
        return DataError(
            f"{self.path}: byte {self.pos}: {reason}; the XGBoost model (UBJSON) is cut short or damaged"
        )

    def take(self, n: int, what: str) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise self.fail(f"{what} of {n} bytes runs past the end of the file ({len(self.data)} bytes)")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def marker(self) -> bytes:
        return self.take(1, "a type marker")

    def integer(self, what: str) -> int:
        start = self.pos
        m = self.marker()
        if m not in self.FORMATS or m in (b"d", b"D", b"C"):
            self.pos = start
            raise self.fail(f"{what} must be an integer, got marker {m!r}")
        return int(np.frombuffer(self.take(self.SIZES[m], what), dtype=self.FORMATS[m])[0])

    def length(self, what: str) -> int:
        start = self.pos
        n = self.integer(what)
        if n < 0 or self.pos + n > len(self.data):
            self.pos = start
            raise self.fail(f"{what} of {n} bytes runs past the end of the file ({len(self.data)} bytes)")
        return n

    def document(self) -> Any:
        if self.marker() != b"{":
            raise self.fail("expected an object")
        model = self.container(b"}", depth=1)
        if self.pos != len(self.data):
            raise self.fail(f"{len(self.data) - self.pos} bytes after the model's end")
        return model

    def value(self, m: bytes, depth: int) -> Any:
        if m in (b"T", b"F", b"Z", b"N"):
            return {b"T": True, b"F": False}.get(m)
        if m in self.FORMATS:
            return np.frombuffer(self.take(self.SIZES[m], f"a {m.decode()} value"), dtype=self.FORMATS[m])[
                0
            ].item()
        if m in (b"S", b"H"):
            return self.take(self.length("a string"), "a string").decode("utf-8", "replace")
        if m == b"[":
            return self.container(b"]", depth + 1)
        if m == b"{":
            return self.container(b"}", depth + 1)
        self.pos -= 1
        raise self.fail(f"unknown type marker {m!r}")

    def container(self, end: bytes, depth: int) -> Any:
        """An array (``end`` ``]``) or object (``}``) after its opening marker."""
        if depth > MAX_DEPTH:
            raise self.fail(f"nested deeper than {MAX_DEPTH}")
        obj = end == b"}"
        kind, count = None, None
        if self.data[self.pos : self.pos + 1] == b"$":
            self.pos += 1
            kind = self.marker()
            if self.data[self.pos : self.pos + 1] != b"#":
                raise self.fail("a typed container without a count")
        if self.data[self.pos : self.pos + 1] == b"#":
            self.pos += 1
            count = self.integer("a count")
            if count < 0:
                raise self.fail(f"a negative count {count}")
        if kind is not None and kind in self.FORMATS and not obj:
            raw = self.take(count * self.SIZES[kind], f"an array of {count} {kind.decode()} values")  # type: ignore[operator]
            return np.frombuffer(raw, dtype=self.FORMATS[kind])
        items: Any = {} if obj else []
        n = 0
        while count is None or n < count:
            if count is None and self.data[self.pos : self.pos + 1] == end:
                self.pos += 1
                return items
            key = self.take(self.length("a key"), "a key").decode("utf-8", "replace") if obj else None
            if count is not None and self.pos >= len(self.data):
                raise self.fail("the container ends early")
            item = self.value(kind if kind is not None else self.marker(), depth)
            if obj:
                items[key] = item
            else:
                items.append(item)
            n += 1
        return items


# --- CatBoost --------------------------------------------------------------------------------------
def check_catboost_model(path: str | Path) -> None:
    """Refuse a CatBoost ``.cbm`` file without its ``CBM1`` header or shorter than the size it states."""
    path = Path(path)
    data = _read(path, "a CatBoost model (.cbm)")
    if not data.startswith(b"CBM1"):
        raise DataError(f"{path}: not a CatBoost .cbm model (no CBM1 header)")
    if len(data) < 8:
        raise DataError(f"{path}: the CatBoost model ends in its header; the file is cut short")
    (core,) = struct.unpack("<I", data[4:8])
    if 8 + core > len(data):
        raise DataError(
            f"{path}: the CatBoost model states {core} bytes, the file has {len(data) - 8} after its header; "
            "the file is cut short"
        )


def engine_error(path: str | Path, engine: str, exc: BaseException) -> DataError:
    """The one-line error for a file the engine itself rejected (its message's last meaningful line)."""
    lines = [
        line.strip() for line in str(exc).splitlines() if line.strip() and not line.strip().startswith("[bt]")
    ]
    reason = next((line for line in lines if "Stack trace" not in line), type(exc).__name__)
    if len(reason) > 300:
        reason = reason[:300] + "…"
    return DataError(f"{path}: {engine} cannot read this model file ({reason})")
