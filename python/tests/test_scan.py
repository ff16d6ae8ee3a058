"""Scans: projections, predicates, read modes, snapshots, fault tolerance, batches, NumPy."""

import datetime
import decimal
import time

import numpy as np
import pytest

import basalt
from helpers import all_types_schema, count, hash3

N = 200


@pytest.fixture(scope="module")
def table(client):
    """key 0..199; v = key % 10, NULL for key % 7 == 0; s = str(key)."""
    b = basalt.schema_builder()
    b.add_column("key", basalt.int32, nullable=False, primary_key=True)
    b.add_column("v", basalt.int64)
    b.add_column("s", basalt.string)
    t = client.create_table("pytest_scan", b.build(), hash3())
    s = client.new_session()
    for k in range(N):
        s.apply(t.new_insert({"key": k, "v": None if k % 7 == 0 else k % 10, "s": str(k)}))
    s.flush()
    return t


def keys(scanner):
    return sorted(r[0] for r in scanner.read_all_tuples())


def test_projection_and_tuples(table):
    rows = table.scanner().set_projected_column_names(["s", "key"]).read_all_tuples()
    assert sorted(rows, key=lambda r: r[1]) == [(str(k), k) for k in range(N)]
    rows = table.scanner().set_projected_column_indexes([1]).read_all_tuples()
    assert len(rows) == N and all(len(r) == 1 for r in rows)
    with pytest.raises(basalt.BasaltError, match="nope"):
        table.scanner().set_projected_column_names(["nope"])


@pytest.mark.parametrize("pred,expected", [
    (lambda t: t["key"] >= 190, range(190, 200)),
    (lambda t: t["key"] > 190, range(191, 200)),
    (lambda t: t["key"] < 3, range(0, 3)),
    (lambda t: t["key"] <= 3, range(0, 4)),
    (lambda t: t["key"] == 42, [42]),
    (lambda t: 42 == t["key"], [42]),
    (lambda t: t["key"].in_list([1, 5, 500]), [1, 5]),
    (lambda t: t["v"].is_null(), range(0, N, 7)),
    (lambda t: t["s"] == "17", [17]),
])
def test_predicates(table, pred, expected):
    assert keys(table.scanner().add_predicate(pred(table))) == list(expected)


def test_conjunction_and_not_null(table):
    sc = table.scanner().add_predicates([table["key"] < 50, table["v"].is_not_null(),
                                         table["v"] == 3])
    assert keys(sc) == [k for k in range(50) if k % 7 and k % 10 == 3]


def test_bad_predicates(table):
    with pytest.raises(basalt.InvalidType, match="column 'key'"):
        table["key"] >= "5"
    with pytest.raises(basalt.InvalidArgument, match="column 'key'"):
        table["key"] == 2**40
    with pytest.raises(basalt.InvalidArgument, match="unknown column 'nope'"):
        table["nope"]
    with pytest.raises(basalt.NotSupported):
        table["key"] != 1


def test_batches_limit_and_chaining(table):
    sc = table.scanner().set_batch_size(64).set_timeout(10000).open()
    total, batches = 0, 0
    while sc.has_more_rows():
        batch = sc.next_batch()
        total += len(batch)
        batches += 1
        if len(batch):
            assert isinstance(batch[0], tuple) and batch.as_tuples()[0] == batch[0]
    sc.close()
    assert total == N and batches > 1
    assert len(table.scanner().set_limit(5).read_all_tuples()) == 5
    sc = table.scanner().open()
    first = sc.read_next_batch_tuples()
    assert len(first) + len(sc.read_all_tuples()) == N
    with pytest.raises(basalt.IllegalState):
        sc.set_limit(3)


def test_key_bounds_and_order(table):
    sc = table.scanner().set_fault_tolerant().add_lower_bound({"key": 10})
    sc.add_exclusive_upper_bound((20,))
    rows = sc.read_all_tuples()
    assert sorted(r[0] for r in rows) == list(range(10, 20))


