// Raft replication over loopback gRPC: 3 RaftNodes in one process, each behind its own
// GrpcTransport, with real WALs (fsync on, --log_force_fsync_all) and default timeouts.
//   1. Throughput: many concurrent proposers (a closed loop of async proposals) against the
//      leader, for 100-byte and 64 KiB entries: committed (applied on the leader) entries/s, MB/s.
//   2. Failover: kill the leader (its node and gRPC server), time until a new leader commits its
//      first entry; restart the old one; repeat.
// Prints one JSON object:
//   ./build/bench/raft_bench [--raft_bench_dir=/tmp] [--raft_bench_seconds=3]
//                            [--raft_bench_failover_trials=20]

#include <malloc.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gflags/gflags.h>
#include <glog/logging.h>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/env.h"
#include "common/strings.h"
#include "consensus/loopback_raft_cluster.h"

DEFINE_string(raft_bench_dir, "/tmp", "Directory under which the benchmark creates its WALs.");
DEFINE_double(raft_bench_seconds, 3.0, "Measured duration of each throughput configuration.");
DEFINE_int32(raft_bench_small_concurrency, 4000,
             "Proposals kept in flight in the 100-byte throughput run.");
DEFINE_int32(raft_bench_large_concurrency, 64,
             "Proposals kept in flight in the 64 KiB throughput run.");
DEFINE_int32(raft_bench_failover_trials, 20, "Number of leader kills in the failover run.");
DEFINE_bool(raft_bench_tune_malloc, true,
            "Whether to raise glibc malloc's mmap and trim thresholds, as a daemon would.");
DEFINE_bool(raft_bench_fsync, true,
            "Whether the WALs fsync (the default, durable); false shows what the disk costs.");

