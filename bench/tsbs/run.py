#!/usr/bin/env python3
"""`make tsbs`: the TSBS-like benchmark (bench/tsbs/tsbs_bench.cc) against a fresh local cluster.

Starts `basalt local start` (1 master, 3 tablet servers, replication 3) and basalt-tsdbd in a
scratch directory, runs tsbs_bench (load through /write, then each query type with 2 and 4
client threads) and prints one JSON object on stdout: the benchmark's figures and the machine.
Progress goes to stderr. Everything is stopped and removed at the end, also on failure.

--scale=small runs in seconds (the default suite does, so that this keeps working);
--scale=full is 100 hosts over a day (864,000 points, 8.64 M metrics) and 100 queries a type.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import perf  # noqa: E402  (bench/perf.py: Cluster, free_port, log, machine)

SCALES = {
    "small": {"hosts": 5, "hours": 1, "queries": 5},
    "full": {"hosts": 100, "hours": 24, "queries": 100},
}


def wait_ping(port, proc, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"basalt-tsdbd exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/ping", timeout=2) as r:
                if r.status == 204:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError("basalt-tsdbd did not answer /ping")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scale", choices=sorted(SCALES), default="full")
    p.add_argument("--bin_dir", default="build/bin")
    p.add_argument("--work_dir", default=None, help="scratch directory parent (default: /tmp)")
    p.add_argument("--load_workers", type=int, default=4)
    args = p.parse_args()
    scale = SCALES[args.scale]
    basalt = os.path.join(args.bin_dir, "basalt")
    root = tempfile.mkdtemp(prefix="basalt-tsbs-", dir=args.work_dir)
    cluster = None
    tsdbd = None
    try:
        cluster = perf.Cluster(basalt, root, "tsbs")
        port = perf.free_port()
        log_path = os.path.join(root, "tsdbd.log")
        with open(log_path, "w") as log_file:
            tsdbd = subprocess.Popen(
                [os.path.join(args.bin_dir, "basalt-tsdbd"), f"--master_addresses={cluster.master}",
                 f"--http_port={port}", "--http_bind_address=127.0.0.1"],
                stdout=log_file, stderr=subprocess.STDOUT)
        wait_ping(port, tsdbd)
        perf.log(f"TSBS: {scale['hosts']} hosts, {scale['hours']} h, {scale['queries']} "
                 "queries a type")
        out = subprocess.run(
            [os.path.join(args.bin_dir, "tsbs_bench"), f"--port={port}",
             f"--hosts={scale['hosts']}", f"--hours={scale['hours']}",
             f"--queries={scale['queries']}", f"--load_workers={args.load_workers}"],
            capture_output=True, text=True)
        sys.stderr.write(out.stderr)
        if out.returncode != 0:
            raise RuntimeError(f"tsbs_bench exited with {out.returncode}")
        result = json.loads(out.stdout.strip().splitlines()[-1])
        result["scale"] = args.scale
        result["machine"] = perf.machine()
        print(json.dumps(result))
    finally:
        if tsdbd is not None and tsdbd.poll() is None:
            tsdbd.terminate()
            try:
                tsdbd.wait(timeout=30)
            except subprocess.TimeoutExpired:
                tsdbd.kill()
        if cluster is not None:
            cluster.destroy()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
