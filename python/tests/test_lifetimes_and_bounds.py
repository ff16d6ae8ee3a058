"""Regressions: string columns read from a snapshot of the caller's array, the GIL on close and
garbage collection, DECIMAL / DOUBLE bounds, and the checks on prepared columns."""

import decimal
import gc
import threading
import time

import numpy as np
import pytest

import basalt
from helpers import count, hash3, simple_schema, spin_while_slow_enough

D = decimal.Decimal


# ---- string columns --------------------------------------------------------------------------


def test_object_and_masked_object_string_columns(client, table_name):
    t = client.create_table(table_name, simple_schema(), hash3())
    s = client.new_session()
    strings = np.array(["a", "bé", "", "ccc"], dtype=object)
    s.insert_columns(t, {"key": np.arange(4), "s": strings})
    masked = np.ma.masked_array(np.array(["x", "y", "z", "w"], dtype=object),
                                mask=[False, True, False, True])
    s.insert_columns(t, {"key": np.arange(4, 8), "s": masked})
    s.flush()
    got = dict((k, v) for k, _, v in t.scanner().read_all_tuples())
    assert got == {0: "a", 1: "bé", 2: "", 3: "ccc", 4: "x", 5: None, 6: "z", 7: None}


def test_strings_replaced_by_another_thread_while_applied(client, table_name):
    # The row loop runs without the GIL; replacing the caller's elements meanwhile must neither
    # crash nor send freed memory: each row gets the old or the new string.
    t = client.create_table(table_name, simple_schema(), hash3())
    n = 50_000
    arr = np.array([f"old-{k}-" + "x" * 64 for k in range(n)], dtype=object)
    stop = threading.Event()

    def mutate():
        i = 0
        while not stop.is_set():
            k = (i * 7919) % n
            arr[k] = f"new-{k}-" + "y" * (i % 100)
            i += 1

    th = threading.Thread(target=mutate)
    th.start()
    try:
        s = client.new_session(basalt.FLUSH_AUTO_BACKGROUND)
        s.insert_columns(t, {"key": np.arange(n, dtype=np.int32), "s": arr})
        s.flush()
    finally:
        stop.set()
        th.join()
    rows = t.scanner().set_projected_column_names(["key", "s"]).read_all_tuples()
    assert len(rows) == n
    for k, v in rows:
        assert v.startswith((f"old-{k}-", f"new-{k}-")), (k, v)


# ---- prepared columns (Session._apply_columns) -------------------------------------------------


def test_prepared_column_of_the_wrong_item_size_is_refused(client, table_name):
    t = client.create_table(table_name, simple_schema(), hash3())
    s = client.new_session()
    key = np.arange(3, dtype=np.int32)
    with pytest.raises(basalt.InvalidArgument,
                       match=r"column 'v' \(INT32\): expected items of 4 bytes, got 8"):
        s._apply_columns(t, 1, [(0, key, None), (1, np.arange(3, dtype=np.int64), None)], 3)
    with pytest.raises((ValueError, BufferError)):  # Not C-contiguous.
        s._apply_columns(t, 1, [(0, np.arange(6, dtype=np.int32)[::2], None)], 3)
    assert not s.has_pending_operations()
    s._apply_columns(t, 1, [(0, key, None), (1, key * 2, None)], 3)
    s.flush()
    assert sorted(r[:2] for r in t.scanner().read_all_tuples()) == [(0, 0), (1, 2), (2, 4)]


# ---- the GIL on close and garbage collection ---------------------------------------------------


def test_session_garbage_collection_flushes_without_the_gil(client, table_name):
    t = client.create_table(table_name, simple_schema(), hash3())
    rows = 0

    def buffered_session(scale):
        nonlocal rows
        n = 150_000 * scale
        s = client.new_session(mutation_buffer_sz=256 << 20)
        s.insert_columns(t, {"key": np.arange(rows, rows + n, dtype=np.int32)})
        assert s.count_buffered_operations() == n
        rows += n
        holder = [s]
        del s

        def drop():
            holder.clear()  # The last reference: the session flushes what it buffered.
            gc.collect()

        return drop

    ticks, seconds = spin_while_slow_enough(buffered_session)
    assert ticks >= 5, (ticks, seconds)
    assert count(t) == rows


def test_scanner_close_exit_and_garbage_collection(client, table_name):
    t = client.create_table(table_name, simple_schema(), hash3())
    s = client.new_session()
    s.insert_columns(t, {"key": np.arange(5000, dtype=np.int32)})
    s.flush()
    sc = t.scanner().set_batch_size(1024).open()
    assert len(sc.next_batch()) > 0
    sc.close()
    sc.close()  # Idempotent.
    with t.scanner().set_batch_size(1024) as sc2:
        assert len(sc2.next_batch()) > 0
    sc3 = t.scanner().set_batch_size(1024).open()
    assert len(sc3.next_batch()) > 0
    del sc3  # Open, mid-scan: closed on garbage collection.
    gc.collect()
    # And from another thread, racing a Python thread.
    done = []

    def scan_and_drop():
        x = t.scanner().set_batch_size(1024).open()
        x.next_batch()
        del x
        done.append(True)

    ths = [threading.Thread(target=scan_and_drop) for _ in range(4)]
    for th in ths:
        th.start()
    for th in ths:
        th.join(30)
    assert done == [True] * 4
    assert count(t) == 5000


