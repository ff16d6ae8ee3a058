#!/usr/bin/env python3
"""`make tsbs`'s driver (bench/tsbs/run.py) at its small scale, in the default suite so that it
keeps working: the load writes every point and every TSBS query type answers without error
(tsbs_bench fails on any error answer). Performance is judged by `make tsbs` (docs/tsdb.md),
never here.

Usage: tsbs_smoke_test.py <bin_dir>
"""

import json
import os
import subprocess
import sys


def main():
    bin_dir = sys.argv[1]
    run = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench", "tsbs", "run.py")
    p = subprocess.run([sys.executable, run, "--scale=small", f"--bin_dir={bin_dir}"],
                       capture_output=True, text=True, timeout=280)
    sys.stderr.write(p.stderr)
    assert p.returncode == 0, f"run.py exited {p.returncode}:\n{p.stdout}"
    r = json.loads(p.stdout)
    print(json.dumps(r, indent=1))
    # 5 hosts, one hour of readings every 10 s.
    assert r["load"]["points"] == 5 * 360 and r["load"]["metrics"] == 5 * 360 * 10, r["load"]
    assert r["load"]["metrics_per_sec"] > 0, r["load"]
    for q in ("single-groupby-1-1-1", "single-groupby-5-1-12", "double-groupby-1", "lastpoint",
              "high-cpu-1"):
        for t in ("2_threads", "4_threads"):
            f = r["queries"][q][t]
            assert f["qps"] > 0 and 0 < f["p50_ms"] <= f["p99_ms"], (q, t, f)


if __name__ == "__main__":
    main()
