"""Row-by-row writes: every type, every operation, flush modes, the error collector, bad input,
the GIL."""

import datetime
import decimal

import pytest

import basalt
from helpers import (all_types_schema, count, hash3, rows_by_key, simple_schema,
                     spin_while_slow_enough)

UTC = datetime.timezone.utc
ROW = {"key": 1, "i8": -128, "i16": 32767, "i32": -2**31, "i64": 2**63 - 1, "f": 1.5,
       "d": -2.25, "b": True, "s": "héllo", "bin": b"\x00\xff", "ts":
       datetime.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC),
       "dt": datetime.date(1969, 12, 31), "dec": decimal.Decimal("-1234567.891"), "vc": "abcde"}


@pytest.fixture
def all_types(client, table_name):
    return client.create_table(table_name, all_types_schema(), hash3())


def test_every_type_round_trip(client, all_types):
    t = all_types
    s = client.new_session()
    s.apply(t.new_insert(ROW))
    # By tuple, by index, naive datetime (UTC), ints for DATE / UNIXTIME / DECIMAL, NULLs.
    op = t.new_insert((2, 5))
    op[2] = None
    op["ts"] = datetime.datetime(1970, 1, 1, 0, 0, 1)
    op["dt"] = 3
    op["dec"] = 7
    op["s"] = b"raw"
    s.apply(op)
    s.apply(t.new_insert({"key": 3, "i8": 0, "ts": -1, "bin": "text"}))
    s.flush()
    rows = rows_by_key(t)
    assert rows[0] == tuple(ROW.values())
    assert rows[1] == (2, 5, None, None, None, None, None, None, "raw", None,
                       datetime.datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC),
                       datetime.date(1970, 1, 4), decimal.Decimal("7.000"), None)
    assert rows[2][10] == datetime.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
    assert rows[2][9] == b"text"


def test_operation_kinds(client, table_name):
    t = client.create_table(table_name, simple_schema(), hash3())
    s = client.new_session(basalt.FLUSH_AUTO_SYNC)
    for k in range(4):
        s.apply(t.new_insert({"key": k, "v": k, "s": "a"}))
    s.apply(t.new_upsert({"key": 0, "v": 100, "s": "up"}))
    s.apply(t.new_upsert({"key": 10, "v": 10}))
    s.apply(t.new_update({"key": 1, "v": 11}))
    s.apply(t.new_delete({"key": 2}))
    s.apply(t.new_insert_ignore({"key": 3, "v": 999}))   # Exists: ignored.
    s.apply(t.new_update_ignore({"key": 42, "v": 1}))   # Absent: ignored.
    s.apply(t.new_delete_ignore({"key": 42}))           # Absent: ignored.
    with pytest.raises(basalt.AlreadyPresent):
        s.apply(t.new_insert({"key": 3}))
    with pytest.raises(basalt.NotFound):
        s.apply(t.new_update({"key": 42, "v": 1}))
    with pytest.raises(basalt.NotFound):
        s.apply(t.new_delete({"key": 42}))
    assert rows_by_key(t) == [(0, 100, "up"), (1, 11, "a"), (3, 3, "a"), (10, 10, None)]


def test_manual_flush_and_error_collector(client, table_name):
    t = client.create_table(table_name, simple_schema(), hash3())
    s = client.new_session()  # FLUSH_MANUAL by default.
    assert s.flush_mode == basalt.FLUSH_MANUAL
    for k in range(100):
        s.apply(t.new_insert({"key": k}))
    assert s.count_buffered_operations() == 100
    assert count(t) == 0  # Nothing sent before flush().
    with pytest.raises(basalt.IllegalState):
        s.set_flush_mode(basalt.FLUSH_AUTO_SYNC)
    s.flush()
    assert count(t) == 100
    s.apply(t.new_insert({"key": 5, "v": 1}))
    s.apply(t.new_insert({"key": 1000}))
    with pytest.raises(basalt.BasaltError):
        s.flush()
    errors, overflowed = s.get_pending_errors()
    assert not overflowed and len(errors) == 1
    e = errors[0]
    assert isinstance(e.error(), basalt.AlreadyPresent)
    assert "key=5" in e.failed_op() and e.failed_op().startswith("INSERT")
    assert e.was_possibly_successful() is False
    assert count(t) == 101
    assert s.get_pending_errors() == ([], False)


@pytest.fixture(scope="module")
def shared_table(client):
    """A simple table tests share by key range (a table costs ~2 s to create)."""
    return client.create_table("pytest_write_shared", simple_schema(), hash3())


def count_range(t, lo, hi):
    sc = t.scanner().set_projected_column_names([]).add_predicates([t["key"] >= lo,
                                                                    t["key"] < hi])
    return len(sc.read_all_tuples())


