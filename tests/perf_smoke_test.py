#!/usr/bin/env python3
"""`make perf`'s driver (bench/perf.py) at its small scale, in the default suite so that it keeps
working: every workload runs and reports figures that add up (rows written, found, scanned and on
disk). Performance itself is judged by `make perf` (docs/performance.md), never here.

Usage: perf_smoke_test.py <bin_dir>
"""

import json
import os
import subprocess
import sys


def main():
    bin_dir = sys.argv[1]
    perf = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench", "perf.py")
    p = subprocess.run([sys.executable, perf, "--scale=small", f"--bin_dir={bin_dir}"],
                       capture_output=True, text=True, timeout=280)
    sys.stderr.write(p.stderr)
    assert p.returncode == 0, f"perf.py exited {p.returncode}:\n{p.stdout}"
    r = json.loads(p.stdout)
    print(json.dumps(r, indent=1))
    rows = 20_000
    for w in ("W1", "W2"):
        assert r[w]["rows"] == rows and r[w]["rows_per_sec"] > 0, r[w]
    assert r["W1"]["flush_mode"] == "manual" and r["W1"]["waits"] == rows // 1000, r["W1"]
    assert r["W2"]["flush_mode"] == "background", r["W2"]
    assert r["W3"]["rows"] == rows and r["W3"]["columns"] == "integer_val", r["W3"]
    # integer_val of row i is i (loadgen): the scan saw every value.
    assert r["W3"]["integer_sum"] == rows * (rows - 1) // 2, r["W3"]
    # The same sum, computed by the tablet servers.
    agg = r["W3_agg"]
    assert agg["rows"] == rows and agg["aggregate"] == "sum", agg
    assert f"sum(integer_val)={rows * (rows - 1) // 2}" in agg["result"], agg
    for k, n in (("W4_1_threads", 200), ("W4_8_threads", 800)):
        assert r[k]["lookups"] == n and r[k]["found"] == n, r[k]
        assert 0 < r[k]["p50_ms"] <= r[k]["p99_ms"] <= r[k]["p999_ms"], r[k]
    w5 = r["W5"]
    assert w5["replica_rows_on_disk"] == w5["replica_rows_written"] == 3 * rows, w5
    for kind in ("column_key", "column_integer_val", "column_non_null_with_default",
                 "bloom", "rowsets_total"):
        assert w5[f"{kind}_bytes_per_row"] > 0, (kind, w5)
    # The key is one INT32 column: its own column file is the key index.
    assert "key_index_bytes_per_row" not in w5, w5
    gc = r["W5_after_history_gc"]
    assert gc["replica_rows_on_disk"] == 3 * rows, gc
    assert gc.get("undo_deltas_bytes_per_row", 0) == 0, gc
    assert gc["rowsets_total_bytes_per_row"] > 0, gc
    w6 = r["W6"]
    assert w6["rows"] == 2 * rows and w6["share_of_one_writer"] > 0, w6
    assert w6["peak_tserver_rss_bytes"] > 0, w6
    assert r["machine"]["cores"] >= 1 and r["machine"]["kernel"], r["machine"]
    for when in ("host_before", "host_after"):
        host = r["machine"][when]
        for k in ("syscall_us", "thread_round_trip_us", "loopback_round_trips_per_sec",
                  "loopback_round_trips_per_sec_polling", "fdatasync_p50_us",
                  "fdatasyncs_per_sec"):
            assert host[k] > 0, (when, k, host)


if __name__ == "__main__":
    main()
