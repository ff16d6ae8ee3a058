// KuduTableCreator and KuduTableAlterer: Basalt's TableCreator and TableAlterer, taking
// ownership of Kudu rows and specs, and refusing (NotSupported, at Create/Alter) the table
// properties Basalt does not have.

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compat/kudu/internal.h"

namespace kudu {
namespace client {

namespace bc = basalt::client;
using internal::Access;

bc::TableCreator::RangePartitionBound ToBasaltBound(KuduTableCreator::RangePartitionBound b) {
  return b == KuduTableCreator::INCLUSIVE_BOUND ? bc::TableCreator::INCLUSIVE_BOUND
                                                : bc::TableCreator::EXCLUSIVE_BOUND;
}

namespace {

// Keeps the first property Basalt cannot store.
void Refuse(absl::Status* s, const std::string& what) {
  if (s->ok()) *s = absl::UnimplementedError(what + " is not supported by Basalt");
}

}  // namespace

// ---- KuduTableCreator -------------------------------------------------------------------------

class KuduTableCreator::Data {
 public:
  std::unique_ptr<bc::TableCreator> creator;
  absl::Status unsupported;
};

KuduTableCreator::KuduTableCreator(KuduClient* client) : data_(new Data) {
  data_->creator = Access::Basalt(client)->NewTableCreator();
}
KuduTableCreator::~KuduTableCreator() { delete data_; }

KuduTableCreator& KuduTableCreator::table_name(const std::string& name) {
  data_->creator->table_name(name);
  return *this;
}
KuduTableCreator& KuduTableCreator::schema(const KuduSchema* schema) {
  data_->creator->schema(&Access::Basalt(*schema));
  return *this;
}
KuduTableCreator& KuduTableCreator::add_hash_partitions(const std::vector<std::string>& columns,
                                                        int32_t num_buckets) {
  return add_hash_partitions(columns, num_buckets, 0);
}
KuduTableCreator& KuduTableCreator::add_hash_partitions(const std::vector<std::string>& columns,
                                                        int32_t num_buckets, int32_t seed) {
  data_->creator->add_hash_partitions(columns, num_buckets, seed);
  return *this;
}
KuduTableCreator& KuduTableCreator::set_range_partition_columns(
    const std::vector<std::string>& columns) {
  data_->creator->set_range_partition_columns(columns);
  return *this;
}
KuduTableCreator& KuduTableCreator::add_range_partition(KuduPartialRow* lower_bound,
                                                        KuduPartialRow* upper_bound,
                                                        RangePartitionBound lower_bound_type,
                                                        RangePartitionBound upper_bound_type) {
  data_->creator->add_range_partition(Access::TakeRow(lower_bound), Access::TakeRow(upper_bound),
                                      ToBasaltBound(lower_bound_type),
                                      ToBasaltBound(upper_bound_type));
  return *this;
}
KuduTableCreator& KuduTableCreator::add_range_partition_split(KuduPartialRow* split_row) {
  data_->creator->add_range_partition_split(Access::TakeRow(split_row));
  return *this;
}
KuduTableCreator& KuduTableCreator::set_owner(const std::string& owner) {
  if (!owner.empty()) Refuse(&data_->unsupported, "a table owner");
  return *this;
}
KuduTableCreator& KuduTableCreator::set_comment(const std::string& comment) {
  if (!comment.empty()) Refuse(&data_->unsupported, "a table comment");
  return *this;
}
KuduTableCreator& KuduTableCreator::split_rows(
    const std::vector<const KuduPartialRow*>& split_rows) {
  for (const KuduPartialRow* row : split_rows) {
    add_range_partition_split(const_cast<KuduPartialRow*>(row));
  }
  return *this;
}
KuduTableCreator& KuduTableCreator::num_replicas(int n_replicas) {
  data_->creator->num_replicas(n_replicas);
  return *this;
}
KuduTableCreator& KuduTableCreator::dimension_label(const std::string& dimension_label) {
  return *this;
}
KuduTableCreator& KuduTableCreator::extra_configs(
    const std::map<std::string, std::string>& extra_configs) {
  if (!extra_configs.empty()) Refuse(&data_->unsupported, "extra table configuration");
  return *this;
}
KuduTableCreator& KuduTableCreator::timeout(const MonoDelta& timeout) {
  data_->creator->timeout(ToMillis(timeout));
  return *this;
}
KuduTableCreator& KuduTableCreator::wait(bool wait) {
  data_->creator->wait(wait);
  return *this;
}

Status KuduTableCreator::Create() {
  KUDU_RETURN_NOT_OK(FromAbsl(data_->unsupported));
  return FromAbsl(data_->creator->Create());
}

// ---- KuduTableAlterer -------------------------------------------------------------------------

class KuduTableAlterer::Data {
 public:
  std::unique_ptr<bc::TableAlterer> alterer;
  std::vector<ColumnSpecPtr> specs;
  absl::Status unsupported;
};

KuduTableAlterer::KuduTableAlterer(KuduClient* client, const std::string& name) : data_(new Data) {
  data_->alterer = Access::Basalt(client)->NewTableAlterer(name);
}
KuduTableAlterer::~KuduTableAlterer() { delete data_; }

KuduTableAlterer* KuduTableAlterer::RenameTo(const std::string& new_name) {
  data_->alterer->RenameTo(new_name);
  return this;
}
KuduTableAlterer* KuduTableAlterer::SetOwner(const std::string& new_owner) {
  Refuse(&data_->unsupported, "a table owner");
  return this;
}
KuduTableAlterer* KuduTableAlterer::SetComment(const std::string& new_comment) {
  Refuse(&data_->unsupported, "a table comment");
  return this;
}
KuduColumnSpec* KuduTableAlterer::AddColumn(const std::string& name) {
  data_->specs.emplace_back(Access::MakeSpec(data_->alterer->AddColumn(name), name));
  return data_->specs.back().get();
}
KuduColumnSpec* KuduTableAlterer::AlterColumn(const std::string& name) {
  data_->specs.emplace_back(Access::MakeSpec(data_->alterer->AlterColumn(name), name));
  return data_->specs.back().get();
}
KuduTableAlterer* KuduTableAlterer::DropColumn(const std::string& name) {
  data_->alterer->DropColumn(name);
  return this;
}
KuduTableAlterer* KuduTableAlterer::AddRangePartition(
    KuduPartialRow* lower_bound, KuduPartialRow* upper_bound,
    KuduTableCreator::RangePartitionBound lower_bound_type,
    KuduTableCreator::RangePartitionBound upper_bound_type) {
  data_->alterer->AddRangePartition(Access::TakeRow(lower_bound), Access::TakeRow(upper_bound),
                                    ToBasaltBound(lower_bound_type),
                                    ToBasaltBound(upper_bound_type));
  return this;
}
KuduTableAlterer* KuduTableAlterer::AddRangePartitionWithDimension(
    KuduPartialRow* lower_bound, KuduPartialRow* upper_bound, const std::string& dimension_label,
    KuduTableCreator::RangePartitionBound lower_bound_type,
    KuduTableCreator::RangePartitionBound upper_bound_type) {
  return AddRangePartition(lower_bound, upper_bound, lower_bound_type, upper_bound_type);
}
KuduTableAlterer* KuduTableAlterer::DropRangePartition(
    KuduPartialRow* lower_bound, KuduPartialRow* upper_bound,
    KuduTableCreator::RangePartitionBound lower_bound_type,
    KuduTableCreator::RangePartitionBound upper_bound_type) {
  data_->alterer->DropRangePartition(Access::TakeRow(lower_bound), Access::TakeRow(upper_bound),
                                     ToBasaltBound(lower_bound_type),
                                     ToBasaltBound(upper_bound_type));
  return this;
}
KuduTableAlterer* KuduTableAlterer::AlterExtraConfig(
    const std::map<std::string, std::string>& extra_configs) {
  Refuse(&data_->unsupported, "extra table configuration");
  return this;
}
KuduTableAlterer* KuduTableAlterer::SetTableDiskSizeLimit(int64_t disk_size_limit) {
  Refuse(&data_->unsupported, "a table disk size limit");
  return this;
}
KuduTableAlterer* KuduTableAlterer::SetTableRowCountLimit(int64_t row_count_limit) {
  Refuse(&data_->unsupported, "a table row count limit");
  return this;
}
KuduTableAlterer* KuduTableAlterer::timeout(const MonoDelta& timeout) {
  data_->alterer->timeout(ToMillis(timeout));
  return this;
}
KuduTableAlterer* KuduTableAlterer::wait(bool wait) {
  data_->alterer->wait(wait);
  return this;
}

Status KuduTableAlterer::Alter() {
  KUDU_RETURN_NOT_OK(FromAbsl(data_->unsupported));
  for (const ColumnSpecPtr& spec : data_->specs) {
    KUDU_RETURN_NOT_OK(FromAbsl(Access::Data(spec.get())->Finish()));
  }
  return FromAbsl(data_->alterer->Alter());
}

}  // namespace client
}  // namespace kudu
