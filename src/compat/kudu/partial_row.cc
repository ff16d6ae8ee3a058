// KuduPartialRow: forwards to the Basalt PartialRow it wraps. The hot path (one setter per cell
// of every written row) is one call into Basalt plus an OK check; nothing is copied or
// allocated here.

#include <memory>
#include <string>
#include <string_view>

#include "compat/kudu/internal.h"

namespace kudu {

using client::FromAbsl;
using client::ToSlice;
using client::View;
namespace bc = basalt::client;

namespace {

Status NoSerial() { return Status::NotSupported("serial (auto-incrementing) columns"); }

// The longest prefix of `s` with at most `max_chars` UTF-8 characters.
std::string_view TruncateUtf8(std::string_view s, int max_chars) {
  int chars = 0;
  for (size_t i = 0; i < s.size(); i++) {
    // A byte that is not a continuation byte (10xxxxxx) starts a character.
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 && chars++ == max_chars) {
      return s.substr(0, i);
    }
  }
  return s;
}

Status SetVarcharAt(bc::PartialRow* row, int idx, const Slice& val) {
  if (idx < 0 || idx >= row->schema()->num_columns()) {
    return Status::InvalidArgument("column index out of range", std::to_string(idx));
  }
  const bc::ColumnSchema col = row->schema()->Column(idx);
  if (col.type() != bc::ColumnSchema::VARCHAR) {
    return Status::InvalidArgument("column is not VARCHAR", col.name());
  }
  // Kudu truncates a VARCHAR value to the column's length.
  return FromAbsl(row->SetString(idx, TruncateUtf8(View(val), col.length())));
}

int FindOrMinusOne(const bc::PartialRow* row, const Slice& name) {
  return row->schema()->FindColumn(View(name));
}

}  // namespace

KuduPartialRow::KuduPartialRow(bc::PartialRow* row, bool owned) : row_(row), owned_(owned) {}

KuduPartialRow::KuduPartialRow(const KuduPartialRow& other)
    : row_(new bc::PartialRow(*other.row_)), owned_(true) {}

KuduPartialRow& KuduPartialRow::operator=(KuduPartialRow other) {
  // A row inside a write operation stays there: copy the cells rather than the pointer.
  *row_ = *other.row_;
  return *this;
}

KuduPartialRow::~KuduPartialRow() {
  if (owned_) delete row_;
}

// Setters and getters that map one to one onto Basalt's.
#define KUDU_COMPAT_FORWARD(Name, CppType)                                      \
  Status KuduPartialRow::Set##Name(const Slice& col_name, CppType val) {        \
    return FromAbsl(row_->Set##Name(View(col_name), val));                      \
  }                                                                             \
  Status KuduPartialRow::Set##Name(int col_idx, CppType val) {                  \
    return FromAbsl(row_->Set##Name(col_idx, val));                             \
  }                                                                             \
  Status KuduPartialRow::Get##Name(const Slice& col_name, CppType* val) const { \
    return FromAbsl(row_->Get##Name(View(col_name), val));                      \
  }                                                                             \
  Status KuduPartialRow::Get##Name(int col_idx, CppType* val) const {           \
    return FromAbsl(row_->Get##Name(col_idx, val));                             \
  }
KUDU_COMPAT_FORWARD(Bool, bool)
KUDU_COMPAT_FORWARD(Int8, int8_t)
KUDU_COMPAT_FORWARD(Int16, int16_t)
KUDU_COMPAT_FORWARD(Int32, int32_t)
KUDU_COMPAT_FORWARD(Int64, int64_t)
KUDU_COMPAT_FORWARD(UnixTimeMicros, int64_t)
KUDU_COMPAT_FORWARD(Date, int32_t)
KUDU_COMPAT_FORWARD(Float, float)
KUDU_COMPAT_FORWARD(Double, double)
#undef KUDU_COMPAT_FORWARD

