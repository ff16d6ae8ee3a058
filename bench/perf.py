#!/usr/bin/env python3
"""`make perf`: the workloads W1-W6 of docs/performance.md against a fresh local cluster.

Starts `basalt local start` clusters (1 master, 3 tablet servers, replication 3) in a scratch
directory, runs each workload through `basalt perf ...` and `basalt fs space`, and prints one JSON
object on stdout: each workload's figures and the machine (cores, kernel, git revision). Progress
goes to stderr. Every cluster is destroyed at the end, also on failure.

  W1  one client, MANUAL_FLUSH, Flush() after every 1,000 rows (seed 001)
  W2  the same rows, AUTO_FLUSH_BACKGROUND, one client
  W3  full scan of integer_val, summed in the client
  W3_agg  SUM(integer_val) and COUNT(*) computed in the tablet servers (issue 17's pushed-down
      SUM target; docs/aggregates.md)
  W4  random point lookups by key, 1 thread and 8 threads
  W5  bytes on disk per row per replica once W1's rows are flushed (fs space), and again once
      their history (UNDO files) is collected
  W6  two AUTO_FLUSH_BACKGROUND writers into two tables at once, tablet servers at
      --memory_limit_bytes=268435456, against one writer alone at the same limit; peak RSS

--scale=small runs every workload with a few thousand rows (the default suite does, so that
this keeps working); --scale=full is the issue's sizes (10 M rows; W1-W5 about 6 minutes here,
W6 up to 11 more).
"""

import argparse
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import threading
import time

SCALES = {
    # rows of W1/W2, lookups (1 thread, 8 threads), rows per W6 writer
    "full": {"rows": 10_000_000, "lookups1": 20_000, "lookups8": 80_000, "w6_rows": 15_000_000},
    "small": {"rows": 20_000, "lookups1": 200, "lookups8": 800, "w6_rows": 20_000},
}

TABLE_SPEC = ("CREATE TABLE {name} (key INT32, integer_val INT32 NOT NULL, "
              "non_null_with_default INT32 NOT NULL DEFAULT 12345, PRIMARY KEY (key)) "
              "PARTITION BY HASH (key) PARTITIONS 4 REPLICAS 3")
W6_MEMORY_LIMIT = 268435456


