#pragma once

// Write operations (Kudu's KuduWriteOperation and subclasses). Get one from Table::NewInsert()
// and friends, set its row, and hand it to Session::Apply.
//
// Row rules (checked by Apply): INSERT, UPSERT and INSERT_IGNORE set every key column and every
// NOT NULL column without a default; UPDATE and UPDATE_IGNORE set the key and at least one other
// column; DELETE and DELETE_IGNORE set exactly the key columns. The *_IGNORE forms succeed
// silently where the plain form would fail with ALREADY_EXISTS (insert) or NOT_FOUND (update,
// delete).
//
// An operation keeps its table alive. Not thread-safe.

#include <memory>
#include <string>

#include "client/export.h"
#include "client/partial_row.h"

namespace basalt::client {

class Table;

class BASALT_EXPORT WriteOperation {
 public:
  // Numbering equals the wire's RowOperationsPB.Type.
  enum Type {
    INSERT = 1,
    UPDATE = 2,
    DELETE = 3,
    UPSERT = 4,
    INSERT_IGNORE = 5,
    UPDATE_IGNORE = 6,
    DELETE_IGNORE = 7,
  };
  static std::string TypeToString(Type type);

  virtual ~WriteOperation();
  WriteOperation(const WriteOperation&) = delete;
  WriteOperation& operator=(const WriteOperation&) = delete;

  Type type() const { return type_; }
  const PartialRow& row() const { return row_; }
  PartialRow* mutable_row() { return &row_; }
  const Table* table() const { return table_.get(); }
  // "INSERT (int32 key=1, ...)".
  std::string ToString() const;

 protected:
  WriteOperation(std::shared_ptr<Table> table, Type type);

 private:
  friend struct internal::Access;
  std::shared_ptr<Table> table_;
  Type type_;
  PartialRow row_;
};

#define BASALT_WRITE_OP_CLASS(Name, TYPE)                           \
  class BASALT_EXPORT Name : public WriteOperation {                \
   public:                                                          \
    ~Name() override;                                               \
                                                                    \
   private:                                                         \
    friend class Table;                                             \
    friend struct internal::Access;                                 \
    explicit Name(std::shared_ptr<Table> table)                     \
        : WriteOperation(std::move(table), WriteOperation::TYPE) {} \
  };
BASALT_WRITE_OP_CLASS(Insert, INSERT)
BASALT_WRITE_OP_CLASS(Update, UPDATE)
BASALT_WRITE_OP_CLASS(Delete, DELETE)
BASALT_WRITE_OP_CLASS(Upsert, UPSERT)
BASALT_WRITE_OP_CLASS(InsertIgnore, INSERT_IGNORE)
BASALT_WRITE_OP_CLASS(UpdateIgnore, UPDATE_IGNORE)
BASALT_WRITE_OP_CLASS(DeleteIgnore, DELETE_IGNORE)
#undef BASALT_WRITE_OP_CLASS

}  // namespace basalt::client