Status KuduPartialRow::SetSerial(const Slice& col_name, uint64_t val) { return NoSerial(); }
Status KuduPartialRow::SetSerial(int col_idx, uint64_t val) { return NoSerial(); }
Status KuduPartialRow::GetSerial(const Slice& col_name, uint64_t* val) const { return NoSerial(); }
Status KuduPartialRow::GetSerial(int col_idx, uint64_t* val) const { return NoSerial(); }

namespace {

Status DecimalToInt64(int128_t val, int64_t* out) {
  if (val > INT64_MAX || val < INT64_MIN) {
    return Status::InvalidArgument("decimal value beyond 64 bits is not supported by Basalt");
  }
  *out = static_cast<int64_t>(val);
  return Status::OK();
}

}  // namespace

Status KuduPartialRow::SetUnscaledDecimal(const Slice& col_name, int128_t val) {
  int64_t v = 0;
  KUDU_RETURN_NOT_OK(DecimalToInt64(val, &v));
  return FromAbsl(row_->SetUnscaledDecimal(View(col_name), v));
}
Status KuduPartialRow::SetUnscaledDecimal(int col_idx, int128_t val) {
  int64_t v = 0;
  KUDU_RETURN_NOT_OK(DecimalToInt64(val, &v));
  return FromAbsl(row_->SetUnscaledDecimal(col_idx, v));
}
Status KuduPartialRow::GetUnscaledDecimal(const Slice& col_name, int128_t* val) const {
  int64_t v = 0;
  KUDU_RETURN_NOT_OK(FromAbsl(row_->GetUnscaledDecimal(View(col_name), &v)));
  *val = v;
  return Status::OK();
}
Status KuduPartialRow::GetUnscaledDecimal(int col_idx, int128_t* val) const {
  int64_t v = 0;
  KUDU_RETURN_NOT_OK(FromAbsl(row_->GetUnscaledDecimal(col_idx, &v)));
  *val = v;
  return Status::OK();
}
Status KuduPartialRow::GetUnscaledDecimal(const Slice& col_name, int128_t* val) {
  return static_cast<const KuduPartialRow*>(this)->GetUnscaledDecimal(col_name, val);
}
Status KuduPartialRow::GetUnscaledDecimal(int col_idx, int128_t* val) {
  return static_cast<const KuduPartialRow*>(this)->GetUnscaledDecimal(col_idx, val);
}

// Basalt copies every string value, so the copying and the non-copying forms are the same.
#define KUDU_COMPAT_STRING_SETTER(KuduName, BasaltName)                      \
  Status KuduPartialRow::KuduName(const Slice& col_name, const Slice& val) { \
    return FromAbsl(row_->BasaltName(View(col_name), View(val)));            \
  }                                                                          \
  Status KuduPartialRow::KuduName(int col_idx, const Slice& val) {           \
    return FromAbsl(row_->BasaltName(col_idx, View(val)));                   \
  }
KUDU_COMPAT_STRING_SETTER(SetString, SetString)
KUDU_COMPAT_STRING_SETTER(SetStringCopy, SetString)
KUDU_COMPAT_STRING_SETTER(SetStringNoCopy, SetString)
KUDU_COMPAT_STRING_SETTER(SetBinary, SetBinary)
KUDU_COMPAT_STRING_SETTER(SetBinaryCopy, SetBinary)
KUDU_COMPAT_STRING_SETTER(SetBinaryNoCopy, SetBinary)
#undef KUDU_COMPAT_STRING_SETTER

Status KuduPartialRow::SetVarchar(const Slice& col_name, const Slice& val) {
  const int idx = FindOrMinusOne(row_, col_name);
  if (idx < 0) return Status::NotFound("no such column", col_name);
  return SetVarcharAt(row_, idx, val);
}
Status KuduPartialRow::SetVarchar(int col_idx, const Slice& val) {
  return SetVarcharAt(row_, col_idx, val);
}
Status KuduPartialRow::SetVarcharNoCopyUnsafe(const Slice& col_name, const Slice& val) {
  return SetVarchar(col_name, val);
}
Status KuduPartialRow::SetVarcharNoCopyUnsafe(int col_idx, const Slice& val) {
  return SetVarchar(col_idx, val);
}

