"""Tables: create, schema round trip, alter, delete, listing, connecting."""

import pytest

import basalt
from helpers import all_types_schema, hash3, simple_schema


def test_connect_forms(master, client):
    host, port = master.split(":")
    for c in (basalt.connect(master), basalt.connect([master]), basalt.connect(f" {master},"),
              basalt.connect(host, port=int(port))):
        assert isinstance(c.list_tables(), list)
    with pytest.raises(basalt.InvalidArgument):
        basalt.connect("")


def test_list_tablet_servers(client):
    servers = client.list_tablet_servers()
    assert len(servers) == 3
    assert all(s.live and s.port() > 0 and s.uuid() for s in servers)


def test_schema_round_trip(client, table_name):
    schema = all_types_schema()
    table = client.create_table(table_name, schema, hash3(), n_replicas=3)
    assert table.name == table_name
    assert table.num_replicas == 3
    got = table.schema
    assert got == schema
    assert got.names == schema.names
    assert got.primary_keys() == ["key"]
    by_name = {c.name: c for c in got}
    assert by_name["dec"].type == basalt.decimal
    assert (by_name["dec"].precision, by_name["dec"].scale) == (10, 3)
    assert by_name["vc"].type == basalt.varchar and by_name["vc"].length == 5
    assert not by_name["i8"].nullable and by_name["i16"].nullable
    assert by_name["ts"].type == basalt.unixtime_micros
    assert table_name in client.list_tables()
    assert client.list_tables(table_name) == [table_name]
    assert client.table_exists(table_name)
    assert client.table(table_name) is client.table(table_name)  # Cached.


def test_column_attributes_and_defaults(client, table_name):
    b = basalt.schema_builder()
    b.add_column("key", "int32", primary_key=True, nullable=False)
    b.add_column("n", basalt.int32, nullable=False, default=7, comment="seven",
                 encoding="bitshuffle", compression=basalt.COMPRESSION_LZ4)
    b.add_column("s").type(basalt.string).nullable(True).default("x").encoding(
        basalt.ENCODING_DICT)
    schema = b.build()
    table = client.create_table(table_name, schema, hash3())
    n = table.schema["n"]
    assert n.comment == "seven" and n.default == "7"
    assert n.encoding == basalt.ENCODING_BITSHUFFLE and n.compression == basalt.COMPRESSION_LZ4
    s = client.new_session()
    s.apply(table.new_insert({"key": 1}))
    s.flush()
    assert table.scanner().read_all_tuples() == [(1, 7, "x")]


def test_schema_builder_errors():
    b = basalt.schema_builder()
    b.add_column("v", basalt.int32)
    with pytest.raises(basalt.InvalidArgument, match="primary key|key"):
        b.build()
    with pytest.raises(basalt.InvalidArgument, match="unknown type"):
        basalt.schema_builder().add_column("x", "int33")
    b = basalt.schema_builder()
    b.add_column("key", basalt.int8, nullable=False, primary_key=True, default=1000)
    with pytest.raises(basalt.InvalidArgument, match="column 'key'"):
        b.build()


def test_create_alter_delete_errors(client, table_name):
    table = client.create_table(table_name, simple_schema(), hash3())
    with pytest.raises(basalt.BasaltError, match="no_such_column"):
        client.new_table_alterer(table).drop_column("no_such_column").alter()
    assert table.schema.names == ["key", "v", "s"]
    with pytest.raises(basalt.AlreadyPresent):
        client.create_table(table_name, simple_schema(), hash3())
    with pytest.raises(basalt.NotFound):
        client.table("no_such_table")
    with pytest.raises(basalt.NotFound):
        client.delete_table("no_such_table")
    client.delete_table(table_name)
    assert not client.table_exists(table_name)
    with pytest.raises(basalt.NotFound):
        client.table(table_name)


def test_range_partitions_and_alter(master, client, table_name):
    p = (basalt.Partitioning().set_range_partition_columns(["key"])
         .add_range_partition({"key": 0}, {"key": 100})
         .add_range_partition((100,), (200,))
         .add_range_partition_split({"key": 50}))
    table = client.create_table(table_name, simple_schema(), p)
    s = client.new_session(basalt.FLUSH_AUTO_SYNC)
    s.apply(table.new_insert((10, 1, "a")))
    with pytest.raises(basalt.BasaltError):  # No range partition holds 500.
        s.apply(table.new_insert((500, 1, "a")))

    alterer = client.new_table_alterer(table)
    alterer.add_column("extra", basalt.int64, nullable=False, default=5)
    alterer.add_column("note", basalt.string)
    alterer.rename_column("v", "value")
    alterer.drop_column("s")
    alterer.add_range_partition({"key": 200}, {"key": 1000})
    alterer.drop_range_partition({"key": 100}, {"key": 200})
    new_name = table_name + "_renamed"
    alterer.rename(new_name)
    altered = alterer.alter()
    try:
        assert altered.name == new_name
        assert altered.schema.names == ["key", "value", "extra", "note"]
        assert client.table(new_name) is altered
        assert not client.table_exists(table_name)
        s.apply(altered.new_insert({"key": 500, "value": 2, "note": "n"}))
        # This client (its location cache predates the drop) and a fresh one see the same rows.
        for t in (altered, basalt.connect(master).table(new_name)):
            assert sorted(t.scanner().read_all_tuples()) == [(10, 1, 5, None), (500, 2, 5, "n")]
    finally:
        client.delete_table(new_name)


def test_scan_after_drop_range_partition(client, table_name):
    p = basalt.Partitioning().set_range_partition_columns(["key"])
    for lo in (0, 100, 200):
        p.add_range_partition({"key": lo}, {"key": lo + 100})
    table = client.create_table(table_name, simple_schema(), p)
    s = client.new_session(basalt.FLUSH_AUTO_SYNC)
    s.apply(table.new_insert((10, 1, "a")))
    s.apply(table.new_insert((250, 1, "a")))
    assert len(table.scanner().read_all_tuples()) == 2
    table = client.new_table_alterer(table).drop_range_partition({"key": 100},
                                                                 {"key": 200}).alter()
    assert len(table.scanner().read_all_tuples()) == 2
