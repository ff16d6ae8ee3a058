#include "common/types.h"

#include <cmath>
#include <cstring>
#include <ctime>
#include <limits>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_format.h"
#include "common/coding.h"
#include "common/strings.h"
#include "glog/logging.h"

namespace basalt {
namespace {

template <typename T>
int Cmp(T a, T b) {
  return a < b ? -1 : (a > b ? 1 : 0);
}

// Maps an IEEE float/double bit pattern to an unsigned integer whose order is the IEEE total
// order: negative values have every bit inverted, positive ones only the sign bit. The key
// encoder uses the same mapping, so Compare and memcmp of encoded keys agree.
template <typename Bits>
Bits TotalOrderBits(Bits bits) {
  constexpr Bits kSign = Bits{1} << (sizeof(Bits) * 8 - 1);
  return (bits & kSign) ? ~bits : (bits | kSign);
}

}  // namespace

bool IsValidDataType(int type) { return type >= 1 && type <= kMaxDataType; }

constexpr TypeInfo TypeInfoTable::kInfos[kMaxDataType + 1] = {
    {DataType::kUnknown, PhysicalType::kInt8, "UNKNOWN", 0},
    {DataType::kBool, PhysicalType::kBool, "BOOL", 1},
    {DataType::kInt8, PhysicalType::kInt8, "INT8", 1},
    {DataType::kInt16, PhysicalType::kInt16, "INT16", 2},
    {DataType::kInt32, PhysicalType::kInt32, "INT32", 4},
    {DataType::kInt64, PhysicalType::kInt64, "INT64", 8},
    {DataType::kFloat, PhysicalType::kFloat, "FLOAT", 4},
    {DataType::kDouble, PhysicalType::kDouble, "DOUBLE", 8},
    {DataType::kString, PhysicalType::kBinary, "STRING", sizeof(std::string_view)},
    {DataType::kBinary, PhysicalType::kBinary, "BINARY", sizeof(std::string_view)},
    {DataType::kUnixtimeMicros, PhysicalType::kInt64, "UNIXTIME_MICROS", 8},
    {DataType::kDate, PhysicalType::kInt32, "DATE", 4},
    {DataType::kDecimal32, PhysicalType::kInt32, "DECIMAL32", 4},
    {DataType::kDecimal64, PhysicalType::kInt64, "DECIMAL64", 8},
    {DataType::kDecimal128, PhysicalType::kInt128, "DECIMAL128", 16},
    {DataType::kVarchar, PhysicalType::kBinary, "VARCHAR", sizeof(std::string_view)},
};

// GetTypeInfo indexes the table by the type's number.
static_assert([] {
  for (int t = 0; t <= kMaxDataType; t++) {
    if (static_cast<int>(TypeInfoTable::kInfos[t].type()) != t) return false;
  }
  return true;
}());

void TypeInfoTable::BadType(int type) { LOG(FATAL) << "bad DataType " << type; }

std::string_view DataTypeName(DataType type) {
  if (!IsValidDataType(static_cast<int>(type))) return "UNKNOWN";
  return GetTypeInfo(type).name();
}

absl::StatusOr<DataType> ParseDataTypeName(std::string_view name) {
  std::string upper = absl::AsciiStrToUpper(ToAbsl(name));
  if (upper == "DECIMAL") return DataType::kDecimal128;
  if (upper == "TIMESTAMP") return DataType::kUnixtimeMicros;
  for (int t = 1; t <= kMaxDataType; t++) {
    if (GetTypeInfo(static_cast<DataType>(t)).name() == upper) return static_cast<DataType>(t);
  }
  return absl::InvalidArgumentError(StrCat("unknown data type '", name, "'"));
}

bool TypeInfo::is_decimal() const {
  return type_ == DataType::kDecimal32 || type_ == DataType::kDecimal64 ||
         type_ == DataType::kDecimal128;
}

bool TypeInfo::is_integer() const {
  return type_ == DataType::kInt8 || type_ == DataType::kInt16 || type_ == DataType::kInt32 ||
         type_ == DataType::kInt64;
}

int TypeInfo::Compare(const void* a, const void* b) const {
  switch (physical_) {
    case PhysicalType::kBool:
      return Cmp(UnalignedLoad<uint8_t>(a), UnalignedLoad<uint8_t>(b));
    case PhysicalType::kInt8:
      return Cmp(UnalignedLoad<int8_t>(a), UnalignedLoad<int8_t>(b));
    case PhysicalType::kInt16:
      return Cmp(UnalignedLoad<int16_t>(a), UnalignedLoad<int16_t>(b));
    case PhysicalType::kInt32:
      return Cmp(UnalignedLoad<int32_t>(a), UnalignedLoad<int32_t>(b));
    case PhysicalType::kInt64:
      return Cmp(UnalignedLoad<int64_t>(a), UnalignedLoad<int64_t>(b));
    case PhysicalType::kInt128:
      return Cmp(UnalignedLoad<absl::int128>(a), UnalignedLoad<absl::int128>(b));
    case PhysicalType::kFloat:
      return Cmp(TotalOrderBits(UnalignedLoad<uint32_t>(a)),
                 TotalOrderBits(UnalignedLoad<uint32_t>(b)));
    case PhysicalType::kDouble:
      return Cmp(TotalOrderBits(UnalignedLoad<uint64_t>(a)),
                 TotalOrderBits(UnalignedLoad<uint64_t>(b)));
    case PhysicalType::kBinary: {
      auto sa = UnalignedLoad<std::string_view>(a);
      auto sb = UnalignedLoad<std::string_view>(b);
      int c = sa.compare(sb);
      return c < 0 ? -1 : (c > 0 ? 1 : 0);
    }
  }
  return 0;
}

namespace {

void AppendDate(int32_t days, std::string* out) {
  time_t secs = static_cast<time_t>(days) * 86400;
  struct tm tm;
  if (gmtime_r(&secs, &tm) == nullptr) {
    StrAppend(out, "date(", days, ")");
    return;
  }
  absl::StrAppendFormat(out, "%04d-%02d-%02d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday);
}

void AppendTimestamp(int64_t micros, std::string* out) {
  // Floor division so that negative timestamps render correctly.
  int64_t secs = micros / 1000000;
  int64_t frac = micros % 1000000;
  if (frac < 0) {
    frac += 1000000;
    secs -= 1;
  }
  time_t t = static_cast<time_t>(secs);
  struct tm tm;
  if (gmtime_r(&t, &tm) == nullptr) {
    StrAppend(out, "timestamp(", micros, ")");
    return;
  }
  absl::StrAppendFormat(out, "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", tm.tm_year + 1900,
                        tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                        static_cast<int>(frac));
}

}  // namespace

void TypeInfo::AppendDebugString(const void* cell, std::string* out) const {
  switch (type_) {
    case DataType::kBool:
      out->append(UnalignedLoad<uint8_t>(cell) ? "true" : "false");
      return;
    case DataType::kInt8:
      StrAppend(out, UnalignedLoad<int8_t>(cell));
      return;
    case DataType::kInt16:
      StrAppend(out, UnalignedLoad<int16_t>(cell));
      return;
    case DataType::kInt32:
    case DataType::kDecimal32:
      StrAppend(out, UnalignedLoad<int32_t>(cell));
      return;
    case DataType::kInt64:
    case DataType::kDecimal64:
      StrAppend(out, UnalignedLoad<int64_t>(cell));
      return;
    case DataType::kDecimal128:
      StrAppend(out, FormatDecimal(UnalignedLoad<absl::int128>(cell), 0));
      return;
    case DataType::kFloat:
      StrAppend(out, UnalignedLoad<float>(cell));
      return;
    case DataType::kDouble:
      StrAppend(out, UnalignedLoad<double>(cell));
      return;
    case DataType::kString:
    case DataType::kVarchar:
      StrAppend(out, "\"", absl::CHexEscape(ToAbsl(UnalignedLoad<std::string_view>(cell))), "\"");
      return;
    case DataType::kBinary:
      StrAppend(out, "0x", absl::BytesToHexString(ToAbsl(UnalignedLoad<std::string_view>(cell))));
      return;
    case DataType::kUnixtimeMicros:
      AppendTimestamp(UnalignedLoad<int64_t>(cell), out);
      return;
    case DataType::kDate:
      AppendDate(UnalignedLoad<int32_t>(cell), out);
      return;
    case DataType::kUnknown:
      break;
  }
  out->append("<unknown>");
}

absl::StatusOr<DataType> DecimalTypeForPrecision(int precision) {
  if (precision < 1 || precision > kMaxDecimal128Precision) {
    return absl::InvalidArgumentError(
        StrCat("DECIMAL precision ", precision, " is out of range 1..", kMaxDecimal128Precision));
  }
  if (precision <= kMaxDecimal32Precision) return DataType::kDecimal32;
  if (precision <= kMaxDecimal64Precision) return DataType::kDecimal64;
  return DataType::kDecimal128;
}

namespace {

int MaxPrecision(DataType type) {
  switch (type) {
    case DataType::kDecimal32:
      return kMaxDecimal32Precision;
    case DataType::kDecimal64:
      return kMaxDecimal64Precision;
    default:
      return kMaxDecimal128Precision;
  }
}

// 10^n for n in 0..38, as int128.
absl::int128 PowerOf10(int n) {
  absl::int128 v = 1;
  for (int i = 0; i < n; i++) v *= 10;
  return v;
}

}  // namespace

absl::Status ValidateTypeAttributes(DataType type, const TypeAttributes& attrs) {
  const TypeInfo& info = GetTypeInfo(type);
  if (info.is_decimal()) {
    int max = MaxPrecision(type);
    int min = type == DataType::kDecimal32
                  ? 1
                  : MaxPrecision(static_cast<DataType>(static_cast<int>(type) - 1)) + 1;
    if (attrs.precision < min || attrs.precision > max) {
      return absl::InvalidArgumentError(absl::StrFormat("%s needs a precision in %d..%d, got %d",
                                                        info.name(), min, max, attrs.precision));
    }
    if (attrs.scale < 0 || attrs.scale > attrs.precision) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "DECIMAL scale %d must be in 0..precision (%d)", attrs.scale, attrs.precision));
    }
    if (attrs.length != 0) return absl::InvalidArgumentError("DECIMAL takes no length");
    return absl::OkStatus();
  }
  if (type == DataType::kVarchar) {
    if (attrs.length < 1 || attrs.length > kMaxVarcharLength) {
      return absl::InvalidArgumentError(absl::StrFormat("VARCHAR length %d is out of range 1..%d",
                                                        attrs.length, kMaxVarcharLength));
    }
    if (attrs.precision != 0 || attrs.scale != 0) {
      return absl::InvalidArgumentError("VARCHAR takes no precision or scale");
    }
    return absl::OkStatus();
  }
  if (attrs != TypeAttributes{}) {
    return absl::InvalidArgumentError(StrCat(info.name(), " takes no precision, scale or length"));
  }
  return absl::OkStatus();
}

