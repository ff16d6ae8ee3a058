// KuduWriteOperation and its subclasses: each owns the Basalt operation it wraps until the
// session takes it; row_ wraps that operation's row in place.

#include <memory>
#include <string>

#include "compat/kudu/internal.h"

namespace kudu {
namespace client {

namespace bc = basalt::client;

KuduWriteOperation::KuduWriteOperation(const sp::shared_ptr<KuduTable>& table,
                                       bc::WriteOperation* op)
    : op_(op), table_(table), row_(op->mutable_row(), /*owned=*/false) {}

KuduWriteOperation::~KuduWriteOperation() = default;

#define KUDU_COMPAT_WRITE_OP_BODY(Name, label) \
  Name::~Name() = default;                     \
  std::string Name::ToString() const { return std::string(label " ") + row_.ToString(); }
KUDU_COMPAT_WRITE_OP_BODY(KuduInsert, "INSERT")
KUDU_COMPAT_WRITE_OP_BODY(KuduInsertIgnore, "INSERT IGNORE")
KUDU_COMPAT_WRITE_OP_BODY(KuduUpsert, "UPSERT")
KUDU_COMPAT_WRITE_OP_BODY(KuduUpsertIgnore, "UPSERT IGNORE")
KUDU_COMPAT_WRITE_OP_BODY(KuduUpdate, "UPDATE")
KUDU_COMPAT_WRITE_OP_BODY(KuduUpdateIgnore, "UPDATE IGNORE")
KUDU_COMPAT_WRITE_OP_BODY(KuduDelete, "DELETE")
KUDU_COMPAT_WRITE_OP_BODY(KuduDeleteIgnore, "DELETE IGNORE")
#undef KUDU_COMPAT_WRITE_OP_BODY

namespace internal {

KuduWriteOperation* Access::MakeWriteOp(const sp::shared_ptr<KuduTable>& table,
                                        KuduWriteOperation::Type type,
                                        std::unique_ptr<bc::WriteOperation> op) {
  bc::WriteOperation* raw = op.release();
  switch (type) {
    case KuduWriteOperation::INSERT:
      return new KuduInsert(table, raw);
    case KuduWriteOperation::UPDATE:
      return new KuduUpdate(table, raw);
    case KuduWriteOperation::DELETE:
      return new KuduDelete(table, raw);
    case KuduWriteOperation::UPSERT:
      return new KuduUpsert(table, raw);
    case KuduWriteOperation::INSERT_IGNORE:
      return new KuduInsertIgnore(table, raw);
    case KuduWriteOperation::UPDATE_IGNORE:
      return new KuduUpdateIgnore(table, raw);
    case KuduWriteOperation::DELETE_IGNORE:
      return new KuduDeleteIgnore(table, raw);
    case KuduWriteOperation::UPSERT_IGNORE:
      return new KuduUpsertIgnore(table, raw);
  }
  return new KuduInsert(table, raw);  // Unreachable: every type is listed.
}

}  // namespace internal
}  // namespace client
}  // namespace kudu