def log(msg):
    print(f"[perf {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def machine():
    """What a result was measured on: cores, kernel and the git revision."""
    return {
        "cores": os.cpu_count(),
        "kernel": platform.release(),
        "git_revision": subprocess.run(["git", "rev-parse", "--short", "HEAD"],
                                       capture_output=True, text=True,
                                       cwd=os.path.dirname(os.path.abspath(__file__))
                                       ).stdout.strip(),
    }


def host_probe(basalt, probe_dir, probe_ms):
    """`basalt perf host`: this hour's wakeups, loopback round trips and disk syncs."""
    p = subprocess.run([basalt, "perf", "host", f"--probe_dir={probe_dir}",
                        f"--probe_ms={probe_ms}", "--format=json"],
                       capture_output=True, text=True, check=True)
    probe = json.loads(p.stdout.strip().splitlines()[-1])
    probe.pop("workload", None)
    return probe


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """A `basalt local` cluster in its own directory."""

    def __init__(self, basalt, root, name, extra_tserver_flags=()):
        self.basalt = basalt
        self.dir = os.path.join(root, name)
        args = ["local", "start", f"--dir={self.dir}", "--num_tablet_servers=3",
                f"--master_rpc_port={free_port()}"]
        if extra_tserver_flags:
            args.append("--extra_tserver_flags=" + " ".join(extra_tserver_flags))
        log(f"starting cluster {name}")
        self.master = self.run(args).strip()

    def run(self, args, check=True):
        p = subprocess.run([self.basalt] + args, capture_output=True, text=True)
        if check and p.returncode != 0:
            raise RuntimeError(f"basalt {' '.join(args)} failed ({p.returncode}):\n"
                               f"{p.stdout}{p.stderr}")
        return p.stdout

    def perf(self, action, *args):
        """Runs `basalt perf <action> <masters> <args>` with --format=json; returns its object."""
        out = self.run(["perf", action, self.master] + list(args) + ["--format=json"])
        return json.loads(out.strip().splitlines()[-1])

    def create_table(self, name):
        self.run(["table", "create", self.master, TABLE_SPEC.format(name=name)])

    def tservers(self):
        """[(name, pid)] of the running tablet servers."""
        out = self.run(["local", "status", f"--dir={self.dir}", "--format=json"])
        rows = json.loads(out[out.index("["):])
        return [(d["name"], d["pid"]) for d in rows if d["name"].startswith("ts-") and d["running"]]

    def data_dir(self, ts_name):
        return os.path.join(self.dir, ts_name, "data")

    def destroy(self):
        self.run(["local", "destroy", f"--dir={self.dir}"], check=False)


def rss_bytes(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class RssSampler:
    """Peak RSS of each tablet server, sampled every 0.2 s while running."""

    def __init__(self, cluster):
        self.pids = [pid for _, pid in cluster.tservers()]
        self.peak = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def loop(self):
        while not self.stop.is_set():
            for pid in self.pids:
                self.peak = max(self.peak, rss_bytes(pid))
            self.stop.wait(0.2)

    def finish(self):
        self.stop.set()
        self.thread.join()
        return self.peak


def loadgen(cluster, table, rows, mode):
    return cluster.perf("loadgen", f"--table_name={table}", f"--num_rows_per_thread={rows}",
                        "--num_threads=1", f"--flush_mode={mode}", "--flush_every=1000",
                        "--timeout_ms=120000")


def space(cluster, done, wait_secs, waiting_for):
    """W5: bytes per row of each replica, by kind (`basalt fs space` on every tablet server), once
    done(rows_on_disk, bytes_by_kind) holds or `wait_secs` ran out."""
    deadline = time.time() + wait_secs
    while True:
        per_server = []
        for name, _ in cluster.tservers():
            out = cluster.run(["fs", "space", cluster.data_dir(name), "--format=json"])
            per_server.append(json.loads(out))
        kinds = {}
        for rows in per_server:
            for r in rows:
                kinds[r["kind"]] = kinds.get(r["kind"], 0) + r["bytes"]
        on_disk = sum(rows[0]["rows"] for rows in per_server)
        if done(on_disk, kinds) or time.time() > deadline:
            break
        log(f"W5: waiting for {waiting_for} ({on_disk} replica rows on disk)")
        time.sleep(5)
    # Per row of each replica: bytes over the rows the rowsets hold.
    replica_rows = max(on_disk, 1)
    result = {"replica_rows_on_disk": on_disk}
    for kind, b in kinds.items():
        key = kind.replace(" ", "_").replace("<", "").replace(">", "")
        result[f"{key}_bytes_per_row"] = round(b / replica_rows, 3)
    return result


def run(args):
    scale = SCALES[args.scale]
    basalt = os.path.join(args.bin_dir, "basalt")
    root = tempfile.mkdtemp(prefix="basalt-perf-", dir=args.work_dir)
    rows = scale["rows"]
    result = {"scale": args.scale, "machine": machine()}
    # The host's speed varies by the hour on a shared VM: each run says how fast it was, before
    # and after the workloads (docs/performance.md "How to measure").
    probe_ms = 500 if args.scale == "full" else 20
    log("probing the host (basalt perf host)")
    result["machine"]["host_before"] = host_probe(basalt, root, probe_ms)
    small_flags = ["--flush_threshold_secs=2"] if args.scale == "small" else []
    # History kept for snapshot reads: long enough for W5's first measurement to see W1's UNDO
    # files at full scale, short enough for the second to see them collected.
    history_secs = 240 if args.scale == "full" else 5
    main_flags = small_flags + [f"--tablet_history_max_age_sec={history_secs}"]
    clusters = []
    want = set(args.workloads.split(","))
    try:
        if want & {"W1", "W2", "W3", "W4", "W5"}:
            c = Cluster(basalt, root, "main", main_flags)
            clusters.append(c)
            if want & {"W1", "W3", "W4", "W5"}:  # W3-W5 read W1's table.
                c.create_table("w1")
                log(f"W1: {rows} rows, MANUAL_FLUSH, Flush() every 1,000 rows")
                result["W1"] = loadgen(c, "w1", rows, "manual")
                log(f"W1: {result['W1']['seconds']} s")
            if "W3" in want:
                log("W3: scan integer_val")
                scans = [c.perf("scan", "w1", "--columns=integer_val") for _ in range(3)]
                result["W3"] = max(scans, key=lambda s: s["rows_per_sec"])
                result["W3"]["runs_rows_per_sec"] = [s["rows_per_sec"] for s in scans]
                log("W3_agg: SUM(integer_val) in the tablet servers")
                aggs = [c.perf("scan", "w1", "--columns=integer_val", "--aggregate=sum")
                        for _ in range(3)]
                result["W3_agg"] = min(aggs, key=lambda s: s["seconds"])
                result["W3_agg"]["runs_seconds"] = [s["seconds"] for s in aggs]
            if "W4" in want:
                for threads, n in ((1, scale["lookups1"]), (8, scale["lookups8"])):
                    log(f"W4: {n} lookups, {threads} threads")
                    result[f"W4_{threads}_threads"] = c.perf(
                        "lookup", "w1", f"--num_lookups={n}", f"--num_threads={threads}",
                        f"--key_range={rows}", "--perf_seed=1")
            if "W5" in want:
                flush_wait = 200 if args.scale == "full" else 60
                result["W5"] = space(c, lambda on_disk, _: on_disk >= 3 * rows, flush_wait,
                                     "W1's rows to be flushed")
                result["W5"]["replica_rows_written"] = 3 * rows
                # Once the history is older than --tablet_history_max_age_sec, the UNDO GC drops it.
                result["W5_after_history_gc"] = space(
                    c, lambda _, kinds: kinds.get("undo deltas", 0) == 0,
                    history_secs + flush_wait, "the UNDO files to be collected")
            if "W2" in want:
                c.create_table("w2")
                log(f"W2: {rows} rows, AUTO_FLUSH_BACKGROUND")
                result["W2"] = loadgen(c, "w2", rows, "background")
            c.destroy()
            clusters.remove(c)
        if "W6" in want:
            run_w6(args, basalt, root, scale, small_flags, clusters, result)
        result["machine"]["host_after"] = host_probe(basalt, root, probe_ms)
    finally:
        for cl in clusters:
            cl.destroy()
        subprocess.run(["rm", "-rf", root])
    return result


def run_w6(args, basalt, root, scale, small_flags, clusters, result):
    """W6: two writers at the memory limit against one alone; adds result["W6"]."""
    limit_flags = small_flags + [f"--memory_limit_bytes={W6_MEMORY_LIMIT}"]
    w6_rows = scale["w6_rows"]
    # The two runs get clusters of their own at full scale; the small scale shares one.
    c = Cluster(basalt, root, "w6", limit_flags)
    clusters.append(c)
    c.create_table("alone")
    log(f"W6: one writer alone, {w6_rows} rows at the memory limit")
    sampler = RssSampler(c)
    alone = loadgen(c, "alone", w6_rows, "background")
    alone_rss = sampler.finish()
    if args.scale == "full":
        c.destroy()
        clusters.remove(c)
        c = Cluster(basalt, root, "w6-two", limit_flags)
        clusters.append(c)
    c.create_table("a")
    c.create_table("b")
    log(f"W6: two writers, {w6_rows} rows each, at the memory limit")
    sampler = RssSampler(c)
    outs = {}
    start = time.time()
    threads = [threading.Thread(target=lambda t=t: outs.__setitem__(
        t, loadgen(c, t, w6_rows, "background"))) for t in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    secs = time.time() - start
    if len(outs) != 2:
        raise RuntimeError("a W6 writer failed (see above)")
    together = 2 * w6_rows / secs
    result["W6"] = {
        "rows": 2 * w6_rows,
        "seconds": round(secs, 3),
        "rows_per_sec_together": round(together),
        "writer_seconds": [outs["a"]["seconds"], outs["b"]["seconds"]],
        "one_writer_alone_rows_per_sec": alone["rows_per_sec"],
        "share_of_one_writer": round(together / alone["rows_per_sec"], 3),
        "peak_tserver_rss_bytes": sampler.finish(),
        "one_writer_peak_tserver_rss_bytes": alone_rss,
    }


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scale", choices=sorted(SCALES), default="full")
    p.add_argument("--bin_dir", default=os.path.join(os.path.dirname(__file__), "..", "build",
                                                     "bin"),
                   help="where basalt, basalt-master and basalt-tserver are")
    p.add_argument("--workloads", default="W1,W2,W3,W4,W5,W6",
                   help="comma-separated subset to run (W3-W5 load W1's table first)")
    p.add_argument("--work_dir", default=None,
                   help="parent of the scratch directory of the clusters (default: $TMPDIR)")
    args = p.parse_args()
    result = run(args)
    print(json.dumps(result, sort_keys=False))


if __name__ == "__main__":
    main()
