// Table, WriteOperation and Predicate.

#include <utility>

#include "client/client.h"
#include "client/client_internal.h"
#include "client/meta_cache.h"
#include "common/row_operations.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "proto/common.pb.h"

namespace basalt::client {

using internal::Access;

// ---- Table
// ---------------------------------------------------------------------------------------

Table::Table(std::unique_ptr<Data> data) : data_(std::move(data)) {}
Table::~Table() = default;

std::shared_ptr<Table> Access::MakeTable(std::unique_ptr<Table::Data> data) {
  return std::shared_ptr<Table>(new Table(std::move(data)));
}

const std::string& Table::name() const { return data_->name; }
const std::string& Table::id() const { return data_->id; }
const Schema& Table::schema() const { return data_->schema; }
int Table::num_replicas() const { return data_->num_replicas; }
Client* Table::client() const { return data_->client.get(); }

std::unique_ptr<WriteOperation> Access::NewOperation(std::shared_ptr<Table> table,
                                                     WriteOperation::Type type) {
  switch (type) {
    case WriteOperation::INSERT:
      return std::unique_ptr<WriteOperation>(new Insert(std::move(table)));
    case WriteOperation::UPDATE:
      return std::unique_ptr<WriteOperation>(new Update(std::move(table)));
    case WriteOperation::DELETE:
      return std::unique_ptr<WriteOperation>(new Delete(std::move(table)));
    case WriteOperation::UPSERT:
      return std::unique_ptr<WriteOperation>(new Upsert(std::move(table)));
    case WriteOperation::INSERT_IGNORE:
      return std::unique_ptr<WriteOperation>(new InsertIgnore(std::move(table)));
    case WriteOperation::UPDATE_IGNORE:
      return std::unique_ptr<WriteOperation>(new UpdateIgnore(std::move(table)));
    case WriteOperation::DELETE_IGNORE:
      return std::unique_ptr<WriteOperation>(new DeleteIgnore(std::move(table)));
  }
  return nullptr;
}

std::unique_ptr<Insert> Table::NewInsert() {
  return std::unique_ptr<Insert>(new Insert(shared_from_this()));
}
std::unique_ptr<Upsert> Table::NewUpsert() {
  return std::unique_ptr<Upsert>(new Upsert(shared_from_this()));
}
std::unique_ptr<Update> Table::NewUpdate() {
  return std::unique_ptr<Update>(new Update(shared_from_this()));
}
std::unique_ptr<Delete> Table::NewDelete() {
  return std::unique_ptr<Delete>(new Delete(shared_from_this()));
}
std::unique_ptr<InsertIgnore> Table::NewInsertIgnore() {
  return std::unique_ptr<InsertIgnore>(new InsertIgnore(shared_from_this()));
}
std::unique_ptr<UpdateIgnore> Table::NewUpdateIgnore() {
  return std::unique_ptr<UpdateIgnore>(new UpdateIgnore(shared_from_this()));
}
std::unique_ptr<DeleteIgnore> Table::NewDeleteIgnore() {
  return std::unique_ptr<DeleteIgnore>(new DeleteIgnore(shared_from_this()));
}

// ---- WriteOperation
// ------------------------------------------------------------------------------

WriteOperation::WriteOperation(std::shared_ptr<Table> table, Type type)
    : table_(std::move(table)), type_(type), row_(&table_->schema()) {}
WriteOperation::~WriteOperation() = default;
Insert::~Insert() = default;
Update::~Update() = default;
Delete::~Delete() = default;
Upsert::~Upsert() = default;
InsertIgnore::~InsertIgnore() = default;
UpdateIgnore::~UpdateIgnore() = default;
DeleteIgnore::~DeleteIgnore() = default;

std::string WriteOperation::TypeToString(Type type) {
  return RowOperationTypeName(static_cast<RowOperationType>(type));
}

std::string WriteOperation::ToString() const {
  return StrCat(TypeToString(type_), " ", row_.ToString());
}

// ---- Predicate
// -----------------------------------------------------------------------------------

struct Predicate::Data {
  absl::StatusOr<ColumnPredicate> pred;
};

Predicate::Predicate(std::unique_ptr<Data> data) : data_(std::move(data)) {}
Predicate::~Predicate() = default;

std::unique_ptr<Predicate> Predicate::Clone() const { return Access::MakePredicate(data_->pred); }

const absl::Status& Predicate::status() const { return data_->pred.status(); }

std::string Predicate::ToString() const {
  return data_->pred.ok() ? data_->pred->ToString() : data_->pred.status().ToString();
}

std::unique_ptr<Predicate> Access::MakePredicate(absl::StatusOr<ColumnPredicate> pred) {
  auto d = std::make_unique<Predicate::Data>();
  d->pred = std::move(pred);
  return std::unique_ptr<Predicate>(new Predicate(std::move(d)));
}

const absl::StatusOr<ColumnPredicate>& Access::Internal(const Predicate& pred) {
  return pred.data_->pred;
}

namespace {

absl::StatusOr<const basalt::ColumnSchema*> FindColumn(const Table& table,
                                                       const std::string& name) {
  const basalt::Schema& s = Access::Internal(table.schema());
  int idx = s.find_column(name);
  if (idx < 0) {
    return absl::NotFoundError(StrCat("table '", table.name(), "' has no column '", name, "'"));
  }
  return &s.column(idx);
}

absl::StatusOr<ColumnPredicate> Comparison(const Table& table, const std::string& column,
                                           Predicate::ComparisonOp op, const Value& value) {
  BASALT_ASSIGN_OR_RETURN(const basalt::ColumnSchema* col, FindColumn(table, column));
  BASALT_ASSIGN_OR_RETURN(Datum d, Access::ToDatum(value, *col));
  static constexpr ColumnPredicate::Op kOps[] = {
      ColumnPredicate::Op::kLess, ColumnPredicate::Op::kLessEqual, ColumnPredicate::Op::kEqual,
      ColumnPredicate::Op::kGreaterEqual, ColumnPredicate::Op::kGreater};
  if (op < Predicate::LESS || op > Predicate::GREATER) {
    return absl::InvalidArgumentError(StrCat("unknown comparison operator ", static_cast<int>(op)));
  }
  return ColumnPredicate::Comparison(*col, kOps[op], d);
}

absl::StatusOr<ColumnPredicate> InList(const Table& table, const std::string& column,
                                       const std::vector<Value>& values) {
  BASALT_ASSIGN_OR_RETURN(const basalt::ColumnSchema* col, FindColumn(table, column));
  std::vector<Datum> datums;
  for (const Value& v : values) {
    BASALT_ASSIGN_OR_RETURN(Datum d, Access::ToDatum(v, *col));
    datums.push_back(std::move(d));
  }
  return ColumnPredicate::InList(*col, std::move(datums));
}

absl::StatusOr<ColumnPredicate> NullCheck(const Table& table, const std::string& column,
                                          bool is_null) {
  BASALT_ASSIGN_OR_RETURN(const basalt::ColumnSchema* col, FindColumn(table, column));
  return is_null ? ColumnPredicate::IsNull(*col) : ColumnPredicate::IsNotNull(*col);
}

}  // namespace

std::unique_ptr<Predicate> Table::NewComparisonPredicate(const std::string& column,
                                                         Predicate::ComparisonOp op,
                                                         const Value& value) {
  return Access::MakePredicate(Comparison(*this, column, op, value));
}
std::unique_ptr<Predicate> Table::NewInListPredicate(const std::string& column,
                                                     const std::vector<Value>& values) {
  return Access::MakePredicate(InList(*this, column, values));
}
std::unique_ptr<Predicate> Table::NewIsNullPredicate(const std::string& column) {
  return Access::MakePredicate(NullCheck(*this, column, true));
}
std::unique_ptr<Predicate> Table::NewIsNotNullPredicate(const std::string& column) {
  return Access::MakePredicate(NullCheck(*this, column, false));
}

}  // namespace basalt::client
