"""Table shapes and small helpers shared by the tests."""

import threading
import time

import basalt


def all_types_schema():
    """Every column type; key INT64, a NOT NULL int8, the rest nullable."""
    b = basalt.schema_builder()
    b.add_column("key", basalt.int64, nullable=False, primary_key=True)
    b.add_column("i8", basalt.int8, nullable=False)
    b.add_column("i16", basalt.int16)
    b.add_column("i32", basalt.int32)
    b.add_column("i64", basalt.int64)
    b.add_column("f", basalt.float_)
    b.add_column("d", basalt.double)
    b.add_column("b", basalt.bool_)
    b.add_column("s", basalt.string)
    b.add_column("bin", basalt.binary)
    b.add_column("ts", basalt.unixtime_micros)
    b.add_column("dt", basalt.date)
    b.add_column("dec", basalt.decimal, precision=10, scale=3)
    b.add_column("vc", basalt.varchar, length=5)
    return b.build()


def simple_schema():
    b = basalt.schema_builder()
    b.add_column("key", basalt.int32, nullable=False, primary_key=True)
    b.add_column("v", basalt.int32)
    b.add_column("s", basalt.string)
    return b.build()


def hash3():
    return basalt.Partitioning().add_hash_partitions(["key"], 3)


def count(table):
    return len(table.scanner().set_projected_column_names([]).read_all_tuples())


def rows_by_key(table):
    return sorted(table.scanner().read_all_tuples())


def spin_while(fn):
    """Runs fn() while a Python thread ticks every millisecond; (ticks during fn, seconds)."""
    ticks = []
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    th = threading.Thread(target=spin)
    th.start()
    time.sleep(0.01)
    start = time.perf_counter()
    try:
        fn()
    finally:
        end = time.perf_counter()
        stop.set()
        th.join()
    return len([x for x in ticks if start < x < end]), end - start


def spin_while_slow_enough(run, min_seconds=0.1, attempts=6, want_ticks=5, tries=3):
    """spin_while(run(scale)'s callable) for scale 1, 2, 4, ... until the call takes at least
    min_seconds; returns its (ticks, seconds). run(scale) prepares work proportional to scale and
    returns the callable to time. A call that holds the GIL lets the ticking thread tick at most
    once (if it was already past its check), however long it takes; one that releases it for
    min_seconds lets it tick many times, unless a loaded machine (the whole suite runs at once on
    two cores) kept the ticking thread off the CPU for that long: so a slow-enough call with fewer
    than want_ticks ticks is repeated at the same scale, up to `tries` times in all, and the best
    is returned. A call holding the GIL still fails every time. Growing the work instead of
    asserting a duration keeps the test meaningful as the client and servers get faster."""
    for attempt in range(attempts):
        ticks, seconds = spin_while(run(2 ** attempt))
        if seconds < min_seconds:
            continue
        for _ in range(tries - 1):
            if ticks >= want_ticks:
                break
            again, again_seconds = spin_while(run(2 ** attempt))
            if again > ticks:
                ticks, seconds = again, again_seconds
        return ticks, seconds
    raise AssertionError(f"still faster than {min_seconds} s at scale {2 ** (attempts - 1)}: "
                         f"{seconds} s; cannot tell whether it holds the GIL")