// String getters: the slice points into the row.
#define KUDU_COMPAT_STRING_GETTER(KuduName, BasaltName)                      \
  Status KuduPartialRow::KuduName(const Slice& col_name, Slice* val) const { \
    std::string_view v;                                                      \
    KUDU_RETURN_NOT_OK(FromAbsl(row_->BasaltName(View(col_name), &v)));      \
    *val = ToSlice(v);                                                       \
    return Status::OK();                                                     \
  }                                                                          \
  Status KuduPartialRow::KuduName(int col_idx, Slice* val) const {           \
    std::string_view v;                                                      \
    KUDU_RETURN_NOT_OK(FromAbsl(row_->BasaltName(col_idx, &v)));             \
    *val = ToSlice(v);                                                       \
    return Status::OK();                                                     \
  }
KUDU_COMPAT_STRING_GETTER(GetString, GetString)
KUDU_COMPAT_STRING_GETTER(GetVarchar, GetString)
KUDU_COMPAT_STRING_GETTER(GetBinary, GetBinary)
#undef KUDU_COMPAT_STRING_GETTER

Status KuduPartialRow::SetNull(const Slice& col_name) {
  return FromAbsl(row_->SetNull(View(col_name)));
}
Status KuduPartialRow::SetNull(int col_idx) { return FromAbsl(row_->SetNull(col_idx)); }
Status KuduPartialRow::Unset(const Slice& col_name) {
  return FromAbsl(row_->Unset(View(col_name)));
}
Status KuduPartialRow::Unset(int col_idx) { return FromAbsl(row_->Unset(col_idx)); }

bool KuduPartialRow::IsColumnSet(const Slice& col_name) const {
  return row_->IsColumnSet(View(col_name));
}
bool KuduPartialRow::IsColumnSet(int col_idx) const { return row_->IsColumnSet(col_idx); }
bool KuduPartialRow::IsNull(const Slice& col_name) const { return row_->IsNull(View(col_name)); }
bool KuduPartialRow::IsNull(int col_idx) const { return row_->IsNull(col_idx); }

Status KuduPartialRow::EncodeRowKey(std::string* encoded_key) const {
  return Status::NotSupported("Kudu's encoded row keys are not available in Basalt");
}

std::string KuduPartialRow::ToEncodedRowKeyOrDie() const {
  KUDU_LOG(FATAL) << "ToEncodedRowKeyOrDie: Kudu's encoded row keys are not available in Basalt";
  return std::string();
}

bool KuduPartialRow::IsKeySet() const { return row_->IsKeySet(); }
bool KuduPartialRow::IsNonUniqueKeySet() const { return row_->IsKeySet(); }
bool KuduPartialRow::IsAutoIncrementingColumnSet() const { return false; }

bool KuduPartialRow::AllColumnsSet() const {
  for (int i = 0; i < row_->schema()->num_columns(); i++) {
    if (!row_->IsColumnSet(i)) return false;
  }
  return true;
}

std::string KuduPartialRow::ToString() const {
  // Basalt writes "(int32 key=1, ...)"; Kudu leaves out the parentheses.
  std::string s = row_->ToString();
  if (s.size() >= 2 && s.front() == '(' && s.back() == ')') s = s.substr(1, s.size() - 2);
  return s;
}

namespace client {
namespace internal {

std::unique_ptr<bc::PartialRow> Access::TakeRow(KuduPartialRow* row) {
  if (row == nullptr) return nullptr;
  std::unique_ptr<bc::PartialRow> out;
  if (row->owned_) {
    out.reset(row->row_);
    row->owned_ = false;
  } else {
    out = std::make_unique<bc::PartialRow>(*row->row_);
  }
  delete row;
  return out;
}

}  // namespace internal
}  // namespace client
}  // namespace kudu