int64_t Utf8Length(std::string_view s) {
  int64_t count = 0;
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t len;
    uint32_t cp;
    if (c < 0x80) {
      len = 1;
      cp = c;
    } else if ((c & 0xe0) == 0xc0) {
      len = 2;
      cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      len = 3;
      cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return -1;
    }
    if (i + len > s.size()) return -1;
    for (size_t k = 1; k < len; k++) {
      auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xc0) != 0x80) return -1;
      cp = (cp << 6) | (cc & 0x3f);
    }
    // Reject overlong forms, surrogates and code points past U+10FFFF.
    static constexpr uint32_t kMinForLen[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMinForLen[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return -1;
    i += len;
    count++;
  }
  return count;
}

absl::Status ValidateCell(DataType type, const TypeAttributes& attrs, const void* cell) {
  const TypeInfo& info = GetTypeInfo(type);
  if (type == DataType::kBool && UnalignedLoad<uint8_t>(cell) > 1) {
    return absl::InvalidArgumentError("BOOL cell must be 0 or 1");
  }
  if (info.is_decimal()) {
    absl::int128 v;
    if (type == DataType::kDecimal32)
      v = UnalignedLoad<int32_t>(cell);
    else if (type == DataType::kDecimal64)
      v = UnalignedLoad<int64_t>(cell);
    else
      v = UnalignedLoad<absl::int128>(cell);
    absl::int128 bound = PowerOf10(attrs.precision);
    if (v >= bound || v <= -bound) {
      return absl::InvalidArgumentError(StrCat("value ", FormatDecimal(v, attrs.scale),
                                               " does not fit DECIMAL(", attrs.precision, ", ",
                                               attrs.scale, ")"));
    }
  }
  if (info.is_variable_length()) {
    auto s = UnalignedLoad<std::string_view>(cell);
    if (s.size() > kMaxCellBytes) {
      return absl::InvalidArgumentError(StrCat(info.name(), " value of ", s.size(),
                                               " bytes exceeds the limit of ", kMaxCellBytes,
                                               " bytes"));
    }
    if (type == DataType::kVarchar) {
      int64_t chars = Utf8Length(s);
      if (chars < 0) return absl::InvalidArgumentError("VARCHAR value is not valid UTF-8");
      if (chars > attrs.length) {
        return absl::InvalidArgumentError(
            StrCat("VARCHAR value of ", chars, " characters exceeds VARCHAR(", attrs.length, ")"));
      }
    }
  }
  return absl::OkStatus();
}

