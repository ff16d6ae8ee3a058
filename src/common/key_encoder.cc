#include "common/key_encoder.h"

#include <cstring>

#include "absl/numeric/int128.h"
#include "absl/strings/str_cat.h"
#include "common/coding.h"
#include "common/partial_row.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "glog/logging.h"

namespace basalt {
namespace {

// Separator bytes of non-last variable-length values (docs/keys.md).
constexpr char kEscapeByte = '\0';
constexpr char kEscapedZero = '\1';  // 0x00 0x01 encodes a 0x00 byte of the value.
constexpr char kTerminator = '\0';   // 0x00 0x00 ends the value.

// Appends `v` big-endian.
void PutBigEndian(uint8_t v, std::string* out) { out->push_back(static_cast<char>(v)); }
void PutBigEndian(uint16_t v, std::string* out) {
  char buf[2];
  EncodeBigEndian16(buf, v);
  out->append(buf, sizeof(buf));
}
void PutBigEndian(uint32_t v, std::string* out) {
  char buf[4];
  EncodeBigEndian32(buf, v);
  out->append(buf, sizeof(buf));
}
void PutBigEndian(uint64_t v, std::string* out) {
  char buf[8];
  EncodeBigEndian64(buf, v);
  out->append(buf, sizeof(buf));
}
void PutBigEndian(absl::uint128 v, std::string* out) {
  PutBigEndian(absl::Uint128High64(v), out);
  PutBigEndian(absl::Uint128Low64(v), out);
}

uint8_t GetBigEndian(const char* p, uint8_t*) { return static_cast<uint8_t>(*p); }
uint16_t GetBigEndian(const char* p, uint16_t*) { return DecodeBigEndian16(p); }
uint32_t GetBigEndian(const char* p, uint32_t*) { return DecodeBigEndian32(p); }
uint64_t GetBigEndian(const char* p, uint64_t*) { return DecodeBigEndian64(p); }
absl::uint128 GetBigEndian(const char* p, absl::uint128*) {
  return absl::MakeUint128(DecodeBigEndian64(p), DecodeBigEndian64(p + 8));
}

template <typename U>
constexpr U SignBit() {
  return static_cast<U>(U{1} << (sizeof(U) * 8 - 1));
}

// Signed integer cell of width sizeof(U) (U its unsigned counterpart): flip the sign bit.
template <typename S, typename U>
void EncodeSigned(const void* cell, std::string* out) {
  PutBigEndian(static_cast<U>(static_cast<U>(UnalignedLoad<S>(cell)) ^ SignBit<U>()), out);
}

// IEEE float or double with the bits U: invert negatives, flip the sign bit of the rest.
template <typename U>
void EncodeFloat(const void* cell, std::string* out) {
  U bits = UnalignedLoad<U>(cell);
  bits = (bits & SignBit<U>()) ? static_cast<U>(~bits) : static_cast<U>(bits ^ SignBit<U>());
  PutBigEndian(bits, out);
}

void EncodeEscaped(std::string_view v, std::string* out) {
  while (true) {
    const void* zero = std::memchr(v.data(), 0, v.size());
    if (zero == nullptr) break;
    size_t pos = static_cast<const char*>(zero) - v.data();
    out->append(v.data(), pos);
    out->push_back(kEscapeByte);
    out->push_back(kEscapedZero);
    v.remove_prefix(pos + 1);
  }
  out->append(v.data(), v.size());
  out->push_back(kEscapeByte);
  out->push_back(kTerminator);
}

absl::Status Truncated(size_t needed, size_t left) {
  return absl::InvalidArgumentError(
      StrCat("encoded key truncated: needs ", needed, " bytes, ", left, " left"));
}

// Decodes an order-preserving fixed-width value of U's width into a little-endian cell.
// `decode_bits` maps the stored bits back to the cell's bits.
template <typename U, typename F>
absl::StatusOr<Datum> DecodeFixed(DataType type, std::string_view* input, F decode_bits) {
  if (input->size() < sizeof(U)) return Truncated(sizeof(U), input->size());
  U bits = decode_bits(GetBigEndian(input->data(), static_cast<U*>(nullptr)));
  input->remove_prefix(sizeof(U));
  alignas(16) char cell[16];
  std::memcpy(cell, &bits, sizeof(U));
  return Datum::FromCell(type, cell);
}

template <typename U>
absl::StatusOr<Datum> DecodeSigned(DataType type, std::string_view* input) {
  return DecodeFixed<U>(type, input, [](U bits) { return static_cast<U>(bits ^ SignBit<U>()); });
}

template <typename U>
absl::StatusOr<Datum> DecodeFloat(DataType type, std::string_view* input) {
  // Encoded values with the top bit set were non-negative.
  return DecodeFixed<U>(type, input, [](U bits) {
    return (bits & SignBit<U>()) ? static_cast<U>(bits ^ SignBit<U>()) : static_cast<U>(~bits);
  });
}

absl::StatusOr<Datum> DecodeBool(std::string_view* input) {
  if (input->empty()) return Truncated(1, 0);
  uint8_t b = static_cast<uint8_t>((*input)[0]);
  if (b > 1) {
    return absl::InvalidArgumentError(StrCat("encoded BOOL byte is ", b, ", not 0 or 1"));
  }
  input->remove_prefix(1);
  return Datum::Bool(b == 1);
}

// Decodes an escaped, terminated value (see EncodeEscaped) from the front of `*input`.
absl::StatusOr<std::string> DecodeEscaped(std::string_view* input) {
  std::string value;
  std::string_view in = *input;
  while (true) {
    const void* zero = std::memchr(in.data(), 0, in.size());
    if (zero == nullptr) {
      return absl::InvalidArgumentError("encoded key truncated: string value has no terminator");
    }
    size_t pos = static_cast<const char*>(zero) - in.data();
    value.append(in.data(), pos);
    if (pos + 1 >= in.size()) {
      return absl::InvalidArgumentError("encoded key truncated inside a string escape");
    }
    char next = in[pos + 1];
    in.remove_prefix(pos + 2);
    if (next == kTerminator) break;
    if (next != kEscapedZero) {
      return absl::InvalidArgumentError(
          StrCat("malformed string escape in encoded key: 0x00 followed by 0x",
                 absl::Hex(static_cast<uint8_t>(next), absl::kZeroPad2)));
    }
    value.push_back('\0');
  }
  *input = in;
  return value;
}

absl::StatusOr<Datum> DecodeVariableLength(DataType type, bool is_last, std::string_view* input) {
  std::string value;
  if (is_last) {
    value.assign(input->data(), input->size());
    input->remove_prefix(input->size());
  } else {
    BASALT_ASSIGN_OR_RETURN(value, DecodeEscaped(input));
  }
  std::string_view view(value);
  return Datum::FromCell(type, &view);
}

void CheckKeyDatum(const Schema& schema, int idx, const Datum& d) {
  CHECK(!d.is_null()) << "NULL value for key column " << schema.column(idx).name();
  CHECK(d.type() == schema.column(idx).type())
      << "key column " << schema.column(idx).name() << " is "
      << DataTypeName(schema.column(idx).type()) << ", value is " << DataTypeName(d.type());
}

absl::StatusOr<Datum> DecodeAndValidate(const ColumnSchema& col, bool is_last,
                                        std::string_view* input) {
  BASALT_ASSIGN_OR_RETURN(Datum v, DecodeKeyCell(col.type(), is_last, input));
  BASALT_RETURN_IF_ERROR(ValidateCell(col.type(), col.attributes(), v.cell()));
  return v;
}

}  // namespace

void EncodeKeyCell(DataType type, const void* cell, bool is_last, std::string* out) {
  switch (GetTypeInfo(type).physical_type()) {
    case PhysicalType::kBool:
      out->push_back(UnalignedLoad<uint8_t>(cell) != 0 ? 1 : 0);
      return;
    case PhysicalType::kInt8:
      return EncodeSigned<int8_t, uint8_t>(cell, out);
    case PhysicalType::kInt16:
      return EncodeSigned<int16_t, uint16_t>(cell, out);
    case PhysicalType::kInt32:
      return EncodeSigned<int32_t, uint32_t>(cell, out);
    case PhysicalType::kInt64:
      return EncodeSigned<int64_t, uint64_t>(cell, out);
    case PhysicalType::kInt128:
      return EncodeSigned<absl::int128, absl::uint128>(cell, out);
    case PhysicalType::kFloat:
      return EncodeFloat<uint32_t>(cell, out);
    case PhysicalType::kDouble:
      return EncodeFloat<uint64_t>(cell, out);
    case PhysicalType::kBinary: {
      auto v = UnalignedLoad<std::string_view>(cell);
      if (is_last) {
        out->append(v.data(), v.size());
      } else {
        EncodeEscaped(v, out);
      }
      return;
    }
  }
  LOG(FATAL) << "unhandled physical type for " << DataTypeName(type);
}

absl::StatusOr<Datum> DecodeKeyCell(DataType type, bool is_last, std::string_view* input) {
  switch (GetTypeInfo(type).physical_type()) {
    case PhysicalType::kBool:
      return DecodeBool(input);
    case PhysicalType::kInt8:
      return DecodeSigned<uint8_t>(type, input);
    case PhysicalType::kInt16:
      return DecodeSigned<uint16_t>(type, input);
    case PhysicalType::kInt32:
      return DecodeSigned<uint32_t>(type, input);
    case PhysicalType::kInt64:
      return DecodeSigned<uint64_t>(type, input);
    case PhysicalType::kInt128:
      return DecodeSigned<absl::uint128>(type, input);
    case PhysicalType::kFloat:
      return DecodeFloat<uint32_t>(type, input);
    case PhysicalType::kDouble:
      return DecodeFloat<uint64_t>(type, input);
    case PhysicalType::kBinary:
      return DecodeVariableLength(type, is_last, input);
  }
  return absl::InternalError(StrCat("unhandled type ", DataTypeName(type)));
}

std::string EncodeKey(const Schema& schema, const PartialRow& row) {
  DCHECK(row.AllKeyColumnsSet()) << row.ToString();
  return EncodeKey(schema, row.row_data());
}

std::string EncodeKey(const Schema& schema, const uint8_t* row_data) {
  std::string out;
  int k = schema.num_key_columns();
  for (int i = 0; i < k; i++) {
    EncodeKeyCell(schema.column(i).type(), row_data + schema.column_offset(i), i == k - 1, &out);
  }
  return out;
}

std::string EncodeKey(const Schema& schema, const std::vector<Datum>& key) {
  CHECK_EQ(key.size(), static_cast<size_t>(schema.num_key_columns()));
  return EncodeKeyPrefix(schema, key);
}

std::string EncodeKeyPrefix(const Schema& schema, const std::vector<Datum>& prefix) {
  int k = schema.num_key_columns();
  CHECK_LE(prefix.size(), static_cast<size_t>(k));
  std::string out;
  for (size_t i = 0; i < prefix.size(); i++) {
    CheckKeyDatum(schema, static_cast<int>(i), prefix[i]);
    EncodeKeyCell(prefix[i].type(), prefix[i].cell(), static_cast<int>(i) == k - 1, &out);
  }
  return out;
}

void EncodeColumns(const Schema& schema, const PartialRow& row,
                   absl::Span<const int> column_indexes, std::string* out) {
  for (int idx : column_indexes) {
    DCHECK(row.IsSet(idx) && !row.IsNull(idx)) << "column " << schema.column(idx).name();
  }
  EncodeColumns(schema, row.row_data(), column_indexes, out);
}

void EncodeColumns(const Schema& schema, const uint8_t* row_data,
                   absl::Span<const int> column_indexes, std::string* out) {
  for (size_t i = 0; i < column_indexes.size(); i++) {
    int idx = column_indexes[i];
    EncodeKeyCell(schema.column(idx).type(), row_data + schema.column_offset(idx),
                  i + 1 == column_indexes.size(), out);
  }
}

absl::StatusOr<std::vector<Datum>> DecodeColumns(const Schema& schema,
                                                 absl::Span<const int> column_indexes,
                                                 std::string_view encoded) {
  std::vector<Datum> values;
  values.reserve(column_indexes.size());
  for (size_t i = 0; i < column_indexes.size(); i++) {
    const ColumnSchema& col = schema.column(column_indexes[i]);
    auto d = DecodeAndValidate(col, i + 1 == column_indexes.size(), &encoded);
    if (!d.ok()) return PrependToStatus(d.status(), StrCat("key column ", col.name()));
    values.push_back(*std::move(d));
  }
  if (!encoded.empty()) {
    return absl::InvalidArgumentError(
        StrCat("encoded key has ", encoded.size(), " trailing bytes"));
  }
  return values;
}

absl::StatusOr<std::vector<Datum>> DecodeKey(const Schema& schema, std::string_view encoded) {
  std::vector<int> indexes(schema.num_key_columns());
  for (int i = 0; i < schema.num_key_columns(); i++) indexes[i] = i;
  return DecodeColumns(schema, indexes, encoded);
}

std::string KeySuccessor(std::string_view key) {
  std::string s(key);
  s.push_back('\0');
  return s;
}

std::string PrefixSuccessor(std::string_view prefix) {
  std::string s(prefix);
  while (!s.empty() && static_cast<uint8_t>(s.back()) == 0xFF) s.pop_back();
  if (!s.empty()) s.back() = static_cast<char>(static_cast<uint8_t>(s.back()) + 1);
  return s;
}

int IntegerKeyWidth(DataType type) {
  switch (GetTypeInfo(type).physical_type()) {
    case PhysicalType::kInt8:
      return 1;
    case PhysicalType::kInt16:
      return 2;
    case PhysicalType::kInt32:
      return 4;
    case PhysicalType::kInt64:
      return 8;
    default:
      return 0;
  }
}

int SingleIntegerKeyWidth(const Schema& schema) {
  return schema.num_key_columns() == 1 ? IntegerKeyWidth(schema.column(0).type()) : 0;
}

void AppendEncodedIntegerKey(uint64_t value, int width, std::string* out) {
  DCHECK(width >= 1 && width <= 8) << width;
  for (int i = width - 1; i >= 0; --i) out->push_back(static_cast<char>(value >> (8 * i)));
}

uint64_t EncodedIntegerKeyValue(std::string_view encoded) {
  DCHECK(!encoded.empty() && encoded.size() <= 8) << encoded.size() << " bytes";
  uint64_t v = 0;
  for (char c : encoded) v = (v << 8) | static_cast<uint8_t>(c);
  return v;
}

}  // namespace basalt
