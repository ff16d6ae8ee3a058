"""Validation and normalization of whole columns for Session.insert_columns and friends.

Everything here is vectorized NumPy (no Python work per row, except for object arrays of
datetime / date / Decimal, which are Python objects to begin with). It produces, per column,
a C-contiguous array of exactly the cell type the C++ loop reads (_basalt's columnar.cc) and a
uint8 NULL mask, and raises InvalidArgument / InvalidType naming the column and the first bad
row before anything is sent.
"""

from __future__ import annotations

import datetime
from typing import Any, List, Mapping, Optional, Tuple

import numpy as np

from . import _basalt
from . import _convert as _conv
from .errors import InvalidArgument, InvalidType

T = _basalt.Type

_INT_TYPES = {T.INT8: np.int8, T.INT16: np.int16, T.INT32: np.int32, T.INT64: np.int64}
_VARLEN = (T.STRING, T.VARCHAR, T.BINARY)

# WriteOperation::Type numbering (src/client/write_op.h).
OP_TYPES = {"insert": 1, "update": 2, "delete": 3, "upsert": 4, "insert_ignore": 5,
            "update_ignore": 6, "delete_ignore": 7}


def _where(col, row: Optional[int] = None) -> str:
    s = f"column '{col.name}' ({col.type.name})"
    return s if row is None else f"{s}, row {row}"


def _split_mask(values: Any, col) -> Tuple[np.ndarray, Optional[np.ndarray]]:
    """(data, mask or None) of a MaskedArray, an ndarray, or a sequence (None = NULL)."""
    if isinstance(values, np.ma.MaskedArray):
        mask = np.ma.getmaskarray(values)
        return np.asarray(values.data), (mask if mask.any() else None)
    if isinstance(values, np.ndarray):
        arr = values
    else:
        # A list or other sequence: its elements as they are (np.asarray would coerce mixed
        # values, turning [1, "2"] into strings or [1, 2.5] into floats), so a bad element is
        # reported at its row.
        values = list(values)
        arr = np.empty(len(values), dtype=object)
        arr[:] = values
    if arr.ndim != 1:
        raise InvalidArgument(f"{_where(col)}: expected a one-dimensional array, got shape "
                              f"{arr.shape}")
    if arr.dtype == object:
        mask = np.fromiter((v is None for v in arr), dtype=bool, count=len(arr))
        return arr, (mask if mask.any() else None)
    return arr, None


def _first_bad_type(col, arr: np.ndarray, mask, ok) -> None:
    """Raises InvalidType at the first (unmasked) element whose type fails ``ok``."""
    for row, v in enumerate(arr):
        if (mask is None or not mask[row]) and not ok(type(v)):
            raise InvalidType(f"{_where(col, row)}: value {v!r} of type {type(v).__name__} "
                              f"does not fit the column")


def _int_type(k) -> bool:
    return issubclass(k, (int, np.integer)) and not issubclass(k, (bool, np.bool_))


def _is_int(v) -> bool:
    return _int_type(type(v))


def _check_range(col, arr: np.ndarray, mask, lo: int, hi: int) -> None:
    info = np.iinfo(arr.dtype) if arr.dtype.kind in "iu" else None
    if info is not None and info.min >= lo and info.max <= hi:
        return  # The dtype cannot hold an out-of-range value.
    _raise_at_first(col, arr, (arr < lo) | (arr > hi), mask, f"is out of range [{lo}, {hi}]")


def _raise_at_first(col, arr, bad: np.ndarray, mask, what: str) -> None:
    """Raises InvalidArgument at the first unmasked row where ``bad`` holds."""
    if mask is not None:
        bad &= ~mask
    if bad.any():
        row = int(np.argmax(bad))
        raise InvalidArgument(f"{_where(col, row)}: value {arr[row]} {what}")


def _object_to(col, arr, mask, ok, dtype, fill=0):
    """An object array whose element types pass ``ok`` as an array of ``dtype`` (masked rows
    ``fill``); dtype None only checks. The type check iterates in C (set(map(type, ...)))."""
    if mask is not None:
        arr = np.where(mask, fill, arr)
    if not all(ok(k) for k in set(map(type, arr))):
        _first_bad_type(col, arr, mask, ok)
    if dtype is None:
        return arr
    try:
        return arr.astype(dtype)
    except OverflowError:
        # Python ints beyond int64 (or beyond float64, for floats): find the row.
        for row, v in enumerate(arr):
            try:
                np.array([v], dtype=object).astype(dtype)
            except OverflowError:
                raise InvalidArgument(f"{_where(col, row)}: value {_short(v)} is out of "
                                      f"range") from None
        raise


