// A write throughput measurement, not run by default (DISABLED_): three TabletServers in one
// process, a hash-partitioned table of 4 tablets replicated 3 times, the benchmark schema of
// issue 6 (key INT32, int_val INT32, non_null_with_default INT32 DEFAULT 12345), sequential keys
// sent in pre-encoded batches by one thread per tablet. Run with
//   tserver_test --gtest_also_run_disabled_tests --gtest_filter='*WriteBench*'
// BASALT_TSERVER_BENCH_ROWS sets the row count (default 2,000,000).

#include <malloc.h>
#include <sys/resource.h>

#include <cstdlib>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/partition.h"
#include "common/status_test_util.h"
#include "tserver/tablet_replica.h"
#include "tserver/ts_tablet_manager.h"
#include "tserver/tserver_test_util.h"

namespace basalt {
namespace {
namespace tserver_write_bench_test_file {

TEST(TserverWriteBench, DISABLED_WriteBench) {
  // As basalt-tserver's main() tunes malloc.
  mallopt(M_ARENA_MAX, 4);
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  const char* env_rows = getenv("BASALT_TSERVER_BENCH_ROWS");
  const int32_t num_rows = env_rows != nullptr ? atoi(env_rows) : 2000000;
  constexpr int kBuckets = 4;
  constexpr int kBatchRows = 20000;
  Schema schema = *Schema::Create(
      {ColumnSchema("key", DataType::kInt32), ColumnSchema("int_val", DataType::kInt32),
       ColumnSchema("non_null_with_default", DataType::kInt32, false, Datum::Int32(12345))},
      1);
  PartitionSchema ps = *PartitionSchema::Create(schema, {{{"key"}, kBuckets, 0}}, {});
  std::vector<Partition> partitions = *ps.CreatePartitions({}, {});
  ASSERT_EQ(partitions.size(), static_cast<size_t>(kBuckets));

  std::vector<std::unique_ptr<TestDir>> dirs;
  std::vector<std::unique_ptr<TabletServer>> servers;
  for (int i = 0; i < 3; ++i) {
    dirs.push_back(std::make_unique<TestDir>(StrCat("tserver_write_bench_", i)));
    TabletServerOptions o = TestServerOptions(dirs.back()->path());
    o.raft_tick_interval_ms = 100;
    o.memory_limit_bytes = 4LL << 30;
    o.block_cache_capacity_bytes = 256 << 20;
    servers.push_back(std::make_unique<TabletServer>(o));
    BASALT_ASSERT_OK(servers.back()->Start());
  }
  std::vector<std::unique_ptr<TsClient>> clients;
  for (auto& s : servers)
    clients.push_back(std::make_unique<TsClient>(s->advertised_address().ToString()));
  for (int b = 0; b < kBuckets; ++b) {
    pb::CreateTabletRequestPB req;
    req.set_table_id("bench");
    req.set_table_name("bench");
    req.set_tablet_id(StrCat("bench-", b));
    schema.ToPB(req.mutable_schema());
    ps.ToPB(req.mutable_partition_schema());
    partitions[b].ToPB(req.mutable_partition());
    for (auto& s : servers) {
      pb::RaftPeerPB* p = req.mutable_config()->add_peers();
      p->set_uuid(s->uuid());
      s->advertised_address().ToPB(p->mutable_address());
    }
    // The first-listed replica campaigns at once: it is created last.
    for (auto c = clients.rbegin(); c != clients.rend(); ++c) {
      BASALT_ASSERT_OK((*c)->CreateTablet(req));
    }
  }
  // Leaders.
  std::vector<int> leader(kBuckets, -1);
  ASSERT_TRUE(WaitFor([&] {
    for (int b = 0; b < kBuckets; ++b) {
      leader[b] = -1;
      for (int i = 0; i < 3; ++i) {
        auto r = *servers[i]->tablet_manager()->Lookup(StrCat("bench-", b));
        if (r->raft()->role() == RaftCore::Role::kLeader && r->GetStatus().last_applied_index > 0) {
          leader[b] = i;
        }
      }
      if (leader[b] < 0) return false;
    }
    return true;
  }));
  // Pre-encode the batches.
  std::vector<std::vector<pb::WriteRequestPB>> batches(kBuckets);
  std::vector<std::unique_ptr<RowOperationsEncoder>> enc(kBuckets);
  std::vector<pb::WriteRequestPB> cur(kBuckets);
  std::vector<int> cur_rows(kBuckets, 0);
  for (int b = 0; b < kBuckets; ++b) {
    cur[b].set_tablet_id(StrCat("bench-", b));
    schema.ToPB(cur[b].mutable_schema());
  }
  for (int32_t k = 0; k < num_rows; ++k) {
    PartialRow row(&schema);
    CHECK(row.SetInt32("key", k).ok());
    CHECK(row.SetInt32("int_val", k).ok());
    const int b = ps.HashBucket(row, 0);
    RowOperationsEncoder(cur[b].mutable_row_operations()).Add(RowOperationType::kInsert, row);
    if (++cur_rows[b] == kBatchRows) {
      batches[b].push_back(cur[b]);
      cur[b].clear_row_operations();
      cur_rows[b] = 0;
    }
  }
  for (int b = 0; b < kBuckets; ++b) {
    if (cur_rows[b] > 0) batches[b].push_back(cur[b]);
  }
  auto cpu_seconds = [] {
    rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
           (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  };
  const double cpu_start = cpu_seconds();
  const absl::Time start = absl::Now();
  std::vector<std::thread> threads;
  std::atomic<int64_t> errors{0};
  for (int b = 0; b < kBuckets; ++b) {
    threads.emplace_back([&, b] {
      TsClient client(servers[leader[b]]->advertised_address().ToString());
      for (const pb::WriteRequestPB& req : batches[b]) {
        pb::WriteResponsePB resp;
        absl::Status s = client.Write(req, &resp);
        if (!s.ok() || resp.per_row_errors_size() > 0) {
          errors.fetch_add(1);
          LOG(ERROR) << s;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  const double secs = absl::ToDoubleSeconds(absl::Now() - start);
  const double cpu = cpu_seconds() - cpu_start;
  EXPECT_EQ(errors.load(), 0);
  // cpu_seconds: all three servers and the client threads (the process), user + system.
  printf("tserver_write_bench rows=%d seconds=%.3f rows_per_sec=%.0f cpu_seconds=%.3f\n", num_rows,
         secs, num_rows / secs, cpu);
}

}  // namespace tserver_write_bench_test_file
}  // namespace
}  // namespace basalt
