// CatalogManager's DDL: CreateTable, DeleteTable, AlterTable, and their remembered answers
// (exactly-once DDL) (catalog_manager.h).

#include <algorithm>
#include <utility>

#include <gflags/gflags.h>
#include <glog/logging.h>

#include "common/arena.h"
#include "common/row_operations.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "common/types.h"
#include "master/catalog_manager.h"
#include "master/master_errors.h"
#include "proto/master.pb.h"
#include "proto/master_catalog.pb.h"
#include "server/server_instance.h"

DEFINE_int32(default_num_replicas, 3,
             "Replication factor of a new table whose CreateTable request gives 0.");
DEFINE_int32(max_num_replicas, 7, "Largest replication factor a table may have.");
DEFINE_int32(max_create_tablets_per_ts, 60,
             "CreateTable refuses tables with more replicas than this times the number of live "
             "tablet servers.");
DEFINE_int64(remember_ddl_responses_ttl_ms, 3600 * 1000,
             "How long the master keeps the answer of a CreateTable, AlterTable or DeleteTable "
             "request that carried a request id, so that a retry gets the first answer instead "
             "of executing again (exactly-once DDL), unless the client's watermark releases it "
             "earlier. A retry after that executes again.");

namespace basalt {

namespace {

constexpr size_t kMaxTableNameLength = 256;
// As the tablet servers' limit: client ids are 32 hex digits; this bounds the stored keys.
constexpr size_t kMaxClientIdBytes = 128;
// Expired DDL answers deleted per catalog batch, so that a backlog never makes one huge entry.
constexpr int kMaxExpiredDdlAnswersPerBatch = 1000;

absl::Status ValidateTableName(const std::string& name, std::string_view field) {
  if (name.empty()) return absl::InvalidArgumentError(StrCat(field, ": empty table name"));
  if (name.size() > kMaxTableNameLength) {
    return absl::InvalidArgumentError(
        StrCat(field, ": table name longer than ", kMaxTableNameLength, " bytes"));
  }
  if (Utf8Length(name) < 0) {
    return absl::InvalidArgumentError(StrCat(field, ": table name is not valid UTF-8"));
  }
  for (unsigned char c : name) {
    if (c < 0x20 || c == 0x7f) {
      return absl::InvalidArgumentError(StrCat(field, ": table name contains a control character"));
    }
  }
  return absl::OkStatus();
}

// The schema of a new table: columns as given (ids ignored), fresh ids 0..n-1, version 0.
absl::StatusOr<Schema> NewTableSchema(const pb::SchemaPB& pb) {
  std::vector<ColumnSchema> columns;
  int num_key = 0;
  for (const pb::ColumnSchemaPB& c : pb.columns()) {
    if (c.is_key()) {
      if (num_key != static_cast<int>(columns.size())) {
        return absl::InvalidArgumentError(
            StrCat("schema: key column '", c.name(), "' follows a non-key column"));
      }
      ++num_key;
    }
    auto col = Schema::ColumnFromPB(c);
    if (!col.ok()) return PrependToStatus(col.status(), "schema");
    columns.push_back(*std::move(col));
  }
  auto schema = Schema::Create(std::move(columns), num_key);
  if (!schema.ok()) return PrependToStatus(schema.status(), "schema");
  return schema;
}

struct DecodedRanges {
  std::vector<PartialRow> split_rows;
  std::vector<RangeBounds> bounds;
};

bool IsLowerBound(RowOperationType t) {
  return t == RowOperationType::kRangeLowerBound ||
         t == RowOperationType::kExclusiveRangeLowerBound;
}
bool IsUpperBound(RowOperationType t) {
  return t == RowOperationType::kRangeUpperBound ||
         t == RowOperationType::kInclusiveRangeUpperBound;
}

// Decodes split rows and lower/upper bound pairs encoded against `schema` (which must outlive
// the result). INVALID_ARGUMENT naming `field` for a malformed payload, a write operation, an
// unpaired bound, or a split row when !allow_split_rows.
absl::StatusOr<DecodedRanges> DecodeRanges(const Schema& schema, const pb::RowOperationsPB& ops,
                                           bool allow_split_rows, std::string_view field) {
  Arena arena;
  RowOperationsDecoder decoder(&schema, &arena);
  std::vector<DecodedRowOperation> decoded;
  BASALT_RETURN_IF_ERROR_PREPEND(decoder.Decode(ops, &decoded), field);
  DecodedRanges out;
  for (size_t i = 0; i < decoded.size(); ++i) {
    const RowOperationType t = decoded[i].type;
    if (t == RowOperationType::kSplitRow && allow_split_rows) {
      out.split_rows.push_back(decoded[i].ToPartialRow());
      continue;
    }
    if (!IsLowerBound(t)) {
      return absl::InvalidArgumentError(StrCat(field, ": row operation ", i, " (",
                                               RowOperationTypeName(t), ") is not allowed here"));
    }
    if (i + 1 == decoded.size() || !IsUpperBound(decoded[i + 1].type)) {
      return absl::InvalidArgumentError(
          StrCat(field, ": row operation ", i, " is a lower bound not followed by an upper bound"));
    }
    out.bounds.push_back(
        RangeBounds{decoded[i].ToPartialRow(), decoded[i + 1].ToPartialRow(),
                    t == RowOperationType::kRangeLowerBound,
                    decoded[i + 1].type == RowOperationType::kInclusiveRangeUpperBound});
    ++i;
  }
  return out;
}

// Exactly one range (one lower/upper pair).
absl::StatusOr<RangeBounds> DecodeOneRange(const Schema& schema, const pb::RowOperationsPB& ops,
                                           std::string_view field) {
  BASALT_ASSIGN_OR_RETURN(DecodedRanges r, DecodeRanges(schema, ops, false, field));
  if (r.bounds.size() != 1) {
    return absl::InvalidArgumentError(StrCat(
        field, ": expected one lower and one upper bound, got ", r.bounds.size(), " ranges"));
  }
  return std::move(r.bounds[0]);
}

absl::StatusOr<int> ResolveNumReplicas(int requested) {
  const int n = requested == 0 ? FLAGS_default_num_replicas : requested;
  if (n < 1 || n % 2 == 0) {
    return absl::InvalidArgumentError(
        StrCat("num_replicas: the replication factor must be odd and positive, got ", n));
  }
  if (n > FLAGS_max_num_replicas) {
    return absl::InvalidArgumentError(StrCat("num_replicas: the replication factor ", n,
                                             " exceeds the maximum ", FLAGS_max_num_replicas));
  }
  return n;
}

int64_t NowWallMicros(Clock* clock) { return clock->NowMicros(); }

}  // namespace

absl::Status CatalogManager::BeginCatalogWriteLocked() {
  BASALT_RETURN_IF_ERROR(CheckReady());
  SysCatalog* catalog = sys_catalog_.load();
  if (catalog->writes_in_flight() > 0) {
    // Memory may lack an earlier write that can still commit: validating against it could
    // admit a conflicting one (two tables of one name, two alters from one schema version).
    return MasterError(
        absl::UnavailableError("an earlier catalog write is still in flight; retry shortly"),
        pb::ErrorDetailPB::CATALOG_NOT_READY);
  }
  write_term_ = catalog->LeaderReadyTerm();
  if (write_term_ == 0) {
    absl::Status why = CheckReady();  // Lost it in between: the error says why.
    return why.ok() ? MasterError(absl::UnavailableError("the catalog leadership just changed"),
                                  pb::ErrorDetailPB::CATALOG_NOT_READY)
                    : why;
  }
  return absl::OkStatus();
}

absl::Status CatalogManager::WriteCatalog(const pb::SysCatalogWriteBatchPB& batch) {
  SysCatalog* catalog = sys_catalog_.load();
  if (catalog == nullptr) return absl::FailedPreconditionError("no sys catalog");
  absl::Status s = catalog->Write(batch, options_.write_timeout, write_term_);
  // Whatever failed (refused, overwritten, in doubt), if leadership moved the client should try
  // the new leader: answer NOT_THE_LEADER_MASTER / CATALOG_NOT_READY, which it retries.
  if (!s.ok() && catalog->LeaderReadyTerm() != write_term_) {
    LOG(WARNING) << "catalog write of term " << write_term_ << " failed as leadership moved: " << s;
    absl::Status why = CheckReady();
    if (!why.ok()) return why;
    return MasterError(absl::UnavailableError(StrCat("the catalog leadership changed during the "
                                                     "write (",
                                                     s.message(), ")")),
                       pb::ErrorDetailPB::CATALOG_NOT_READY);
  }
  BASALT_RETURN_IF_ERROR(s);
  Kick();
  return absl::OkStatus();
}

absl::Status CatalogManager::CheckNameFree(const std::string& name) const {
  absl::MutexLock l(&mu_);
  if (table_ids_by_name_.contains(name)) {
    return absl::AlreadyExistsError(StrCat("table '", name, "' already exists"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::vector<std::string>>> CatalogManager::PlaceReplicas(
    int num_tablets, int num_replicas) {
  std::vector<TsDescriptor> live = ts_manager_->GetLive();
  if (static_cast<int>(live.size()) < num_replicas) {
    // A master that took the catalog leadership lately may not have heard from every tablet
    // server yet (they back off from a master they could not reach): retriable until a server
    // could have been declared not live anyway.
    const absl::Duration tenure = LeaderTenure(write_term_);
    if (tenure < ts_manager_->unresponsive_timeout()) {
      return MasterError(absl::UnavailableError(
                             StrCat("only ", live.size(),
                                    " tablet servers have reported to this master since it took "
                                    "the catalog leadership ",
                                    absl::FormatDuration(absl::Trunc(tenure, absl::Seconds(1))),
                                    " ago; ", num_replicas, " are needed: retry shortly")),
                         pb::ErrorDetailPB::CATALOG_NOT_READY);
    }
    return absl::InvalidArgumentError(StrCat("num_replicas: not enough live tablet servers for ",
                                             num_replicas, " replicas per tablet: ", live.size(),
                                             " live"));
  }
  std::map<std::string, int64_t> load;
  // Tablets led by each server: the leader its replicas reported, else (a tablet whose leader
  // has not been reported yet) the first-listed replica, which campaigns first.
  std::map<std::string, int64_t> leaders;
  {
    absl::MutexLock l(&mu_);
    for (const auto& [id, tablet] : tablets_) {
      if (tablet->deleted()) continue;
      for (const auto& peer : tablet->pb.config().peers()) ++load[peer.uuid()];
      std::string leader;
      if (LeaderReportLocked(id, &leader) != nullptr) {
        ++leaders[leader];
      } else if (tablet->pb.config().peers_size() > 0) {
        ++leaders[tablet->pb.config().peers(0).uuid()];
      }
    }
  }
  std::vector<PlacementPolicy::Candidate> candidates;
  for (const TsDescriptor& d : live) candidates.push_back({d.uuid, load[d.uuid]});
  std::vector<std::vector<std::string>> out;
  for (int i = 0; i < num_tablets; ++i) {
    BASALT_ASSIGN_OR_RETURN(auto chosen, placement_.PlaceTablet(&candidates, num_replicas));
    PlacementPolicy::PutLeaderFirst(&chosen, &leaders);
    out.push_back(std::move(chosen));
  }
  return out;
}

absl::Status CatalogManager::AddNewTablets(const std::string& table_id,
                                           const std::vector<Partition>& partitions,
                                           int num_replicas, pb::SysCatalogWriteBatchPB* batch) {
  if (partitions.empty()) return absl::OkStatus();
  const int64_t live = ts_manager_->NumLive();
  if (static_cast<int64_t>(partitions.size()) * num_replicas >
      static_cast<int64_t>(FLAGS_max_create_tablets_per_ts) * std::max<int64_t>(live, 1)) {
    return absl::InvalidArgumentError(
        StrCat("too many tablets: ", partitions.size(), " tablets x ", num_replicas,
               " replicas exceeds --max_create_tablets_per_ts=", FLAGS_max_create_tablets_per_ts,
               " per live tablet server (", live, " live)"));
  }
  BASALT_ASSIGN_OR_RETURN(auto placement,
                          PlaceReplicas(static_cast<int>(partitions.size()), num_replicas));
  for (size_t i = 0; i < partitions.size(); ++i) {
    pb::SysTabletEntryPB* t = batch->add_upsert_tablets();
    t->set_tablet_id(GenerateUuid());
    t->set_table_id(table_id);
    partitions[i].ToPB(t->mutable_partition());
    for (const std::string& uuid : placement[i]) {
      pb::RaftPeerPB* peer = t->mutable_config()->add_peers();
      peer->set_uuid(uuid);
      peer->set_member_type(pb::RaftPeerPB::VOTER);
      std::optional<TsDescriptor> d = ts_manager_->Get(uuid);
      if (d.has_value()) d->rpc_address.ToPB(peer->mutable_address());
    }
    t->set_state(pb::SysTabletEntryPB::CREATING);
  }
  return absl::OkStatus();
}

absl::Status CatalogManager::CreateTable(const pb::CreateTableRequestPB& req,
                                         pb::CreateTableResponsePB* resp) {
  absl::MutexLock ddl(&ddl_mu_);
  BASALT_RETURN_IF_ERROR(BeginCatalogWriteLocked());
  // Before any validation: a retry of a request that took effect would find its name taken.
  BASALT_ASSIGN_OR_RETURN(
      const bool answered,
      FindDdlAnswerLocked(req.request_id(), pb::SysDdlAnswerEntryPB::CREATE_TABLE, resp));
  if (answered) return absl::OkStatus();
  BASALT_RETURN_IF_ERROR(ValidateTableName(req.name(), "name"));
  BASALT_ASSIGN_OR_RETURN(Schema schema, NewTableSchema(req.schema()));
  auto ps = PartitionSchema::FromPB(req.partition_schema(), schema);
  if (!ps.ok()) return PrependToStatus(ps.status(), "partition_schema");
  BASALT_ASSIGN_OR_RETURN(const int num_replicas, ResolveNumReplicas(req.num_replicas()));
  BASALT_ASSIGN_OR_RETURN(DecodedRanges ranges, DecodeRanges(schema, req.split_rows_range_bounds(),
                                                             true, "split_rows_range_bounds"));
  auto partitions = ps->CreatePartitions(ranges.split_rows, ranges.bounds);
  if (!partitions.ok()) return PrependToStatus(partitions.status(), "split_rows_range_bounds");
  BASALT_RETURN_IF_ERROR(CheckNameFree(req.name()));
  pb::SysCatalogWriteBatchPB batch;
  pb::SysTableEntryPB* table = batch.add_upsert_tables();
  table->set_table_id(GenerateUuid());
  table->set_name(req.name());
  schema.ToPB(table->mutable_schema());
  ps->ToPB(table->mutable_partition_schema());
  table->set_num_replicas(num_replicas);
  table->set_state(pb::SysTableEntryPB::CREATING);
  table->set_create_time_micros(NowWallMicros(clock_));
  table->set_update_time_micros(table->create_time_micros());
  BASALT_RETURN_IF_ERROR(AddNewTablets(table->table_id(), *partitions, num_replicas, &batch));
  pb::CreateTableResponsePB answer;
  answer.set_table_id(table->table_id());
  AddDdlAnswer(req.request_id(), pb::SysDdlAnswerEntryPB::CREATE_TABLE, answer, &batch);
  BASALT_RETURN_IF_ERROR(WriteCatalog(batch));
  LOG(INFO) << "created table " << req.name() << " (" << table->table_id() << ") with "
            << partitions->size() << " tablets x " << num_replicas << " replicas";
  *resp = std::move(answer);
  return absl::OkStatus();
}

absl::Status CatalogManager::DeleteTable(const pb::DeleteTableRequestPB& req,
                                         pb::DeleteTableResponsePB* resp) {
  absl::MutexLock ddl(&ddl_mu_);
  BASALT_RETURN_IF_ERROR(BeginCatalogWriteLocked());
  // Before looking the table up: a retry of a request that took effect would not find it.
  BASALT_ASSIGN_OR_RETURN(
      const bool answered,
      FindDdlAnswerLocked(req.request_id(), pb::SysDdlAnswerEntryPB::DELETE_TABLE, resp));
  if (answered) return absl::OkStatus();
  BASALT_ASSIGN_OR_RETURN(auto table, FindTable(req.table()));
  pb::SysCatalogWriteBatchPB batch;
  pb::SysTableEntryPB* t = batch.add_upsert_tables();
  *t = table->pb;
  t->set_state(pb::SysTableEntryPB::DELETED);
  t->set_update_time_micros(NowWallMicros(clock_));
  for (const auto& tablet : GetTablets(table->id())) {
    pb::SysTabletEntryPB* e = batch.add_upsert_tablets();
    *e = tablet->pb;
    e->set_state(pb::SysTabletEntryPB::DELETED);
  }
  AddDdlAnswer(req.request_id(), pb::SysDdlAnswerEntryPB::DELETE_TABLE, pb::DeleteTableResponsePB(),
               &batch);
  BASALT_RETURN_IF_ERROR(WriteCatalog(batch));
  LOG(INFO) << "deleted table " << table->name() << " (" << table->id() << ")";
  resp->Clear();
  return absl::OkStatus();
}

namespace {

// The state of a table while AlterTable applies its steps.
struct AlterWork {
  Schema schema;
  bool schema_changed = false;
  // The table's partitions after the steps so far; tablet_ids[i] is empty for a new partition.
  std::vector<Partition> partitions;
  std::vector<std::string> tablet_ids;
  std::vector<std::string> dropped_tablet_ids;
};

absl::Status ApplyAlterStep(const TableInfo& table, const pb::AlterTableRequestPB::StepPB& step,
                            std::string_view field, AlterWork* w) {
  using StepPB = pb::AlterTableRequestPB::StepPB;
  const std::string prefix(field);
  switch (step.step_case()) {
    case StepPB::kAddColumn: {
      if (step.add_column().column().is_key()) {
        return absl::InvalidArgumentError(StrCat(prefix, "cannot add a key column"));
      }
      auto col = Schema::ColumnFromPB(step.add_column().column());
      if (!col.ok()) return PrependToStatus(col.status(), prefix);
      auto s = w->schema.AddColumn(*col);
      if (!s.ok()) return PrependToStatus(s.status(), prefix);
      w->schema = *std::move(s);
      w->schema_changed = true;
      return absl::OkStatus();
    }
    case StepPB::kDropColumn: {
      auto s = w->schema.DropColumn(step.drop_column().name());
      if (!s.ok()) return PrependToStatus(s.status(), prefix);
      w->schema = *std::move(s);
      w->schema_changed = true;
      return absl::OkStatus();
    }
    case StepPB::kRenameColumn: {
      auto s =
          w->schema.RenameColumn(step.rename_column().old_name(), step.rename_column().new_name());
      if (!s.ok()) return PrependToStatus(s.status(), prefix);
      w->schema = *std::move(s);
      w->schema_changed = true;
      return absl::OkStatus();
    }
    case StepPB::kAddRangePartition: {
      // Bounds are encoded against the table's schema before this request.
      BASALT_ASSIGN_OR_RETURN(
          RangeBounds b,
          DecodeOneRange(table.schema, step.add_range_partition().range_bounds(), field));
      auto parts = table.partition_schema.PartitionsForNewRange(w->partitions, b);
      if (!parts.ok()) return PrependToStatus(parts.status(), prefix);
      for (Partition& p : *parts) {
        w->partitions.push_back(std::move(p));
        w->tablet_ids.emplace_back();
      }
      return absl::OkStatus();
    }
    case StepPB::kDropRangePartition: {
      BASALT_ASSIGN_OR_RETURN(
          RangeBounds b,
          DecodeOneRange(table.schema, step.drop_range_partition().range_bounds(), field));
      auto parts = table.partition_schema.PartitionsForDroppedRange(w->partitions, b);
      if (!parts.ok()) return PrependToStatus(parts.status(), prefix);
      for (const Partition& p : *parts) {
        auto it = std::find(w->partitions.begin(), w->partitions.end(), p);
        if (it == w->partitions.end()) continue;
        const size_t i = it - w->partitions.begin();
        if (!w->tablet_ids[i].empty()) w->dropped_tablet_ids.push_back(w->tablet_ids[i]);
        w->partitions.erase(it);
        w->tablet_ids.erase(w->tablet_ids.begin() + i);
      }
      return absl::OkStatus();
    }
    case StepPB::STEP_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError(StrCat(prefix, "no step is set"));
}

}  // namespace

absl::Status CatalogManager::AlterTable(const pb::AlterTableRequestPB& req,
                                        pb::AlterTableResponsePB* resp) {
  absl::MutexLock ddl(&ddl_mu_);
  BASALT_RETURN_IF_ERROR(BeginCatalogWriteLocked());
  // Before any validation: a retry of a request that took effect would find its column added,
  // its range partition there or the table renamed.
  BASALT_ASSIGN_OR_RETURN(
      const bool answered,
      FindDdlAnswerLocked(req.request_id(), pb::SysDdlAnswerEntryPB::ALTER_TABLE, resp));
  if (answered) return absl::OkStatus();
  if (req.steps_size() == 0 && req.new_table_name().empty()) {
    return absl::InvalidArgumentError("steps: nothing to alter (no steps and no new_table_name)");
  }
  if (!req.new_table_name().empty()) {
    BASALT_RETURN_IF_ERROR(ValidateTableName(req.new_table_name(), "new_table_name"));
  }
  BASALT_ASSIGN_OR_RETURN(auto table, FindTable(req.table()));
  AlterWork w{table->schema};
  for (const auto& tablet : GetTablets(table->id())) {
    w.partitions.push_back(tablet->partition);
    w.tablet_ids.push_back(tablet->id());
  }
  for (int i = 0; i < req.steps_size(); ++i) {
    BASALT_RETURN_IF_ERROR(ApplyAlterStep(*table, req.steps(i), StrCat("steps[", i, "]"), &w));
  }
  const bool renamed = !req.new_table_name().empty() && req.new_table_name() != table->name();
  if (renamed) BASALT_RETURN_IF_ERROR(CheckNameFree(req.new_table_name()));

  pb::SysCatalogWriteBatchPB batch;
  pb::SysTableEntryPB* t = batch.add_upsert_tables();
  *t = table->pb;
  if (renamed) t->set_name(req.new_table_name());
  if (w.schema_changed || renamed) {
    // One version step per request, whatever the number of steps.
    w.schema.ToPB(t->mutable_schema());
    t->mutable_schema()->set_version(table->schema_version() + 1);
  }
  // A table still being created stays CREATING (its transition also waits for the alter).
  if (t->state() != pb::SysTableEntryPB::CREATING) t->set_state(pb::SysTableEntryPB::ALTERING);
  t->set_update_time_micros(NowWallMicros(clock_));
  std::vector<Partition> added;
  for (size_t i = 0; i < w.partitions.size(); ++i) {
    if (w.tablet_ids[i].empty()) added.push_back(w.partitions[i]);
  }
  BASALT_RETURN_IF_ERROR(AddNewTablets(table->id(), added, table->pb.num_replicas(), &batch));
  for (const std::string& id : w.dropped_tablet_ids) {
    pb::SysTabletEntryPB* e = batch.add_upsert_tablets();
    {
      absl::MutexLock l(&mu_);
      *e = tablets_.at(id)->pb;
    }
    e->set_state(pb::SysTabletEntryPB::DELETED);
  }
  // Validate what will be stored exactly as a load would.
  BASALT_RETURN_IF_ERROR(TableInfoFromPB(*t).status());
  pb::AlterTableResponsePB answer;
  answer.set_table_id(t->table_id());
  answer.set_schema_version(t->schema().version());
  AddDdlAnswer(req.request_id(), pb::SysDdlAnswerEntryPB::ALTER_TABLE, answer, &batch);
  BASALT_RETURN_IF_ERROR(WriteCatalog(batch));
  LOG(INFO) << "altered table " << t->name() << " (" << t->table_id() << "): schema version "
            << t->schema().version() << ", " << added.size() << " tablets added, "
            << w.dropped_tablet_ids.size() << " dropped";
  *resp = std::move(answer);
  return absl::OkStatus();
}

// ---- Exactly-once DDL ---------------------------------------------------------------------------

absl::StatusOr<bool> CatalogManager::FindDdlAnswerLocked(const pb::RequestIdPB& id,
                                                         pb::SysDdlAnswerEntryPB::Method method,
                                                         google::protobuf::Message* resp) {
  if (id.client_id().empty()) return false;  // No id: every attempt executes.
  if (id.client_id().size() > kMaxClientIdBytes) {
    return absl::InvalidArgumentError(
        StrCat("request_id.client_id: longer than ", kMaxClientIdBytes, " bytes"));
  }
  // A request is incomplete while it runs: a watermark above it would release its own answer.
  if (id.first_incomplete_seq_no() > id.seq_no()) {
    return absl::InvalidArgumentError(StrCat("request_id: first_incomplete_seq_no ",
                                             id.first_incomplete_seq_no(), " is above seq_no ",
                                             id.seq_no()));
  }
  const std::string what = StrCat("request ", id.seq_no(), " of client '", id.client_id(), "'");
  std::string response;
  {
    absl::MutexLock l(&mu_);
    const pb::SysDdlAnswerEntryPB* entry = nullptr;
    switch (ddl_answers_.Find(id, &entry)) {
      case DdlAnswers::Lookup::kNew:
        return false;
      case DdlAnswers::Lookup::kStale:
        return absl::FailedPreconditionError(
            StrCat(what, " is below the client's watermark: it completed before"));
      case DdlAnswers::Lookup::kAnswered:
        break;
    }
    if (entry->method() != method) {
      return absl::InvalidArgumentError(StrCat(
          "request_id: ", what, " was a ", pb::SysDdlAnswerEntryPB::Method_Name(entry->method()),
          ", not a ", pb::SysDdlAnswerEntryPB::Method_Name(method)));
    }
    response = entry->response();
  }
  // Parsed here, not when loaded: a damaged answer fails its retries, not the master.
  if (!resp->ParseFromString(response)) {
    return absl::DataLossError(StrCat("the stored answer to ", what, " (catalog entry '",
                                      SysDdlAnswerKey(id.client_id(), id.seq_no()),
                                      "') does not parse"));
  }
  LOG(INFO) << "answering a retry of " << pb::SysDdlAnswerEntryPB::Method_Name(method) << " "
            << what << " with its first answer";
  return true;
}

void CatalogManager::AddDdlAnswer(const pb::RequestIdPB& id, pb::SysDdlAnswerEntryPB::Method method,
                                  const google::protobuf::Message& resp,
                                  pb::SysCatalogWriteBatchPB* batch) {
  if (id.client_id().empty()) return;
  pb::SysDdlAnswerEntryPB* a = batch->add_upsert_ddl_answers();
  *a->mutable_request_id() = id;
  a->set_method(method);
  a->set_response(resp.SerializeAsString());
  a->set_write_time_micros(NowWallMicros(clock_));
  absl::MutexLock l(&mu_);
  ddl_answers_.AddReleased(id, batch);
}

void CatalogManager::AddExpiredDdlAnswersLocked(pb::SysCatalogWriteBatchPB* batch) {
  const int64_t cutoff = NowWallMicros(clock_) - FLAGS_remember_ddl_responses_ttl_ms * 1000;
  const int n = ddl_answers_.AddExpired(cutoff, kMaxExpiredDdlAnswersPerBatch, batch);
  LOG_IF(INFO, n > 0) << "forgetting " << n << " DDL answers older than "
                      << FLAGS_remember_ddl_responses_ttl_ms << " ms";
}

// ---- Tablet server states ----------------------------------------------------------------------

absl::Status CatalogManager::ChangeTServerState(const pb::ChangeTServerStateRequestPB& req) {
  if (req.ts_uuid().empty()) return absl::InvalidArgumentError("ts_uuid: empty");
  if (req.change() != pb::ChangeTServerStateRequestPB::ENTER_MAINTENANCE_MODE &&
      req.change() != pb::ChangeTServerStateRequestPB::EXIT_MAINTENANCE_MODE) {
    return absl::InvalidArgumentError(
        StrCat("change: unknown change ", static_cast<int>(req.change())));
  }
  if (!ts_manager_->Get(req.ts_uuid()).has_value()) {
    return absl::NotFoundError(
        StrCat("ts_uuid: no tablet server ", req.ts_uuid(), " has registered with this master"));
  }
  absl::MutexLock ddl(&ddl_mu_);
  BASALT_RETURN_IF_ERROR(BeginCatalogWriteLocked());
  const bool enter = req.change() == pb::ChangeTServerStateRequestPB::ENTER_MAINTENANCE_MODE;
  {
    absl::MutexLock l(&mu_);
    if (maintenance_.contains(req.ts_uuid()) == enter) return absl::OkStatus();
  }
  pb::SysCatalogWriteBatchPB batch;
  if (enter) {
    pb::SysTServerStateEntryPB* e = batch.add_upsert_tserver_states();
    e->set_ts_uuid(req.ts_uuid());
    e->set_state(pb::SysTServerStateEntryPB::MAINTENANCE_MODE);
    e->set_update_time_micros(NowWallMicros(clock_));
  } else {
    batch.add_delete_tserver_state_ids(req.ts_uuid());
  }
  BASALT_RETURN_IF_ERROR(WriteCatalog(batch));
  LOG(INFO) << "tablet server " << req.ts_uuid() << (enter ? " entered" : " left")
            << " maintenance mode";
  return absl::OkStatus();
}

}  // namespace basalt
