"""Client, Partitioning and TableAlterer: the Python side of basalt's connection API."""

from __future__ import annotations

import threading
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from . import _basalt
from ._basalt import Schema, Session, Table, TabletServer
from .errors import InvalidArgument

Record = Union[Dict[str, Any], Sequence[Any], None]

_DEFAULT_PORT = 7051


def _master_list(masters: Union[str, Iterable[str]], port: Optional[int]) -> List[str]:
    if isinstance(masters, str):
        masters = masters.split(",")
    out = []
    for m in masters:
        m = str(m).strip()
        if not m:
            continue
        if port is not None and ":" not in m:
            m = f"{m}:{port}"
        out.append(m)
    if not out:
        raise InvalidArgument("no master address given")
    return out


class Partitioning:
    """How a new table is split into tablets (create_table's ``partitioning``).

    Hash levels and range partitions combine as in Kudu. Methods return ``self``::

        basalt.Partitioning().add_hash_partitions(['key'], 4)
        basalt.Partitioning().set_range_partition_columns(['key'])
            .add_range_partition({'key': 0}, {'key': 100})
    """

    def __init__(self) -> None:
        self._hash: List[Tuple[List[str], int, int]] = []
        self._range_columns: Optional[List[str]] = None
        self._ranges: List[Tuple[Record, Record, str, str]] = []
        self._splits: List[Record] = []

    def add_hash_partitions(self, column_names: Union[str, Sequence[str]], num_buckets: int,
                            seed: Optional[int] = None) -> "Partitioning":
        """Adds a hash level over ``column_names`` (key columns) with ``num_buckets`` buckets."""
        if isinstance(column_names, str):
            column_names = [column_names]
        self._hash.append((list(column_names), int(num_buckets), int(seed or 0)))
        return self

    def set_range_partition_columns(self, column_names: Union[str, Sequence[str]]) -> "Partitioning":
        """Range-partitions on these key columns (an empty list: no range partitioning)."""
        if isinstance(column_names, str):
            column_names = [column_names]
        self._range_columns = list(column_names)
        return self

    def add_range_partition(self, lower_bound: Record = None, upper_bound: Record = None,
                            lower_bound_type: str = "inclusive",
                            upper_bound_type: str = "exclusive") -> "Partitioning":
        """Adds a range partition; bounds are dicts or tuples of the range columns (None:
        unbounded); bound types are 'inclusive' or 'exclusive'."""
        for t in (lower_bound_type, upper_bound_type):
            if t not in ("inclusive", "exclusive"):
                raise InvalidArgument(f"a range bound type is 'inclusive' or 'exclusive', not {t!r}")
        self._ranges.append((lower_bound, upper_bound, lower_bound_type, upper_bound_type))
        return self

    def add_range_partition_split(self, split_row: Record) -> "Partitioning":
        """Splits the range partition holding ``split_row`` in two."""
        self._splits.append(split_row)
        return self


class TableAlterer:
    """Alters a table: add/drop/rename columns, add/drop range partitions, rename the table.
    Steps apply in order, all or nothing, when ``alter()`` is called; it returns the table
    reopened (with its new schema). Methods return ``self``, except ``add_column`` and
    ``alter_column``, which return the column's spec."""

    def __init__(self, client: "Client", table: Table) -> None:
        self._client = client
        self._a = client._c._new_table_alterer(table)

    def add_column(self, name: str, type_: Any = None, nullable: Optional[bool] = None,
                   default: Any = None, **kwargs: Any) -> _basalt.ColumnSpec:
        return self._a.add_column(name, type_, nullable, default, **kwargs)

    def alter_column(self, name: str, rename_to: Optional[str] = None) -> _basalt.ColumnSpec:
        return self._a.alter_column(name, rename_to)

    def rename_column(self, name: str, new_name: str) -> "TableAlterer":
        self._a.alter_column(name, new_name)
        return self

    def drop_column(self, name: str) -> "TableAlterer":
        self._a.drop_column(name)
        return self

    def rename(self, new_name: str) -> "TableAlterer":
        self._a.rename(new_name)
        return self

    def add_range_partition(self, lower_bound: Record = None, upper_bound: Record = None,
                            lower_bound_type: str = "inclusive",
                            upper_bound_type: str = "exclusive") -> "TableAlterer":
        self._a.add_range_partition(lower_bound, upper_bound, lower_bound_type, upper_bound_type)
        return self

    def drop_range_partition(self, lower_bound: Record = None, upper_bound: Record = None,
                             lower_bound_type: str = "inclusive",
                             upper_bound_type: str = "exclusive") -> "TableAlterer":
        self._a.drop_range_partition(lower_bound, upper_bound, lower_bound_type, upper_bound_type)
        return self

    def alter(self) -> Table:
        """Sends the steps and waits for them; returns the altered table, reopened."""
        old = self._a._table_name
        new = self._a._alter()
        self._client._forget(old)
        return self._client.open_table(new)


