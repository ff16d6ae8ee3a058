"""Session.insert_columns / upsert_columns: every type, NULL masks, and bad input (named column
and row, nothing written)."""

import datetime
import decimal

import numpy as np
import pytest

import basalt
from helpers import all_types_schema, count, hash3, simple_schema


def test_insert_columns_every_type(client, table_name):
    t = client.create_table(table_name, all_types_schema(), hash3())
    n = 6
    mask = np.array([False, True, False, False, True, False])
    cols = {
        "key": np.arange(n, dtype=np.uint8),  # Any integer dtype that fits.
        "i8": np.array([-128, 0, 1, 2, 3, 127], dtype=np.int64),
        "i16": np.ma.masked_array(np.arange(n, dtype=np.int16), mask=mask),
        "i32": [1, None, 3, 4, None, 6],  # A list with None.
        "i64": np.arange(n, dtype=np.int64) * 2**40,
        "f": np.linspace(0, 1, n, dtype=np.float32),
        "d": np.ma.masked_array(np.linspace(0, 1, n), mask=mask),
        "b": np.array([True, False] * 3),
        "s": np.array(["a", None, "ccc", "dé", None, ""], dtype=object),
        "bin": [b"\x00", b"", None, b"xyz", None, b"\xff"],
        "ts": np.array(["2024-01-01T00:00:00.000001"] * n, dtype="datetime64[us]"),
        "dt": np.array(["1969-12-31", "2024-02-29"] * 3, dtype="datetime64[D]"),
        "dec": np.array([decimal.Decimal("1.5"), None, 2, decimal.Decimal("-0.001"), None,
                         decimal.Decimal("9999999.999")], dtype=object),
        "vc": ["abcde", "ab", None, "", "x", "é"],
    }
    s = client.new_session()
    assert s.insert_columns(t, cols) == n
    s.flush()
    got = {r[0]: r for r in t.scanner().read_all_tuples()}
    assert len(got) == n
    utc = datetime.timezone.utc
    assert got[0] == (0, -128, 0, 1, 0, 0.0, 0.0, True, "a", b"\x00",
                      datetime.datetime(2024, 1, 1, 0, 0, 0, 1, tzinfo=utc),
                      datetime.date(1969, 12, 31), decimal.Decimal("1.500"), "abcde")
    assert got[1] == (1, 0, None, None, 2**40, pytest.approx(0.2), None, False, None, b"", got[1][10],
                      datetime.date(2024, 2, 29), None, "ab")
    assert got[3][12] == decimal.Decimal("-0.001")
    assert got[5][12] == decimal.Decimal("9999999.999") and got[5][13] == "é"
    # And back through NumPy.
    a = t.scanner().to_dict_of_arrays()
    order = np.argsort(a["key"])
    assert a["i16"][order].mask.tolist() == mask.tolist()
    assert a["i64"][order].tolist() == cols["i64"].tolist()


def test_upsert_and_other_ops(client, table_name):
    t = client.create_table(table_name, simple_schema(), hash3())
    s = client.new_session(basalt.FLUSH_AUTO_BACKGROUND)
    s.insert_columns(t, {"key": np.arange(100), "v": np.zeros(100, dtype=np.int32)})
    s.upsert_columns(t, {"key": np.arange(50, 150), "v": np.ones(100, dtype=np.int32)})
    s.apply_columns(t, {"key": np.arange(0, 10)}, op="delete")
    s.apply_columns(t, {"key": [10], "s": ["x"]}, op="update")
    s.flush()
    rows = dict((r[0], r[1:]) for r in t.scanner().read_all_tuples())
    assert len(rows) == 140 and rows[10] == (0, "x") and rows[49] == (0, None)
    assert rows[50] == (1, None) and rows[149] == (1, None)


