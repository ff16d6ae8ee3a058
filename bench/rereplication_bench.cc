// Re-replication (issue 13): a one-tablet table holding about --data_mb of rows (1 KiB string
// payloads) on 3 of 4 tablet servers started as real processes; a replica is then added on the
// fourth (ConsensusService.ChangeConfig ADD_PEER as VOTER: a tablet copy from the leader, then a
// promotion) while a writer keeps inserting. Prints one JSON object: the copy's MB/s, the time
// until the new replica is a voter, and the writer's rows/s without and during the copy
// (target: at least 70% of without).
//
// One writer runs from the end of the load to the end: after --writer_warmup_sec (flushes and
// compactions of what the load wrote reach their steady state), its rate over the next
// --writer_baseline_sec is the rate without a copy; then the replica is added and its rate until
// the new replica votes is the rate during the copy; its rate over --writer_baseline_sec after
// that (four replicas) is printed too.
//
//   build/bench/rereplication_bench [--data_mb=1024] [--writer_warmup_sec=20]
//                                   [--writer_baseline_sec=20] [--copy_max_mb_per_sec=0]
//                                   [--extra_tserver_flags=--tablet_copy_nice=19]

#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include <gflags/gflags.h>
#include <glog/logging.h>
#include <grpcpp/grpcpp.h>

#include "absl/strings/str_split.h"
#include "bench_util.h"
#include "client/client.h"
#include "common/random.h"
#include "common/strings.h"
#include "proto/consensus.grpc.pb.h"
#include "proto/tserver.pb.h"
#include "rpc/rpc_status.h"
#include "testing/external_mini_cluster.h"

DEFINE_int32(data_mb, 1024, "Megabytes of row payload loaded into the tablet before the copy.");
DEFINE_int32(writer_warmup_sec, 20,
             "Seconds the writer runs after the load before its rate is measured.");
DEFINE_int32(writer_baseline_sec, 20,
             "Seconds over which the writer's rate without a copy (and after it) is measured.");
DEFINE_int32(max_copy_wait_sec, 120,
             "Gives up (and says so) when the new replica is not a voter after this long; the "
             "writer stops then too, so a copy that never finishes cannot fill the disk.");
DEFINE_string(cluster_dir, "",
              "Where the cluster's data and logs go (kept afterwards); empty: a temporary "
              "directory, removed at the end.");
DEFINE_string(extra_tserver_flags, "",
              "Comma-separated extra flags for the tablet servers, e.g. --tablet_copy_nice=19.");
DEFINE_int32(copy_max_mb_per_sec, 0,
             "Passed to the tablet servers as --tablet_copy_max_mb_per_sec (0: no limit).");