namespace basalt {
namespace {

constexpr absl::Duration kTimeout = absl::Seconds(60);

std::string MakeDir(const std::string& name) {
  std::string tmpl = JoinPath(FLAGS_raft_bench_dir, StrCat("raft_bench_", name, ".XXXXXX"));
  CHECK(mkdtemp(tmpl.data()) != nullptr) << tmpl;
  return tmpl;
}

std::unique_ptr<LoopbackRaftCluster> StartCluster(const std::string& dir) {
  LoopbackRaftClusterOptions o;
  o.root_dir = dir;
  o.seed = static_cast<uint64_t>(absl::ToUnixNanos(absl::Now()));
  o.force_fsync = FLAGS_raft_bench_fsync;
  auto c = LoopbackRaftCluster::Start(o);
  CHECK(c.ok()) << c.status();
  return std::move(*c);
}

GrpcTransport::Stats SumStats(const LoopbackRaftCluster& c) {
  GrpcTransport::Stats sum;
  for (int i = 0; i < c.num_servers(); ++i) {
    if (!c.alive(i)) continue;
    GrpcTransport::Stats s = c.transport(i)->stats();
    sum.rpcs_sent += s.rpcs_sent;
    sum.messages_sent += s.messages_sent;
  }
  return sum;
}

std::string Throughput(size_t entry_bytes, int concurrency) {
  const std::string dir = MakeDir(StrCat("tput", entry_bytes));
  std::string json;
  {
    std::unique_ptr<LoopbackRaftCluster> c = StartCluster(dir);
    const int leader = c->WaitForLeader(0, kTimeout);
    CHECK_GE(leader, 0) << "no leader";
    RaftNode* node = c->node(leader, 0);
    ProposalLoad load(node, concurrency, entry_bytes, -1, /*record=*/false);
    load.Start();
    // Warm up (connections, allocator, page cache), then measure.
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    const int64_t acked0 = load.num_acked();
    const int64_t syncs0 = node->log().num_syncs();
    const GrpcTransport::Stats rpc0 = SumStats(*c);
    const absl::Time t0 = absl::Now();
    std::this_thread::sleep_for(std::chrono::duration<double>(FLAGS_raft_bench_seconds));
    const int64_t entries = load.num_acked() - acked0;
    const double secs = absl::ToDoubleSeconds(absl::Now() - t0);
    const int64_t syncs = node->log().num_syncs() - syncs0;
    const GrpcTransport::Stats rpc1 = SumStats(*c);
    load.Stop();
    CHECK(load.Wait(kTimeout)) << "proposals still in flight";
    CHECK_EQ(load.num_failed(), 0) << "leadership changed during the run";
    const int64_t rpcs = rpc1.rpcs_sent - rpc0.rpcs_sent;
    json = StrCat(
        "{\"entry_bytes\": ", entry_bytes, ", \"concurrency\": ", concurrency,
        ", \"seconds\": ", secs, ", \"entries\": ", entries,
        ", \"entries_per_sec\": ", static_cast<int64_t>(entries / secs),
        ", \"mb_per_sec\": ", entries * entry_bytes / secs / 1e6,
        ", \"leader_fsyncs_per_sec\": ", static_cast<int64_t>(syncs / secs),
        ", \"entries_per_leader_fsync\": ", syncs > 0 ? entries / syncs : 0,
        ", \"rpcs_per_sec\": ", static_cast<int64_t>(rpcs / secs), ", \"messages_per_rpc\": ",
        rpcs > 0 ? static_cast<double>(rpc1.messages_sent - rpc0.messages_sent) / rpcs : 0.0, "}");
  }
  CHECK(Env::Default()->DeleteDirRecursively(dir).ok());
  return json;
}

// Kills the leader and returns the time until a new leader's commit index passes the old one.
double OneFailover(LoopbackRaftCluster* c) {
  const int leader = c->WaitForLeader(0, kTimeout);
  CHECK_GE(leader, 0) << "no leader";
  RaftNode* node = c->node(leader, 0);
  CHECK(node->ProposeAndWait("before the kill", kTimeout).ok());
  const uint64_t old_term = node->term();
  const uint64_t old_commit = node->commit_index();
  const absl::Time killed = absl::Now();
  c->KillServer(leader);
  while (true) {
    for (int i = 0; i < c->num_servers(); ++i) {
      if (!c->alive(i)) continue;
      const RaftNode* n = c->node(i, 0);
      if (n->role() == RaftCore::Role::kLeader && n->term() > old_term &&
          n->commit_index() > old_commit) {
        const double ms = absl::ToDoubleMilliseconds(absl::Now() - killed);
        CHECK(c->RestartServer(leader).ok());
        return ms;
      }
    }
    CHECK_LT(absl::Now() - killed, kTimeout) << "no new commit after killing the leader";
    std::this_thread::sleep_for(std::chrono::microseconds(500));  // Polling resolution.
  }
}

std::string Failover(int trials) {
  const std::string dir = MakeDir("failover");
  std::vector<double> ms;
  {
    std::unique_ptr<LoopbackRaftCluster> c = StartCluster(dir);
    for (int t = 0; t < trials; ++t) ms.push_back(OneFailover(c.get()));
  }
  CHECK(Env::Default()->DeleteDirRecursively(dir).ok());
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  if (n == 0) return "{\"trials\": 0}";
  const double median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  std::string all;
  for (double v : ms) StrAppend(&all, all.empty() ? "" : ", ", static_cast<int64_t>(v));
  return StrCat("{\"trials\": ", n, ", \"median_ms\": ", static_cast<int64_t>(median),
                ", \"max_ms\": ", static_cast<int64_t>(sorted.back()),
                ", \"min_ms\": ", static_cast<int64_t>(sorted.front()), ", \"trials_ms\": [", all,
                "]}");
}

}  // namespace
}  // namespace basalt

int main(int argc, char** argv) {
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  if (FLAGS_raft_bench_tune_malloc) {
    // Buffers of a few MiB (WAL groups, serialized RPCs, parsed batches) are above glibc's mmap
    // threshold, and freed heap tops get trimmed: every such buffer was mapped, page-faulted in
    // (4 KiB at a time) and unmapped again, which cost 3-4x on 64 KiB entries. A daemon sets the
    // same (or links a caching allocator such as tcmalloc).
    mallopt(M_MMAP_THRESHOLD, 256 << 20);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
  }
  google::InitGoogleLogging(argv[0]);
  using basalt::StrCat;
  const std::string small = basalt::Throughput(100, FLAGS_raft_bench_small_concurrency);
  const std::string large = basalt::Throughput(64 << 10, FLAGS_raft_bench_large_concurrency);
  const std::string failover = basalt::Failover(FLAGS_raft_bench_failover_trials);
  std::printf("%s\n", StrCat("{\"benchmark\": \"raft_bench\", \"replicas\": 3, \"transport\": "
                             "\"grpc-loopback\", \"fsync\": ",
                             FLAGS_raft_bench_fsync ? "true" : "false", ", \"malloc_tuned\": ",
                             FLAGS_raft_bench_tune_malloc ? "true" : "false", ", \"throughput\": [",
                             small, ", ", large, "], \"failover\": ", failover, "}")
                          .c_str());
  return 0;
}
