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
import struct
from pathlib import Path

from ltr.core.errors import DataError

#: the deepest UBJSON nesting accepted (XGBoost's own models nest 5 deep)
MAX_DEPTH = 64
#: LightGBM tree arrays with one entry per split node / per leaf (``num_leaves - 1`` / ``num_leaves``)
_NODE_ARRAYS = (
    "split_feature", "split_gain", "threshold", "decision_type", "left_child", "right_child",
    "internal_value", "internal_weight", "internal_count",
)  # fmt: skip
_LEAF_ARRAYS = ("leaf_value", "leaf_weight", "leaf_count")
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
    sizes = [_int_value(path, 1, "tree_sizes", s) for s in header.get("tree_sizes", "").split()]
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
    try:
        value = int(text)
    except ValueError:
        raise DataError(
            f"{path}:{line}: {key} has {text[:30]!r}, not an integer; the LightGBM model is damaged"
        ) from None
    if minimum is not None and value < minimum:
        raise DataError(f"{path}:{line}: {key}={value} is below {minimum}; the LightGBM model is damaged")
    return value


def _int(path: Path, found: dict[str, str], key: str, line: int, minimum: int | None = None) -> int:
    if key not in found:
        raise DataError(f"{path}:{line}: no {key}=; the LightGBM model is damaged or cut short")
    return _int_value(path, line, key, found[key].strip(), minimum)


def _array(path: Path, block: dict[str, str], key: str, n: int, line: int, *, integer: bool) -> list[float]:
    items = block[key].split()
    if len(items) != n:
        raise DataError(
            f"{path}:{line}: {key} has {len(items)} values, the tree needs {n}; the LightGBM model is damaged"
        )
    try:
        values = [int(v) if integer else float(v) for v in items]
    except ValueError:
        bad = next(v for v in items if not _parses(v, integer))
        raise DataError(
            f"{path}:{line}: {key} holds {bad[:30]!r}, not a number; the LightGBM model is damaged"
        ) from None
    return values  # type: ignore[return-value]


def _parses(text: str, integer: bool) -> bool:
    try:
        int(text) if integer else float(text)
    except ValueError:
        return False
    return True


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
    ltr.core.errors.DataError: .../model.ubj: byte 1: a key of 1099511627776 bytes runs past the end of the file (19 bytes); the XGBoost model (UBJSON) is cut short or damaged
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
            raise DataError(
                f"{path}: not whole JSON ({str(exc).splitlines()[0]}); the XGBoost model is cut short or damaged"
            ) from None
        keys = set(model) if isinstance(model, dict) else set()
        kind = "JSON"
    else:
        keys = _UbjsonWalk(path, data).top_keys()
        kind = "UBJSON"
    if "learner" not in keys:
        raise DataError(f"{path}: a {kind} object without 'learner'; not an XGBoost model")


class _UbjsonWalk:
    """A bounded walk over UBJSON bytes (no values kept): every length checked against what is left."""

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
    INTS = {b"i": ">b", b"U": ">B", b"I": ">h", b"l": ">i", b"L": ">q"}

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
        if m not in self.INTS:
            self.pos = start
            raise self.fail(f"{what} must be an integer, got marker {m!r}")
        return int(struct.unpack(self.INTS[m], self.take(struct.calcsize(self.INTS[m]), what))[0])

    def length(self, what: str) -> int:
        start = self.pos
        n = self.integer(what)
        if n < 0 or self.pos + n > len(self.data):
            self.pos = start
            raise self.fail(f"{what} of {n} bytes runs past the end of the file ({len(self.data)} bytes)")
        return n

    def top_keys(self) -> set[str]:
        if self.marker() != b"{":
            raise self.fail("expected an object")
        keys = self.container(b"}", depth=1)
        if self.pos != len(self.data):
            raise self.fail(f"{len(self.data) - self.pos} bytes after the model's end")
        return keys

    def value(self, m: bytes, depth: int) -> None:
        if m in self.SIZES:
            self.take(self.SIZES[m], f"a {m.decode()} value")
            if m == b"d" or m == b"D":
                return
        elif m in (b"S", b"H"):
            self.take(self.length("a string"), "a string")
        elif m == b"[":
            self.container(b"]", depth + 1)
        elif m == b"{":
            self.container(b"}", depth + 1)
        else:
            self.pos -= 1
            raise self.fail(f"unknown type marker {m!r}")

    def container(self, end: bytes, depth: int) -> set[str]:
        """Walk an array (``end`` ``]``) or object (``}``) after its opening marker; an object's keys."""
        if depth > MAX_DEPTH:
            raise self.fail(f"nested deeper than {MAX_DEPTH}")
        obj, keys = end == b"}", set()
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
        if kind is not None and kind in self.SIZES and not obj:
            self.take(count * self.SIZES[kind], f"an array of {count} {kind.decode()} values")  # type: ignore[operator]
            return keys
        n = 0
        while count is None or n < count:
            if count is None and self.data[self.pos : self.pos + 1] == end:
                self.pos += 1
                return keys
            if obj:
                keys.add(self.take(self.length("a key"), "a key").decode("utf-8", "replace"))
            if count is not None and self.pos >= len(self.data):
                raise self.fail("the container ends early")
            self.value(kind if kind is not None else self.marker(), depth)
            n += 1
        return keys


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