def test_fault_tolerant_scan_is_ordered_per_tablet(client, table_name):
    p = basalt.Partitioning().set_range_partition_columns(["key"]).add_range_partition_split(
        {"key": 100})
    b = basalt.schema_builder()
    b.add_column("key", basalt.int32, nullable=False, primary_key=True)
    t = client.create_table(table_name, b.build(), p)
    s = client.new_session(mutation_buffer_sz=8 << 20)
    s.insert_columns(t, {"key": np.arange(5000, dtype=np.int32)[::-1].copy()})
    s.flush()
    rows = [r[0] for r in t.scanner().set_fault_tolerant().read_all_tuples()]
    assert rows == list(range(5000))  # Ordered scans return rows in primary key order.


def test_snapshot_reads(client, table_name):
    b = basalt.schema_builder()
    b.add_column("key", basalt.int32, nullable=False, primary_key=True)
    t = client.create_table(table_name, b.build(), hash3())
    s = client.new_session(basalt.FLUSH_AUTO_SYNC)
    for k in range(10):
        s.apply(t.new_insert({"key": k}))
    ts = client.latest_observed_timestamp()
    time.sleep(0.05)
    between = datetime.datetime.now(datetime.timezone.utc)
    time.sleep(0.05)
    for k in range(10, 20):
        s.apply(t.new_insert({"key": k}))
    assert count(t) == 20
    assert len(t.scanner().set_read_mode("snapshot").set_snapshot(between)
               .read_all_tuples()) == 10
    micros = int(between.timestamp() * 1_000_000)
    assert len(t.scanner().set_read_mode(basalt.READ_AT_SNAPSHOT).set_snapshot(micros)
               .read_all_tuples()) == 10
    assert len(t.scanner().set_read_mode("snapshot").set_snapshot_raw(ts)
               .read_all_tuples()) == 10
    assert len(t.scanner().set_read_mode("read_your_writes").read_all_tuples()) == 20
    assert len(t.scanner().set_read_mode("latest").read_all_tuples()) == 20
    with pytest.raises(basalt.InvalidArgument):
        t.scanner().set_read_mode("yesterday")


def test_to_dict_of_arrays(table):
    arrays = table.scanner().to_dict_of_arrays()
    order = np.argsort(arrays["key"])
    key, v, s = (arrays[c][order] for c in ("key", "v", "s"))
    assert type(key) is np.ndarray and key.dtype == np.int32  # NOT NULL: a plain array.
    assert list(key) == list(range(N))
    assert isinstance(v, np.ma.MaskedArray) and v.dtype == np.int64
    assert list(np.flatnonzero(v.mask)) == list(range(0, N, 7))
    assert v.compressed().tolist() == [k % 10 for k in range(N) if k % 7]
    assert s.dtype == object and s[17] == "17"
    empty = table.scanner().add_predicate(table["key"] > 1000).to_dict_of_arrays()
    assert len(empty["key"]) == 0


def test_to_dict_of_arrays_types(client, table_name):
    t = client.create_table(table_name, all_types_schema(), hash3())
    s = client.new_session()
    ts = datetime.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=datetime.timezone.utc)
    s.apply(t.new_insert({"key": 1, "i8": 3, "f": 0.5, "b": True, "bin": b"x", "ts": ts,
                          "dt": datetime.date(2024, 1, 2), "dec": decimal.Decimal("1.5")}))
    s.apply(t.new_insert({"key": 2, "i8": 4}))
    s.flush()
    a = t.scanner().set_fault_tolerant().to_dict_of_arrays()
    order = np.argsort(a["key"])
    a = {c: x[order] for c, x in a.items()}
    assert a["i8"].dtype == np.int8 and a["f"].dtype == np.float32
    assert a["b"].dtype == bool and a["b"][0] and a["b"].mask.tolist() == [False, True]
    assert a["ts"].dtype == np.dtype("datetime64[us]")
    assert a["ts"][0] == np.datetime64("2024-01-02T03:04:05.000006")
    assert a["dt"].dtype == np.dtype("datetime64[D]") and a["dt"][0] == np.datetime64("2024-01-02")
    assert a["dec"][0] == decimal.Decimal("1.500") and a["dec"].mask[1]
    assert a["bin"][0] == b"x"