# ---- DECIMAL bounds ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def decimal_table(client):
    b = basalt.schema_builder()
    b.add_column("key", basalt.int32, nullable=False, primary_key=True)
    b.add_column("d5", basalt.decimal, precision=5, scale=2)    # |v| <= 999.99
    b.add_column("d20", basalt.decimal, precision=20, scale=1)  # 64-bit unscaled
    b.add_column("d38", basalt.decimal, precision=38, scale=19)  # only 0 is whole
    b.add_column("dbl", basalt.double)
    b.add_column("flag", basalt.bool_)
    return client.create_table("pytest_decimal_bounds", b.build(), hash3())


D20_MAX = (2**63 - 1) // 10  # The largest whole number DECIMAL(20, 1) holds in 64 bits.


@pytest.mark.parametrize("column,values", [
    ("d5", np.array([999, -999, 0], dtype=np.int64)),
    ("d5", np.array([999, 0, 0], dtype=np.uint64)),
    ("d5", [D("999.99"), D("-999.99"), 999]),
    ("d20", np.array([D20_MAX, -D20_MAX, 0], dtype=np.int64)),
    ("d20", [D(D20_MAX), D("-922337203685477580.7"), -D20_MAX]),
    ("d38", np.array([0, 0, 0], dtype=np.int64)),
])
def test_decimal_bounds_accepted(client, decimal_table, column, values):
    t = decimal_table
    s = client.new_session()
    keys = np.array([0, 1, 2], dtype=np.int32) + 10 * list(decimal_table.schema.names).index(
        column)
    s.upsert_columns(t, {"key": keys, column: values})
    s.flush()
    got = dict(t.scanner().set_projected_column_names(["key", column]).add_predicates(
        [t["key"] >= int(keys[0]), t["key"] <= int(keys[2])]).read_all_tuples())
    assert [got[int(k)] for k in keys] == [v if isinstance(v, D) else D(int(v)) for v in values]


@pytest.mark.parametrize("column,values,row", [
    ("d5", np.array([0, 1000], dtype=np.int64), 1),
    ("d5", np.array([0, -1000], dtype=np.int64), 1),  # Was accepted: -(limit - 1) // 10**s.
    ("d5", np.array([0, -1000], dtype=np.int16), 1),
    ("d5", [D("-1000"), 0], 0),
    ("d5", [0, D("999.995")], 1),
    ("d20", np.array([0, D20_MAX + 1], dtype=np.int64), 1),
    ("d20", np.array([0, -D20_MAX - 1], dtype=np.int64), 1),  # Was accepted and overflowed.
    ("d20", np.array([2**63 - 1], dtype=np.int64), 0),
    ("d20", np.array([2**64 - 1], dtype=np.uint64), 0),
    ("d20", [0, D20_MAX + 1], 1),
    ("d20", [D("922337203685477580.8")], 0),
    ("d38", np.array([0, 1], dtype=np.int64), 1),
    ("d38", np.array([-1], dtype=np.int64), 0),
])
def test_decimal_bounds_refused(client, decimal_table, column, values, row):
    s = client.new_session()
    n = len(values)
    with pytest.raises(basalt.InvalidArgument, match=rf"column '{column}' .*row {row}"):
        s.insert_columns(decimal_table, {"key": np.arange(100, 100 + n), column: values})
    assert not s.has_pending_operations()


@pytest.mark.parametrize("value", [D("1E1000000000"), D("-9E999999999"), D("1E-1000000000")])
def test_huge_decimal_exponent_is_refused_fast(client, decimal_table, value):
    t = decimal_table
    start = time.perf_counter()
    with pytest.raises(basalt.InvalidArgument, match="column 'd5'"):
        t.new_insert({"key": 1, "d5": value})
    with pytest.raises(basalt.InvalidArgument, match="column 'd20'"):
        t.new_insert({"key": 1, "d20": value})
    with pytest.raises(basalt.InvalidArgument, match="column 'd5' .*row 1"):
        client.new_session().insert_columns(t, {"key": [1, 2], "d5": [D(1), value]})
    assert time.perf_counter() - start < 2


def test_zero_with_a_huge_exponent_is_zero(client, decimal_table):
    op = decimal_table.new_insert({"key": 1, "d5": D("0E1000000000"), "d38": D("0E-999999")})
    assert op.is_set("d5") and op.is_set("d38")


# ---- DOUBLE and bool conversions -----------------------------------------------------------------


@pytest.mark.parametrize("value,exc", [
    (10**400, basalt.InvalidArgument),
    (-(10**400), basalt.InvalidArgument),
    (1 + 2j, basalt.InvalidType),
    (np.complex128(1), basalt.InvalidType),
])
def test_double_overflow_and_complex_name_the_cell(client, decimal_table, value, exc):
    t = decimal_table
    op = t.new_insert({"key": 1})
    with pytest.raises(exc, match="column 'dbl'"):
        op["dbl"] = value
    with pytest.raises(exc, match=r"column 'dbl' \(DOUBLE\), row 1"):
        client.new_session().insert_columns(t, {"key": [1, 2], "dbl": [1.0, value]})


def test_numpy_bool_is_a_bool_only(client, decimal_table):
    t = decimal_table
    op = t.new_insert({"key": 1})
    op["flag"] = np.bool_(True)
    assert op.is_set("flag")
    with pytest.raises(basalt.InvalidType, match="column 'key'"):
        op["key"] = np.bool_(True)
    with pytest.raises(basalt.InvalidType, match="column 'dbl'"):
        op["dbl"] = np.bool_(False)
