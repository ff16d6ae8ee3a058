#pragma once

// Internals of the Kudu-compatible client (not installed): the Data classes behind the public
// pimpls, the conversions between Kudu and Basalt types, and Access, the one friend of every
// public class. Each Data holds the Basalt object it wraps; the Kudu classes add only what Kudu's
// API needs on top (ownership transfer, error conversion, Kudu-numbered enums).

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "client/client.h"
#include "compat/kudu/callback_runner.h"
#include "compat/kudu/status_convert.h"
#include "kudu/client/client.h"

namespace kudu {
namespace client {

inline std::string_view View(const Slice& s) {
  return std::string_view(reinterpret_cast<const char*>(s.data()), s.size());
}
inline Slice ToSlice(std::string_view s) { return Slice(s.data(), s.size()); }
inline std::chrono::milliseconds ToMillis(const MonoDelta& d) {
  return std::chrono::milliseconds(d.ToMilliseconds());
}

// Type and enum numbering: Kudu's and Basalt's differ.
basalt::client::ColumnSchema::DataType ToBasaltType(KuduColumnSchema::DataType type);
KuduColumnSchema::DataType FromBasaltType(basalt::client::ColumnSchema::DataType type);
basalt::client::ColumnStorageAttributes::EncodingType ToBasaltEncoding(
    KuduColumnStorageAttributes::EncodingType encoding);
basalt::client::ColumnStorageAttributes::CompressionType ToBasaltCompression(
    KuduColumnStorageAttributes::CompressionType compression);
basalt::client::Predicate::ComparisonOp ToBasaltOp(KuduPredicate::ComparisonOp op);
basalt::client::TableCreator::RangePartitionBound ToBasaltBound(
    KuduTableCreator::RangePartitionBound bound);

class KuduValue::Data {
 public:
  explicit Data(basalt::client::Value v) : value(std::move(v)) {}
  // The value bound to a column of `column_scale` (only DECIMAL values depend on it):
  // InvalidArgument when a decimal cannot be expressed exactly at that scale or beyond 64 bits.
  absl::Status ToBasalt(int column_scale, basalt::client::Value* out) const;

  basalt::client::Value value;
  bool is_decimal = false;
  int128_t decimal = 0;  // Unscaled, when is_decimal.
  int8_t scale = 0;
};

class KuduPredicate::Data {
 public:
  Data(std::unique_ptr<basalt::client::Predicate> p, absl::Status e)
      : pred(std::move(p)), error(std::move(e)) {}
  std::unique_ptr<basalt::client::Predicate> pred;  // Null when `error` is set.
  absl::Status error;  // Why a value could not be bound (Basalt's own errors are in `pred`).
};

class KuduSchema::Data {
 public:
  basalt::client::Schema schema;
};

class KuduColumnSchema::Data {
 public:
  basalt::client::ColumnSchema column;
};

// Deletes a KuduColumnSpec (whose destructor is private to its friends).
struct ColumnSpecDeleter {
  void operator()(KuduColumnSpec* spec) const;
};
using ColumnSpecPtr = std::unique_ptr<KuduColumnSpec, ColumnSpecDeleter>;

class KuduColumnSpec::Data {
 public:
  Data(basalt::client::ColumnSpec* s, std::string name) : spec(s), spec_name(std::move(name)) {}
  // Hands the pending default to the Basalt spec; returns the first unsupported request.
  absl::Status Finish();

  basalt::client::ColumnSpec* spec;  // Owned by the Basalt builder or alterer.
  std::string spec_name;             // The column's name, for messages.
  std::unique_ptr<KuduValue> default_value;
  int scale = 0;
  absl::Status unsupported;  // First request Basalt cannot honour.
};

namespace internal {

// The one friend of the public classes: builds them from Basalt objects and reaches their
// internals.
struct Access {
  static KuduSchema MakeSchema(const basalt::client::Schema& schema);
  static const basalt::client::Schema& Basalt(const KuduSchema& schema) {
    return schema.data_->schema;
  }
  static basalt::client::Schema* Mutable(KuduSchema* schema) { return &schema->data_->schema; }
  static KuduColumnSchema MakeColumn(const basalt::client::ColumnSchema& column);
  static const basalt::client::ColumnSchema& Basalt(const KuduColumnSchema& column) {
    return column.data_->column;
  }
  static KuduColumnStorageAttributes MakeStorage(
      const basalt::client::ColumnStorageAttributes& storage);
  static KuduColumnTypeAttributes MakeTypeAttributes(int precision, int scale, int length) {
    return KuduColumnTypeAttributes(static_cast<int8_t>(precision), static_cast<int8_t>(scale),
                                    static_cast<uint16_t>(length));
  }