void IntegerStorageRange(DataType type, absl::int128* min, absl::int128* max) {
  switch (GetTypeInfo(type).physical_type()) {
    case PhysicalType::kInt8:
      *min = std::numeric_limits<int8_t>::min();
      *max = std::numeric_limits<int8_t>::max();
      return;
    case PhysicalType::kInt16:
      *min = std::numeric_limits<int16_t>::min();
      *max = std::numeric_limits<int16_t>::max();
      return;
    case PhysicalType::kInt32:
      *min = std::numeric_limits<int32_t>::min();
      *max = std::numeric_limits<int32_t>::max();
      return;
    case PhysicalType::kInt64:
      *min = std::numeric_limits<int64_t>::min();
      *max = std::numeric_limits<int64_t>::max();
      return;
    case PhysicalType::kInt128:
      *min = std::numeric_limits<absl::int128>::min();
      *max = std::numeric_limits<absl::int128>::max();
      return;
    default:
      LOG(FATAL) << DataTypeName(type) << " is not integer-backed";
  }
}

std::string FormatDecimal(absl::int128 unscaled, int scale) {
  bool negative = unscaled < 0;
  // Work with the unsigned magnitude so that the most negative value does not overflow.
  absl::uint128 mag =
      negative ? -static_cast<absl::uint128>(unscaled) : static_cast<absl::uint128>(unscaled);
  std::string digits;
  do {
    digits.push_back(static_cast<char>('0' + static_cast<int>(mag % 10)));
    mag /= 10;
  } while (mag != 0);
  while (static_cast<int>(digits.size()) <= scale) digits.push_back('0');
  std::string out = negative ? "-" : "";
  for (int i = static_cast<int>(digits.size()) - 1; i >= 0; i--) {
    out.push_back(digits[i]);
    if (i == scale && scale > 0) out.push_back('.');
  }
  return out;
}

}  // namespace basalt