class Client:
    """A connection to a Basalt cluster (use :func:`basalt.connect`). Thread-safe.

    ``table(name)`` caches opened tables, so calling it per row costs a dict lookup; tables are
    reopened after ``new_table_alterer(...).alter()`` and dropped from the cache by
    ``delete_table``. A table altered by another client keeps working (writes are re-encoded for
    the new schema); ``open_table(name)`` reopens it to see the new columns.
    """

    def __init__(self, masters: Union[str, Iterable[str]], port: Optional[int] = None,
                 admin_timeout_ms: Optional[int] = None,
                 rpc_timeout_ms: Optional[int] = None) -> None:
        self._masters = _master_list(masters, port)
        self._c = _basalt._connect(self._masters, int(admin_timeout_ms or 0),
                                   int(rpc_timeout_ms or 0))
        self._tables: Dict[str, Table] = {}
        self._lock = threading.Lock()

    @property
    def master_addrs(self) -> List[str]:
        return list(self._masters)

    def table(self, table_name: str) -> Table:
        """The open table (cached; NotFound if it does not exist)."""
        t = self._tables.get(table_name)
        if t is None:
            t = self.open_table(table_name)
        return t

    def open_table(self, table_name: str) -> Table:
        """Opens the table afresh (an RPC) and caches it."""
        t = self._c._open_table(table_name)
        with self._lock:
            self._tables[table_name] = t
        return t

    def _forget(self, table_name: str) -> None:
        with self._lock:
            self._tables.pop(table_name, None)

    def create_table(self, table_name: str, schema: Schema,
                     partitioning: Optional[Partitioning] = None,
                     n_replicas: Optional[int] = None, wait: bool = True) -> Table:
        """Creates a table and returns it opened. Without ``partitioning``: one tablet (range
        partitioning on the key, unbounded). AlreadyPresent if it exists."""
        p = partitioning or Partitioning()
        self._c._create_table(table_name, schema, p._hash, p._range_columns, list(p._ranges),
                              list(p._splits), int(n_replicas or 0), bool(wait))
        self._forget(table_name)
        return self.table(table_name)

    def delete_table(self, table_name: str) -> None:
        """Deletes the table (NotFound if absent)."""
        self._forget(table_name)
        self._c._delete_table(table_name)

    def table_exists(self, table_name: str) -> bool:
        return self._c._table_exists(table_name)

    def list_tables(self, match_substring: Optional[str] = None) -> List[str]:
        """Names of the tables containing ``match_substring`` (all without), sorted."""
        return self._c._list_tables(match_substring or "")

    def list_tablet_servers(self) -> List[TabletServer]:
        return self._c._list_tablet_servers()

    def new_session(self, flush_mode: Union[int, str] = "manual",
                    timeout_ms: Optional[int] = None, **kwargs: Any) -> Session:
        """A new session. ``flush_mode``: FLUSH_MANUAL (default, as in kudu-python),
        FLUSH_AUTO_SYNC, FLUSH_AUTO_BACKGROUND or 'manual' / 'sync' / 'background'.
        ``timeout_ms``: per flush (default: the client's RPC timeout, 30 s). Keyword arguments
        ``mutation_buffer_sz``, ``mutation_buffer_watermark`` (a fraction or a percentage),
        ``mutation_buffer_flush_interval`` (ms) as in kudu-python."""
        s = self._c._new_session(flush_mode, timeout_ms)
        if "mutation_buffer_sz" in kwargs:
            s.set_mutation_buffer_space(int(kwargs.pop("mutation_buffer_sz")))
        if "mutation_buffer_watermark" in kwargs:
            w = float(kwargs.pop("mutation_buffer_watermark"))
            s.set_mutation_buffer_flush_watermark(w / 100 if w > 1 else w)
        if "mutation_buffer_flush_interval" in kwargs:
            s.set_mutation_buffer_flush_interval(int(kwargs.pop("mutation_buffer_flush_interval")))
        if kwargs:
            raise InvalidArgument(f"unknown new_session arguments: {sorted(kwargs)}")
        return s

    def new_table_alterer(self, table: Union[Table, str]) -> TableAlterer:
        if isinstance(table, str):
            table = self.table(table)
        return TableAlterer(self, table)

    def latest_observed_timestamp(self) -> int:
        """The latest timestamp (raw HybridTime) this client observed; pass it to another
        client's set_latest_observed_timestamp or a scanner's set_snapshot_raw."""
        return self._c.latest_observed_timestamp()

    def set_latest_observed_timestamp(self, timestamp: int) -> None:
        self._c.set_latest_observed_timestamp(int(timestamp))

    def close(self) -> None:
        """Drops the table cache (the connection closes when the client is garbage)."""
        with self._lock:
            self._tables.clear()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"basalt.Client({','.join(self._masters)})"


def connect(host: Union[str, Iterable[str]], port: Optional[int] = None,
            admin_timeout_ms: Optional[int] = None,
            rpc_timeout_ms: Optional[int] = None) -> Client:
    """Connects to a cluster: ``host`` is "host:port", several comma-separated, or a list
    (``port``, default 7051, applies to entries without one). Does not contact the cluster
    until the first call needs it. ``admin_timeout_ms`` bounds DDL calls, ``rpc_timeout_ms``
    sessions and scanners (both default to 30 s)."""
    return Client(host, port, admin_timeout_ms, rpc_timeout_ms)
