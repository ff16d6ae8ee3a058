// KuduTable: a Basalt Table plus its schema as a KuduSchema; factories for write operations
// and predicates.

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compat/kudu/internal.h"

namespace kudu {
namespace client {

namespace bc = basalt::client;
using internal::Access;

bc::Predicate::ComparisonOp ToBasaltOp(KuduPredicate::ComparisonOp op) {
  switch (op) {
    case KuduPredicate::LESS_EQUAL:
      return bc::Predicate::LESS_EQUAL;
    case KuduPredicate::GREATER_EQUAL:
      return bc::Predicate::GREATER_EQUAL;
    case KuduPredicate::EQUAL:
      return bc::Predicate::EQUAL;
    case KuduPredicate::LESS:
      return bc::Predicate::LESS;
    case KuduPredicate::GREATER:
      return bc::Predicate::GREATER;
  }
  return bc::Predicate::EQUAL;  // Unreachable.
}

class KuduTable::Data {
 public:
  sp::shared_ptr<KuduClient> client;
  std::shared_ptr<bc::Table> table;
  KuduSchema schema;
  // The scale of the named column when it is a DECIMAL, else 0 (for binding KuduValues).
  int ScaleOf(const Slice& col_name) const {
    const bc::Schema& s = Access::Basalt(schema);
    const int idx = s.FindColumn(View(col_name));
    if (idx < 0) return 0;
    const bc::ColumnSchema c = s.Column(idx);
    return c.type() == bc::ColumnSchema::DECIMAL ? c.scale() : 0;
  }
};

KuduTable::KuduTable(Data* data) : data_(data) {}
KuduTable::~KuduTable() { delete data_; }

const std::string& KuduTable::name() const { return data_->table->name(); }
const std::string& KuduTable::id() const { return data_->table->id(); }
const KuduSchema& KuduTable::schema() const { return data_->schema; }
const std::string& KuduTable::comment() const {
  static const std::string kEmpty;
  return kEmpty;
}
int KuduTable::num_replicas() const { return data_->table->num_replicas(); }
const std::string& KuduTable::owner() const { return comment(); }
KuduClient* KuduTable::client() const { return data_->client.get(); }
const std::map<std::string, std::string>& KuduTable::extra_configs() const {
  static const std::map<std::string, std::string> kEmpty;
  return kEmpty;
}

KuduInsert* KuduTable::NewInsert() {
  return new KuduInsert(shared_from_this(), data_->table->NewInsert().release());
}
KuduInsertIgnore* KuduTable::NewInsertIgnore() {
  return new KuduInsertIgnore(shared_from_this(), data_->table->NewInsertIgnore().release());
}
KuduUpsert* KuduTable::NewUpsert() {
  return new KuduUpsert(shared_from_this(), data_->table->NewUpsert().release());
}
// UPSERT IGNORE differs from UPSERT only for immutable columns, which Basalt lacks.
KuduUpsertIgnore* KuduTable::NewUpsertIgnore() {
  return new KuduUpsertIgnore(shared_from_this(), data_->table->NewUpsert().release());
}
KuduUpdate* KuduTable::NewUpdate() {
  return new KuduUpdate(shared_from_this(), data_->table->NewUpdate().release());
}
KuduUpdateIgnore* KuduTable::NewUpdateIgnore() {
  return new KuduUpdateIgnore(shared_from_this(), data_->table->NewUpdateIgnore().release());
}
KuduDelete* KuduTable::NewDelete() {
  return new KuduDelete(shared_from_this(), data_->table->NewDelete().release());
}
KuduDeleteIgnore* KuduTable::NewDeleteIgnore() {
  return new KuduDeleteIgnore(shared_from_this(), data_->table->NewDeleteIgnore().release());
}

KuduPredicate* KuduTable::NewComparisonPredicate(const Slice& col_name,
                                                 KuduPredicate::ComparisonOp op, KuduValue* value) {
  std::unique_ptr<KuduValue> owned(value);
  bc::Value v = bc::Value::FromInt(0);
  absl::Status s = Access::Data(*owned).ToBasalt(data_->ScaleOf(col_name), &v);
  if (!s.ok()) return Access::MakePredicate(nullptr, std::move(s));
  return Access::MakePredicate(
      data_->table->NewComparisonPredicate(std::string(View(col_name)), ToBasaltOp(op), v));
}

KuduPredicate* KuduTable::NewInListPredicate(const Slice& col_name,
                                             std::vector<KuduValue*>* values) {
  std::vector<std::unique_ptr<KuduValue>> owned;
  for (KuduValue* v : *values) owned.emplace_back(v);
  values->clear();
  const int scale = data_->ScaleOf(col_name);
  std::vector<bc::Value> list;
  for (const auto& kv : owned) {
    bc::Value v = bc::Value::FromInt(0);
    absl::Status s = Access::Data(*kv).ToBasalt(scale, &v);
    if (!s.ok()) return Access::MakePredicate(nullptr, std::move(s));
    list.push_back(std::move(v));
  }
  return Access::MakePredicate(data_->table->NewInListPredicate(std::string(View(col_name)), list));
}

KuduPredicate* KuduTable::NewIsNotNullPredicate(const Slice& col_name) {
  return Access::MakePredicate(data_->table->NewIsNotNullPredicate(std::string(View(col_name))));
}

KuduPredicate* KuduTable::NewIsNullPredicate(const Slice& col_name) {
  return Access::MakePredicate(data_->table->NewIsNullPredicate(std::string(View(col_name))));
}

namespace internal {

sp::shared_ptr<KuduTable> Access::MakeTable(sp::shared_ptr<KuduClient> client,
                                            std::shared_ptr<bc::Table> table) {
  auto* d = new KuduTable::Data;
  d->client = std::move(client);
  d->schema = MakeSchema(table->schema());
  d->table = std::move(table);
  return sp::shared_ptr<KuduTable>(new KuduTable(d));
}

bc::Table* Access::Basalt(const KuduTable* table) { return table->data_->table.get(); }

}  // namespace internal
}  // namespace client
}  // namespace kudu