def _short(v) -> str:
    """repr(v), shortened (and safe for ints beyond sys.get_int_max_str_digits())."""
    try:
        r = repr(v)
    except ValueError:
        return f"<{type(v).__name__}>"
    return r if len(r) <= 60 else r[:57] + "..."


def _ints(col, arr, mask, lo: int, hi: int) -> np.ndarray:
    """An int64 array of an integer column's values, range-checked."""
    if arr.dtype == object:
        arr = _object_to(col, arr, mask, _int_type, np.int64)
    elif arr.dtype.kind not in "iu":
        raise InvalidType(f"{_where(col)}: expected integers, got an array of {arr.dtype}")
    _check_range(col, arr, mask, lo, hi)
    return arr


def _convert(col, arr: np.ndarray, mask) -> Any:
    t = col.type
    if t in _VARLEN:
        if arr.dtype.kind in "US":
            arr = arr.astype(object)
        if arr.dtype != object:
            raise InvalidType(f"{_where(col)}: expected str or bytes, got an array of {arr.dtype}")
        return arr  # _basalt checks each element's type and length.
    if t in _INT_TYPES:
        target = _INT_TYPES[t]
        info = np.iinfo(target)
        return _ints(col, arr, mask, int(info.min), int(info.max)).astype(target, copy=False)
    if t in (T.FLOAT, T.DOUBLE):
        target = np.float32 if t == T.FLOAT else np.float64
        if arr.dtype == object:
            arr = _object_to(col, arr, mask, lambda k: issubclass(k, (int, float, np.number))
                             and not issubclass(k, (bool, np.bool_, np.complexfloating)),
                             np.float64)
        elif arr.dtype.kind not in "iuf":
            raise InvalidType(f"{_where(col)}: expected numbers, got an array of {arr.dtype}")
        if t == T.FLOAT and arr.dtype != np.float32:
            big = np.isfinite(arr) & (np.abs(arr) > np.finfo(np.float32).max)
            _raise_at_first(col, arr, big, mask, "is out of the FLOAT range")
        return arr.astype(target, copy=False)
    if t == T.BOOL:
        if arr.dtype == object:
            arr = _object_to(col, arr, mask, lambda k: issubclass(k, (bool, np.bool_)), bool,
                             fill=False)
        elif arr.dtype.kind != "b":
            raise InvalidType(f"{_where(col)}: expected booleans, got an array of {arr.dtype}")
        return arr.view(np.uint8)
    if t == T.UNIXTIME_MICROS:
        if arr.dtype.kind == "M":
            return arr.astype("datetime64[us]").view(np.int64)
        if arr.dtype == object:
            _object_to(col, arr, mask, lambda k: _int_type(k) or issubclass(k, datetime.datetime),
                       None)
            arr = np.fromiter(
                (0 if (mask is not None and mask[i]) else
                 (v if _is_int(v) else _conv.datetime_to_micros(v)) for i, v in enumerate(arr)),
                dtype=np.int64, count=len(arr))
        return _ints(col, arr, mask, -2**63, 2**63 - 1).astype(np.int64, copy=False)
    if t == T.DATE:
        if arr.dtype.kind == "M":
            arr = arr.astype("datetime64[D]").view(np.int64)
        elif arr.dtype == object:
            _object_to(col, arr, mask, lambda k: _int_type(k) or (
                issubclass(k, datetime.date) and not issubclass(k, datetime.datetime)), None)
            arr = np.fromiter(
                (0 if (mask is not None and mask[i]) else
                 (v if _is_int(v) else _conv.date_to_days(v)) for i, v in enumerate(arr)),
                dtype=np.int64, count=len(arr))
        return _ints(col, arr, mask, -2**31, 2**31 - 1).astype(np.int32)
    if t == T.DECIMAL:
        return _decimals(col, arr, mask)
    raise InvalidArgument(f"{_where(col)}: unsupported column type")