namespace basalt {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kPayloadBytes = 1024;

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

void CreateTable(client::Client* c) {
  client::SchemaBuilder b;
  b.AddColumn("key")->Type(client::ColumnSchema::INT64)->NotNull()->PrimaryKey();
  b.AddColumn("payload")->Type(client::ColumnSchema::STRING)->NotNull();
  client::Schema schema;
  BENCH_CHECK_OK(b.Build(&schema));
  BENCH_CHECK_OK(c->NewTableCreator()
                     ->table_name("rereplication_bench")
                     .schema(&schema)
                     .set_range_partition_columns({})
                     .num_replicas(3)
                     .Create());
}

// Inserts rows from key `*next` on until `stop`, counting them.
void Write(client::Table* table, client::Client* c, std::atomic<int64_t>* next,
           std::atomic<bool>* stop) {
  auto session = c->NewSession();
  BENCH_CHECK_OK(session->SetFlushMode(client::Session::AUTO_FLUSH_BACKGROUND));
  BENCH_CHECK_OK(session->SetMutationBufferSpace(size_t{32} << 20));
  session->SetTimeoutMillis(120000);
  // Incompressible payloads (1 KiB windows of random bytes), so the copy moves what was written.
  std::string random(kPayloadBytes * 64, '\0');
  Random rng(42);
  for (char& ch : random) ch = static_cast<char>(rng.Next64());
  while (!stop->load()) {
    auto insert = table->NewInsert();
    const int64_t key = next->fetch_add(1);
    BENCH_CHECK_OK(insert->mutable_row()->SetInt64("key", key));
    const size_t offset = static_cast<size_t>(key * 977) % (random.size() - kPayloadBytes);
    BENCH_CHECK_OK(
        insert->mutable_row()->SetString("payload", random.substr(offset, kPayloadBytes)));
    BENCH_CHECK_OK(session->Apply(std::move(insert)));
  }
  const absl::Status flushed = session->Flush();
  if (!flushed.ok()) {
    for (const auto& e : session->GetPendingErrors()) {
      LOG(FATAL) << flushed << "; the first: " << e->status();
    }
  }
  BENCH_CHECK_OK(flushed);
  BENCH_CHECK_OK(session->Close());
}

// Rows/s of a writer running for `seconds`, or until `done` returns true when given.
double MeasureWriter(client::Table* table, client::Client* c, std::atomic<int64_t>* next,
                     double seconds, const std::function<bool()>& done, double* elapsed) {
  std::atomic<bool> stop{false};
  const int64_t first = next->load();
  const Clock::time_point start = Clock::now();
  std::thread writer([&] { Write(table, c, next, &stop); });
  while (done ? !done() : Since(start) < seconds) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  stop = true;
  writer.join();
  *elapsed = Since(start);
  return (next->load() - first) / *elapsed;
}

int VotersOn(ExternalMiniCluster* cluster, int ts, const std::string& tablet) {
  pb::ListTabletsResponsePB listing;
  if (!cluster->ListTablets(ts, &listing).ok()) return 0;
  for (const auto& t : listing.tablets()) {
    if (t.tablet_id() != tablet) continue;
    int voters = 0;
    for (const auto& p : t.config().peers()) voters += p.member_type() == pb::RaftPeerPB::VOTER;
    return t.state() == pb::TABLET_RUNNING && (t.role() == pb::LEADER || t.role() == pb::FOLLOWER)
               ? voters
               : 0;
  }
  return 0;
}

void Run() {
  ExternalMiniClusterOptions opts;
  opts.num_tablet_servers = 4;
  opts.root_dir = FLAGS_cluster_dir;
  opts.extra_tserver_flags.push_back(
      StrCat("--tablet_copy_max_mb_per_sec=", FLAGS_copy_max_mb_per_sec));
  for (const auto& f : absl::StrSplit(FLAGS_extra_tserver_flags, ',', absl::SkipEmpty())) {
    opts.extra_tserver_flags.emplace_back(f);
  }
  ExternalMiniCluster cluster(opts);
  BENCH_CHECK_OK(cluster.Start());
  std::shared_ptr<client::Client> c;
  BENCH_CHECK_OK(
      client::ClientBuilder().add_master_server_addr(cluster.master_addresses()).Build(&c));
  CreateTable(c.get());
  std::shared_ptr<client::Table> table;
  BENCH_CHECK_OK(c->OpenTable("rereplication_bench", &table));

  // Load.
  std::atomic<int64_t> next{0};
  const int64_t rows = int64_t{FLAGS_data_mb} * (1 << 20) / kPayloadBytes;
  double load_seconds = 0;
  MeasureWriter(
      table.get(), c.get(), &next, 0, [&] { return next.load() >= rows; }, &load_seconds);

  // The tablet, its leader and the server without a replica.
  std::string tablet;
  int spare = -1;
  for (int i = 0; i < cluster.num_tablet_servers(); ++i) {
    pb::ListTabletsResponsePB listing;
    BENCH_CHECK_OK(cluster.ListTablets(i, &listing));
    if (listing.tablets_size() == 0) spare = i;
    for (const auto& t : listing.tablets()) tablet = t.tablet_id();
  }
  absl::StatusOr<TabletLeader> leader = cluster.WaitForTabletLeader(tablet, absl::Seconds(30));
  BENCH_CHECK_OK(leader.status());
  // What the copy moves: the leader replica's on-disk bytes (blocks and WAL).
  double disk_mb = 0;
  {
    pb::ListTabletsResponsePB listing;
    BENCH_CHECK_OK(cluster.ListTablets(leader->ts_index, &listing));
    for (const auto& t : listing.tablets()) disk_mb = t.on_disk_size_bytes() / double(1 << 20);
  }

  // One writer from here to the end; rates are differences of its row count over windows.
  std::atomic<bool> stop{false};
  std::thread writer([&] { Write(table.get(), c.get(), &next, &stop); });
  std::this_thread::sleep_for(std::chrono::seconds(FLAGS_writer_warmup_sec));
  auto rate_over = [&](const std::function<bool()>& done, double* seconds) {
    const int64_t first = next.load();
    const Clock::time_point start = Clock::now();
    while (!done()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    *seconds = Since(start);
    return (next.load() - first) / *seconds;
  };
  auto for_seconds = [](int n) {
    const Clock::time_point start = Clock::now();
    return [start, n] { return Since(start) >= n; };
  };
  double baseline_seconds = 0;
  const double baseline = rate_over(for_seconds(FLAGS_writer_baseline_sec), &baseline_seconds);

  // Add the fourth replica while the writer runs; done once every replica sees four voters.
  pb::ChangeConfigRequestPB req;
  req.set_tablet_id(tablet);
  req.set_type(pb::ADD_PEER);
  req.set_peer_uuid(cluster.tablet_server(spare)->uuid());
  req.set_member_type(pb::RaftPeerPB::VOTER);
  req.mutable_peer_address()->set_host("127.0.0.1");
  req.mutable_peer_address()->set_port(cluster.tablet_server(spare)->rpc_port());
  const Clock::time_point added = Clock::now();
  std::thread change([&] {
    auto stub = pb::ConsensusService::NewStub(cluster.tserver_channel(leader->ts_index));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    pb::ChangeConfigResponsePB resp;
    BENCH_CHECK_OK(FromGrpcStatus(stub->ChangeConfig(&ctx, req, &resp)));
  });
  double copy_seconds = 0;
  const double during = rate_over(
      [&] {
        return VotersOn(&cluster, spare, tablet) == 4 || Since(added) > FLAGS_max_copy_wait_sec;
      },
      &copy_seconds);
  change.join();
  double after_seconds = 0;
  const double after = rate_over(for_seconds(FLAGS_writer_baseline_sec), &after_seconds);
  stop = true;
  writer.join();
  if (VotersOn(&cluster, spare, tablet) != 4) {
    std::printf("{\"benchmark\": \"rereplication\", \"error\": \"no voter after %d s\"}\n",
                FLAGS_max_copy_wait_sec);
    BENCH_CHECK_OK(cluster.Shutdown());
    return;
  }
  const double data_mb = static_cast<double>(rows) * kPayloadBytes / (1 << 20);
  std::printf(
      "{\"benchmark\": \"rereplication\", \"data_mb\": %.0f, \"replica_disk_mb\": %.0f, "
      "\"load_seconds\": %.1f, "
      "\"seconds_to_voter\": %.2f, \"copy_mb_per_sec\": %.1f, \"writer_rows_per_sec_alone\": %.0f, "
      "\"writer_rows_per_sec_during_copy\": %.0f, \"writer_ratio\": %.2f, "
      "\"writer_rows_per_sec_after\": %.0f, \"copy_max_mb_per_sec\": %d}\n",
      data_mb, disk_mb, load_seconds, copy_seconds, disk_mb / copy_seconds, baseline, during,
      during / baseline, after, FLAGS_copy_max_mb_per_sec);
  BENCH_CHECK_OK(cluster.Shutdown());
}

}  // namespace
}  // namespace basalt

int main(int argc, char** argv) { return basalt::BenchMain(argc, argv, basalt::Run); }
