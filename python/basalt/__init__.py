"""Basalt's Python client, shaped like kudu-python (docs/python.md).

    import basalt
    client = basalt.connect('127.0.0.1:7051')
    builder = basalt.schema_builder()
    builder.add_column('key', basalt.int64, nullable=False, primary_key=True)
    builder.add_column('v', basalt.string)
    client.create_table('t', builder.build(),
                        basalt.Partitioning().add_hash_partitions(['key'], 3))
    table = client.table('t')
    session = client.new_session()               # FLUSH_MANUAL, as in kudu-python
    session.apply(table.new_insert({'key': 1, 'v': 'a'}))
    session.flush()
    rows = table.scanner().add_predicate(table['key'] >= 1).read_all_tuples()

Whole NumPy columns go in with ``session.insert_columns(table, {'key': array, ...})`` and come
out with ``scanner.to_dict_of_arrays()``. Errors are :class:`BasaltError` subclasses
(basalt.errors). Every call that may wait on the cluster releases the GIL while it waits,
including closing or garbage-collecting a session or scanner (docs/python.md, "The GIL").
"""

from . import errors
from .errors import *  # noqa: F401,F403  (the exception classes)
from . import _basalt
from ._basalt import (  # noqa: F401
    FLUSH_AUTO_BACKGROUND, FLUSH_AUTO_SYNC, FLUSH_MANUAL, READ_AT_SNAPSHOT, READ_LATEST,
    READ_YOUR_WRITES, Column, ColumnSchema, ColumnSpec, Compression, Encoding, Error, Predicate,
    ScanBatch, Scanner, Schema, SchemaBuilder, Session, Table, TabletServer, Type, WriteOperation)
from . import _columnar
from .client import Client, Partitioning, TableAlterer, connect  # noqa: F401

__version__ = "0.1.0"

# Column types, named as in kudu-python.
bool_ = Type.BOOL
int8 = Type.INT8
int16 = Type.INT16
int32 = Type.INT32
int64 = Type.INT64
float_ = Type.FLOAT
double = Type.DOUBLE
string = Type.STRING
binary = Type.BINARY
unixtime_micros = Type.UNIXTIME_MICROS
date = Type.DATE
decimal = Type.DECIMAL
varchar = Type.VARCHAR

ENCODING_AUTO = Encoding.AUTO
ENCODING_PLAIN = Encoding.PLAIN
ENCODING_PREFIX = Encoding.PREFIX
ENCODING_BIT_PACKED = Encoding.BIT_PACKED
ENCODING_BITSHUFFLE = Encoding.BIT_SHUFFLE
ENCODING_RLE = Encoding.RLE
ENCODING_DICT = Encoding.DICT
COMPRESSION_DEFAULT = Compression.DEFAULT
COMPRESSION_NONE = Compression.NONE
COMPRESSION_SNAPPY = Compression.SNAPPY
COMPRESSION_LZ4 = Compression.LZ4
COMPRESSION_ZLIB = Compression.ZLIB
COMPRESSION_ZSTD = Compression.ZSTD


def schema_builder() -> SchemaBuilder:
    """A new SchemaBuilder: ``add_column(name, type_, nullable=, primary_key=, default=, ...)``,
    ``set_primary_keys([...])``, ``build()``."""
    return SchemaBuilder()


def _insert_columns(self, table, columns):
    """Inserts one row per array index of ``columns`` ({column name: array}) without per-row
    Python work. Arrays: NumPy arrays (any integer dtype for integer columns, range-checked;
    floats; bools; datetime64 or int64 micros for UNIXTIME_MICROS; datetime64 or int days for
    DATE; object arrays of str / bytes, Decimal, datetime), lists, or masked arrays (masked =
    NULL; None in object arrays too). Everything is validated before anything is sent:
    InvalidArgument / InvalidType name the column and row. The rows are applied like apply():
    FLUSH_MANUAL flushes when the buffer fills and leaves the rest for your flush();
    FLUSH_AUTO_BACKGROUND blocks on a full buffer; FLUSH_AUTO_SYNC sends in batches and waits,
    raising if a row failed (see get_pending_errors()). Returns the number of rows."""
    return _columnar.apply_columns(self, table, columns, "insert")


def _upsert_columns(self, table, columns):
    """insert_columns, as upserts."""
    return _columnar.apply_columns(self, table, columns, "upsert")


def _apply_columns(self, table, columns, op="insert"):
    """insert_columns with any operation: 'insert', 'upsert', 'update', 'delete' and the
    '_ignore' forms."""
    return _columnar.apply_columns(self, table, columns, op)


Session.insert_columns = _insert_columns
Session.upsert_columns = _upsert_columns
Session.apply_columns = _apply_columns
