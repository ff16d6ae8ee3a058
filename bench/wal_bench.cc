// WAL append throughput on the real file system with fsync on: N concurrent appenders each append
// one 100-byte entry at a time and wait for its durability callback (like Raft proposers), so
// throughput comes from group commit. Prints one JSON object per configuration:
//   ./build/bench/wal_bench [--wal_bench_dir=/tmp] [--wal_bench_seconds=2]

#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <gflags/gflags.h>
#include <glog/logging.h>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "common/env.h"
#include "consensus/log.h"

DEFINE_string(wal_bench_dir, "/tmp", "Directory under which the benchmark creates its WAL.");
DEFINE_double(wal_bench_seconds, 2.0, "Duration of each configuration of the benchmark.");
DEFINE_int32(wal_bench_entry_bytes, 100, "Size of each appended entry's data.");

namespace basalt {
namespace {

struct Result {
  int64_t entries = 0;
  int64_t syncs = 0;
  double seconds = 0;
};

Result RunOne(const std::string& dir, int appenders) {
  LogOptions options = LogOptions::FromFlags();
  options.force_fsync = true;
  std::unique_ptr<Log> log = Log::Open(Env::Default(), dir, options).value();
  CHECK(log->Start().ok());
  absl::Mutex mu;
  uint64_t next_index = 1;
  std::atomic<bool> stop{false};
  std::atomic<int64_t> acked{0};
  const std::string data(FLAGS_wal_bench_entry_bytes, 'x');
  auto appender = [&] {
    while (!stop.load(std::memory_order_relaxed)) {
      absl::Notification done;
      {
        absl::MutexLock l(&mu);
        LogEntry e;
        e.index = next_index++;
        e.term = 1;
        e.data = data;
        absl::Status s = log->AsyncAppend({std::move(e)}, [&](const absl::Status& st) {
          CHECK(st.ok()) << st;
          done.Notify();
        });
        CHECK(s.ok()) << s;
      }
      done.WaitForNotification();
      acked.fetch_add(1, std::memory_order_relaxed);
    }
  };
  const int64_t syncs_before = log->num_syncs();
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int i = 0; i < appenders; ++i) threads.emplace_back(appender);
  std::this_thread::sleep_for(std::chrono::duration<double>(FLAGS_wal_bench_seconds));
  stop = true;
  for (std::thread& t : threads) t.join();
  Result r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.entries = acked.load();
  r.syncs = log->num_syncs() - syncs_before;
  log.reset();
  CHECK(Env::Default()->DeleteDirRecursively(dir).ok());
  return r;
}

}  // namespace
}  // namespace basalt

int main(int argc, char** argv) {
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  std::string tmpl = basalt::JoinPath(FLAGS_wal_bench_dir, "basalt_wal_bench.XXXXXX");
  CHECK(mkdtemp(tmpl.data()) != nullptr) << "mkdtemp " << tmpl;
  for (int appenders : {1, 8, 64}) {
    const std::string dir = basalt::JoinPath(tmpl, std::to_string(appenders));
    const basalt::Result r = basalt::RunOne(dir, appenders);
    std::printf(
        "{\"benchmark\": \"wal_append_fsync\", \"entry_bytes\": %d, \"appenders\": %d, "
        "\"entries\": %lld, \"seconds\": %.3f, \"entries_per_sec\": %.0f, \"fsyncs_per_sec\": "
        "%.0f, \"entries_per_fsync\": %.1f}\n",
        FLAGS_wal_bench_entry_bytes, appenders, static_cast<long long>(r.entries), r.seconds,
        r.entries / r.seconds, r.syncs / r.seconds,
        r.syncs > 0 ? static_cast<double>(r.entries) / r.syncs : 0.0);
    std::fflush(stdout);
  }
  CHECK(basalt::Env::Default()->DeleteDir(tmpl).ok());
  return 0;
}