def _decimals(col, arr, mask) -> np.ndarray:
    """Unscaled int64 values of a DECIMAL column (Decimal objects or whole numbers)."""
    import decimal
    # Unscaled values lie strictly within (-limit, limit): DECIMAL(p <= 18) by its digits,
    # wider ones by the 64 bits they travel in.
    limit = 10 ** col.precision if col.precision <= 18 else 2**63
    factor = 10 ** col.scale
    out = np.zeros(len(arr), dtype=np.int64)
    if arr.dtype.kind in "iu":
        # Whole numbers v with |v * factor| < limit: as |v| <= hi, the int64 product below
        # cannot overflow (hi * factor <= limit - 1 <= 2**63 - 1).
        hi = (limit - 1) // factor
        _check_range(col, arr, mask, -hi, hi)
        if hi == 0:
            return out  # Only 0 fits (and factor may exceed int64).
        if mask is not None:
            arr = np.where(mask, 0, arr)  # Masked values are not range-checked.
        return arr.astype(np.int64) * np.int64(factor)
    if arr.dtype != object:
        raise InvalidType(f"{_where(col)}: expected decimal.Decimal or int values, got an array "
                          f"of {arr.dtype}")
    for row, v in enumerate(arr):  # Decimal objects: converted one by one (exactly).
        if mask is not None and mask[row]:
            continue
        if not (_is_int(v) or isinstance(v, decimal.Decimal)):
            raise InvalidType(f"{_where(col, row)}: expected decimal.Decimal or int, got "
                              f"{type(v).__name__}")
        u = _conv.decimal_to_unscaled(v if isinstance(v, decimal.Decimal) else int(v),
                                      col.scale, col.precision)
        if isinstance(u, str):
            raise InvalidArgument(f"{_where(col, row)}: {u}")
        if not -limit < u < limit:
            raise InvalidArgument(f"{_where(col, row)}: value {_short(v)} does not fit DECIMAL("
                                  f"{col.precision}, {col.scale})")
        out[row] = u
    return out


def prepare(table: _basalt.Table, columns: Mapping[str, Any],
            op: str) -> Tuple[List[tuple], int]:
    """([(column index, data, mask)], number of rows), or raises naming the column / row."""
    if not isinstance(columns, Mapping) or not columns:
        raise InvalidArgument("columns must be a non-empty dict {column name: array}")
    schema = table.schema
    names = schema.names
    out = []
    num_rows, first = None, None
    given = set()
    for name, values in columns.items():
        if name not in names:
            raise InvalidArgument(f"unknown column '{name}' in table '{table.name}'")
        idx = names.index(name)
        col = schema[idx]
        given.add(name)
        arr, mask = _split_mask(values, col)
        if num_rows is None:
            num_rows, first = len(arr), name
        elif len(arr) != num_rows:
            raise InvalidArgument(f"column '{name}' has {len(arr)} values but column '{first}' "
                                  f"has {num_rows}: arrays must have the same length")
        if mask is not None and not col.nullable:
            row = int(np.argmax(mask))
            raise InvalidArgument(f"{_where(col, row)}: NULL in a NOT NULL column")
        data = _convert(col, arr, mask)
        if isinstance(data, np.ndarray) and data.dtype != object:
            data = np.ascontiguousarray(data)
        # The mask is copied: a masked array's own mask could change while the rows are applied
        # without the GIL.
        out.append((idx, data, None if mask is None else mask.astype(np.uint8)))
    _check_columns(table, schema, given, op)
    return out, int(num_rows)


def _check_columns(table, schema, given, op: str) -> None:
    keys = set(schema.primary_keys())
    missing = sorted(keys - given)
    if missing:
        raise InvalidArgument(f"table '{table.name}': key column(s) {missing} missing")
    if op in ("insert", "upsert", "insert_ignore"):
        required = [c.name for c in schema if not c.nullable and c.default is None
                    and c.name not in given]
        if required:
            raise InvalidArgument(f"table '{table.name}': NOT NULL column(s) {required} without "
                                  f"a default missing")
    elif op in ("delete", "delete_ignore") and given - keys:
        raise InvalidArgument(f"table '{table.name}': a delete sets only the key columns, not "
                              f"{sorted(given - keys)}")
    elif op in ("update", "update_ignore") and not given - keys:
        raise InvalidArgument(f"table '{table.name}': an update sets at least one non-key column")


def apply_columns(session: _basalt.Session, table: _basalt.Table, columns: Mapping[str, Any],
                  op: str = "insert") -> int:
    """Applies one operation per row of ``columns`` ({name: array}); returns the row count."""
    if op not in OP_TYPES:
        raise InvalidArgument(f"unknown operation {op!r}: one of {sorted(OP_TYPES)}")
    prepared, n = prepare(table, columns, op)
    if n:
        session._apply_columns(table, OP_TYPES[op], prepared, n)
    return n