def test_sync_mode_errors_and_manual_mode_buffer(client, table_name):
    t = client.create_table(table_name, simple_schema(), hash3())
    s = client.new_session(basalt.FLUSH_AUTO_SYNC)
    s.insert_columns(t, {"key": np.arange(10)})
    with pytest.raises(basalt.BasaltError):
        s.insert_columns(t, {"key": np.arange(5, 15)})
    errors, _ = s.get_pending_errors()
    assert len(errors) == 5 and all(isinstance(e.error(), basalt.AlreadyPresent) for e in errors)
    assert count(t) == 15
    assert s.flush_mode == basalt.FLUSH_AUTO_SYNC
    # FLUSH_MANUAL with a small buffer: insert_columns flushes whenever it fills.
    s = client.new_session(mutation_buffer_sz=64 << 10)
    s.insert_columns(t, {"key": np.arange(100, 20100)})
    s.flush()
    assert count(t) == 20015


@pytest.fixture(scope="module")
def bad_table(client):
    return client.create_table("pytest_bad_columns", all_types_schema(), hash3())


OK = {"key": np.arange(3), "i8": np.zeros(3, dtype=np.int8)}

BAD_COLUMNS = [
    ({"i32": np.arange(4)}, basalt.InvalidArgument, "column 'i32' has 4 values"),
    ({"nope": np.arange(3)}, basalt.InvalidArgument, "unknown column 'nope'"),
    ({"i8": np.ma.masked_array([1, 2, 3], mask=[0, 0, 1])}, basalt.InvalidArgument,
     "column 'i8' .*row 2: NULL in a NOT NULL column"),
    ({"i8": [1, None, 3]}, basalt.InvalidArgument, "column 'i8' .*row 1: NULL"),
    ({"i32": np.array([1, 2**40, 3])}, basalt.InvalidArgument,
     r"column 'i32' \(INT32\), row 1: value 1099511627776 is out of range"),
    ({"i8": np.array([0, 0, -129])}, basalt.InvalidArgument, "column 'i8' .*row 2"),
    ({"i64": np.array([0, 2**64 - 1, 0], dtype=np.uint64)}, basalt.InvalidArgument,
     "column 'i64' .*row 1"),
    ({"i32": np.array([1.5, 2, 3])}, basalt.InvalidType, "column 'i32'.*float64"),
    ({"i32": [1, "2", 3]}, basalt.InvalidType, "column 'i32' .*row 1"),
    ({"i32": [1, 2.5, 3]}, basalt.InvalidType, "column 'i32' .*row 1"),
    ({"b": [True, 1, False]}, basalt.InvalidType, "column 'b' .*row 1"),
    ({"s": ["a", "b", 3]}, basalt.InvalidType, "column 's' .*row 2"),
    ({"vc": ["a", "abcdef", "b"]}, basalt.InvalidArgument, "column 'vc' .*row 1"),
    ({"f": np.array([0, 1e300, 0])}, basalt.InvalidArgument, "column 'f' .*row 1"),
    ({"dec": [decimal.Decimal("0.0001"), None, None]}, basalt.InvalidArgument,
     "column 'dec' .*row 0"),
    ({"dec": np.array([1, 10**8, 2])}, basalt.InvalidArgument, "column 'dec' .*row 1"),
    ({"dt": [datetime.date(2020, 1, 1), datetime.datetime(2020, 1, 1), None]},
     basalt.InvalidType, "column 'dt' .*row 1"),
    ({"i16": np.zeros((3, 2))}, basalt.InvalidArgument, "column 'i16'.*one-dimensional"),
]


@pytest.mark.parametrize("extra,exc,message", BAD_COLUMNS)
def test_bad_columns_send_nothing(client, bad_table, extra, exc, message):
    s = client.new_session(basalt.FLUSH_AUTO_BACKGROUND)
    cols = dict(OK)
    cols.update(extra)
    with pytest.raises(exc, match=message):
        s.insert_columns(bad_table, cols)
    assert not s.has_pending_operations()
    s.flush()
    assert count(bad_table) == 0


def test_missing_columns(client, bad_table):
    s = client.new_session()
    with pytest.raises(basalt.InvalidArgument, match=r"key column\(s\) \['key'\] missing"):
        s.insert_columns(bad_table, {"i8": np.zeros(3, dtype=np.int8)})
    with pytest.raises(basalt.InvalidArgument, match="NOT NULL column.*'i8'"):
        s.insert_columns(bad_table, {"key": np.arange(3)})
    with pytest.raises(basalt.InvalidArgument, match="non-empty dict"):
        s.insert_columns(bad_table, {})
    assert count(bad_table) == 0
