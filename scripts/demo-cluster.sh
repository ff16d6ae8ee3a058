#!/usr/bin/env bash
# The README's first command (`make cluster`): starts a local cluster (1 master, 3 tablet servers)
# from the built binaries, creates a demo table, loads sample rows, shows a scan, and prints how to
# use and stop it. Safe to run again: a running cluster is restarted from its data, and the demo
# table is created and loaded only once.
#
#   BIN_DIR      where basalt, basalt-master and basalt-tserver are (default: build/bin)
#   CLUSTER_DIR  the cluster's data and logs (default: .basalt-cluster in the clone)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN_DIR=${BIN_DIR:-build/bin}
CLUSTER_DIR=${CLUSTER_DIR:-.basalt-cluster}
basalt="$BIN_DIR/basalt"
table=metrics

# `local start` refuses a running cluster; stopping first makes this command repeatable.
"$basalt" local stop --dir "$CLUSTER_DIR" >/dev/null 2>&1 || true
echo "== starting a local cluster in $CLUSTER_DIR"
master=$("$basalt" local start --dir "$CLUSTER_DIR")

if ! "$basalt" table list "$master" --format=csv | grep -qx "$table\(,.*\)\?"; then
  echo "== creating table $table"
  "$basalt" table create "$master" "CREATE TABLE $table (host STRING, ts UNIXTIME_MICROS,
      value DOUBLE, PRIMARY KEY (host, ts)) PARTITION BY HASH (host) PARTITIONS 4 REPLICAS 3"
  echo "== loading sample rows"
  "$basalt" perf loadgen "$master" --table_name="$table" --num_threads=2 \
      --num_rows_per_thread=50000
fi
echo "== $table has $("$basalt" table count "$master" "$table") rows; the first 5:"
"$basalt" table scan "$master" "$table" --limit=5

cat <<USAGE

A Basalt cluster is running; its master is at $master.
  $basalt table list $master
  $basalt table describe $master $table
  $basalt table scan $master $table --columns=host,value --predicates="value > 0.5" --limit=10
  $basalt --help
Web status pages and /metrics: see "$basalt local status --dir $CLUSTER_DIR" and docs/web.md.
Stop it with:     $basalt local stop --dir $CLUSTER_DIR
Remove its data:  $basalt local destroy --dir $CLUSTER_DIR
USAGE