  static KuduColumnSpec* MakeSpec(basalt::client::ColumnSpec* spec, const std::string& name) {
    return new KuduColumnSpec(new KuduColumnSpec::Data(spec, name));
  }
  static void DeleteSpec(KuduColumnSpec* spec) { delete spec; }
  static KuduColumnSpec::Data* Data(KuduColumnSpec* spec) { return spec->data_; }

  static const KuduValue::Data& Data(const KuduValue& value) { return *value.data_; }
  static KuduValue* MakeValue(KuduValue::Data* data) { return new KuduValue(data); }
  static KuduPredicate* MakePredicate(std::unique_ptr<basalt::client::Predicate> pred,
                                      absl::Status error = absl::OkStatus()) {
    return new KuduPredicate(new KuduPredicate::Data(std::move(pred), std::move(error)));
  }
  static KuduPredicate::Data* Data(KuduPredicate* pred) { return pred->data_; }

  // A row wrapping (and owning) `row`.
  static KuduPartialRow* MakeRow(std::unique_ptr<basalt::client::PartialRow> row) {
    return new KuduPartialRow(row.release(), true);
  }
  static const basalt::client::PartialRow& Basalt(const KuduPartialRow& row) { return *row.row_; }
  // Takes and deletes `row`, returning its Basalt row (copied when `row` did not own it).
  static std::unique_ptr<basalt::client::PartialRow> TakeRow(KuduPartialRow* row);

  // Wraps a Basalt operation of `table` in the Kudu class of `type`.
  static KuduWriteOperation* MakeWriteOp(const sp::shared_ptr<KuduTable>& table,
                                         KuduWriteOperation::Type type,
                                         std::unique_ptr<basalt::client::WriteOperation> op);
  static KuduWriteOperation::Type Type(const KuduWriteOperation& op) { return op.type(); }
  static const sp::shared_ptr<KuduTable>& Table(const KuduWriteOperation& op) { return op.table_; }
  // Takes the Basalt operation out of `op` (which then has no row).
  static std::unique_ptr<basalt::client::WriteOperation> TakeOp(KuduWriteOperation* op) {
    return std::move(op->op_);
  }

  static KuduError* MakeError(KuduWriteOperation* op, const Status& s, bool possibly_successful);

  static KuduClient* MakeClient(std::shared_ptr<basalt::client::Client> client,
                                const MonoDelta& negotiation_timeout, bool multi_master);
  static basalt::client::Client* Basalt(const KuduClient* client);
  // Shared: a FlushAsync completion keeps the runner alive after the client and session are
  // gone (Basalt may run it after the session's destructor returned).
  static std::shared_ptr<CallbackRunner> Callbacks(KuduClient* client);
  static KuduTabletServer* MakeTabletServer(const basalt::client::TabletServerInfo& info);
  static sp::shared_ptr<KuduTable> MakeTable(sp::shared_ptr<KuduClient> client,
                                             std::shared_ptr<basalt::client::Table> table);
  static basalt::client::Table* Basalt(const KuduTable* table);
  static KuduSession* MakeSession(sp::shared_ptr<KuduClient> client,
                                  std::shared_ptr<basalt::client::Session> session);

  static basalt::client::ScanBatch* Basalt(KuduScanBatch* batch);
  static void SetSchema(KuduScanBatch* batch, const KuduSchema& schema);
  static basalt::client::ScanBatch* Basalt(KuduColumnarScanBatch* batch);
  static void ResetBitmaps(KuduColumnarScanBatch* batch);
};

}  // namespace internal
}  // namespace client
}  // namespace kudu