def test_background_flush(client, shared_table):
    t = shared_table
    with client.new_session(flush_mode="background", mutation_buffer_sz=1 << 20) as s:
        for k in range(1_000_000, 1_005_000):
            s.apply(t.new_insert((k, k, str(k))))
    assert count_range(t, 1_000_000, 2_000_000) == 5000


def test_set_flush_mode_and_options(client):
    s = client.new_session("sync", timeout_ms=10000)
    assert s.flush_mode == basalt.FLUSH_AUTO_SYNC
    s.set_flush_mode(basalt.FLUSH_AUTO_BACKGROUND)
    s.set_flush_mode("manual")
    s.set_mutation_buffer_space(1 << 20)
    s.set_mutation_buffer_flush_watermark(0.3)
    s.set_mutation_buffer_flush_interval(500)
    with pytest.raises(basalt.InvalidArgument):
        s.set_flush_mode("sometimes")
    with pytest.raises(basalt.InvalidArgument):
        s.set_mutation_buffer_space(0)


BAD_VALUES = [
    ("i32", "12", basalt.InvalidType),
    ("i32", 1.5, basalt.InvalidType),
    ("i32", True, basalt.InvalidType),
    ("i8", 128, basalt.InvalidArgument),
    ("i16", -32769, basalt.InvalidArgument),
    ("i64", 2**63, basalt.InvalidArgument),
    ("f", 1e300, basalt.InvalidArgument),
    ("d", "x", basalt.InvalidType),
    ("b", 1, basalt.InvalidType),
    ("s", 5, basalt.InvalidType),
    ("vc", "abcdef", basalt.InvalidArgument),
    ("dt", datetime.datetime(2020, 1, 1), basalt.InvalidType),
    ("ts", "2020-01-01", basalt.InvalidType),
    ("dec", decimal.Decimal("0.0001"), basalt.InvalidArgument),
    ("dec", decimal.Decimal("12345678"), basalt.InvalidArgument),
    ("dec", 1.5, basalt.InvalidType),
    ("i8", None, basalt.InvalidArgument),
]


@pytest.fixture(scope="module")
def bad_input_table(client):
    name = "pytest_bad_row_input"
    return client.create_table(name, all_types_schema(), hash3())


@pytest.mark.parametrize("column,value,exc", BAD_VALUES)
def test_bad_value_names_the_column(client, bad_input_table, column, value, exc):
    t = bad_input_table
    s = client.new_session()
    op = t.new_insert({"key": 1})
    with pytest.raises(exc, match=f"column '{column}'"):
        op[column] = value
    assert not op.is_set(column)  # The op is unchanged by the failed assignment.
    with pytest.raises(exc, match=f"column '{column}'"):
        t.new_insert({"key": 2, "i8": 1, column: value})
    s.flush()
    assert count(t) == 0


def test_unknown_column_and_bad_keys(client, bad_input_table):
    t = bad_input_table
    op = t.new_insert()
    with pytest.raises(basalt.InvalidArgument, match="unknown column 'nope'"):
        op["nope"] = 1
    with pytest.raises(basalt.InvalidArgument, match="column index 99"):
        op[99] = 1
    with pytest.raises(basalt.InvalidType):
        op[1.5] = 1
    with pytest.raises(basalt.InvalidArgument):
        t.new_insert(tuple(range(20)))
    with pytest.raises(basalt.InvalidArgument):  # Key not set: refused by apply.
        client.new_session().apply(t.new_insert({"i8": 1}))
    assert count(t) == 0


def test_applied_op_cannot_be_reused(client, bad_input_table):
    t = bad_input_table
    s = client.new_session()
    assert t.new_insert({"key": 1}).type == "INSERT"
    op = t.new_delete_ignore({"key": 1})  # Harmless: the table stays empty.
    assert op.type == "DELETE_IGNORE" and "key=1" in repr(op)
    s.apply(op)
    with pytest.raises(basalt.IllegalState):
        s.apply(op)
    with pytest.raises(basalt.IllegalState):
        op["i8"] = 2
    s.flush()
    assert count(t) == 0


def test_gil_released_during_flush(client, table_name):
    import numpy as np
    t = client.create_table(table_name, simple_schema(), hash3())
    s = client.new_session(mutation_buffer_sz=256 << 20)
    rows = 0

    def buffer_rows(scale):
        nonlocal rows
        n = 150_000 * scale
        s.insert_columns(t, {"key": np.arange(rows, rows + n, dtype=np.int32)})
        rows += n
        return s.flush

    during, seconds = spin_while_slow_enough(buffer_rows)
    # With the GIL held the thread could tick at most once during the flush.
    assert during >= 5, (during, seconds)
    assert count(t) == rows
