#pragma once

// Write operations. KuduTable::NewInsert() and friends return a new operation owned by the
// caller; set its row through mutable_row() and hand it to KuduSession::Apply, which takes
// ownership. Row rules (checked when applied): INSERT, UPSERT and the *_IGNORE inserts set every
// key column and every NOT NULL column without a default; UPDATE sets the key and at least one
// other column; DELETE sets only the key columns. The *_IGNORE forms succeed silently where the
// plain form would fail on a duplicate or missing key.
//
// KuduUpsertIgnore is applied as an UPSERT: it differs from UPSERT only for immutable columns,
// which Basalt does not have.
//
// An operation keeps its table alive. Not thread-safe.

#include <cstdint>
#include <memory>
#include <string>

#include "kudu/client/shared_ptr.h"
#include "kudu/client/stubs.h"
#include "kudu/common/partial_row.h"
#include "kudu/util/kudu_export.h"

namespace basalt {
namespace client {
class WriteOperation;  // The Basalt operation this one wraps.
}  // namespace client
}  // namespace basalt

namespace kudu {
namespace client {

namespace internal {
struct Access;
}  // namespace internal

class KuduTable;

class KUDU_EXPORT KuduWriteOperation {
 public:
  enum Type {
    INSERT = 1,
    UPDATE = 2,
    DELETE = 3,
    UPSERT = 4,
    INSERT_IGNORE = 5,
    UPDATE_IGNORE = 6,
    DELETE_IGNORE = 7,
    UPSERT_IGNORE = 8
  };
  virtual ~KuduWriteOperation();

  const KuduPartialRow& row() const { return row_; }
  KuduPartialRow* mutable_row() { return &row_; }
  // "INSERT int32 key=1, int32 v=2".
  virtual std::string ToString() const = 0;
  const KuduTable* table() const { return table_.get(); }

 protected:
  // Takes ownership of `op`.
  KuduWriteOperation(const sp::shared_ptr<KuduTable>& table, basalt::client::WriteOperation* op);
  virtual Type type() const = 0;

 private:
  friend struct internal::Access;
  // Declared before row_, which points into it. Null once the session took it.
  std::unique_ptr<basalt::client::WriteOperation> op_;

 protected:
  sp::shared_ptr<KuduTable> const table_;
  KuduPartialRow row_;

 private:
  DISALLOW_COPY_AND_ASSIGN(KuduWriteOperation);
};

// Each concrete operation: made by KuduTable (or, for a failed operation, by the session).
#define KUDU_COMPAT_WRITE_OP(Name, TYPE)                                             \
  class KUDU_EXPORT Name : public KuduWriteOperation {                               \
   public:                                                                           \
    ~Name() override;                                                                \
    std::string ToString() const override;                                           \
                                                                                     \
   protected:                                                                        \
    Type type() const override { return TYPE; }                                      \
                                                                                     \
   private:                                                                          \
    friend class KuduTable;                                                          \
    friend struct internal::Access;                                                  \
    Name(const sp::shared_ptr<KuduTable>& table, basalt::client::WriteOperation* op) \
        : KuduWriteOperation(table, op) {}                                           \
  };
KUDU_COMPAT_WRITE_OP(KuduInsert, INSERT)
KUDU_COMPAT_WRITE_OP(KuduInsertIgnore, INSERT_IGNORE)
KUDU_COMPAT_WRITE_OP(KuduUpsert, UPSERT)
KUDU_COMPAT_WRITE_OP(KuduUpsertIgnore, UPSERT_IGNORE)
KUDU_COMPAT_WRITE_OP(KuduUpdate, UPDATE)
KUDU_COMPAT_WRITE_OP(KuduUpdateIgnore, UPDATE_IGNORE)
KUDU_COMPAT_WRITE_OP(KuduDelete, DELETE)
KUDU_COMPAT_WRITE_OP(KuduDeleteIgnore, DELETE_IGNORE)
#undef KUDU_COMPAT_WRITE_OP

}  // namespace client
}  // namespace kudu
