#include "common/coding.h"

namespace basalt {

void PutFixed32(std::string* dst, uint32_t v) {
  char buf[sizeof(v)];
  EncodeFixed32(buf, v);
  dst->append(buf, sizeof(buf));
}

void PutFixed64(std::string* dst, uint64_t v) {
  char buf[sizeof(v)];
  EncodeFixed64(buf, v);
  dst->append(buf, sizeof(buf));
}

char* EncodeVarint64(char* dst, uint64_t v) {
  auto* p = reinterpret_cast<unsigned char*>(dst);
  while (v >= 0x80) {
    *p++ = static_cast<unsigned char>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<unsigned char>(v);
  return reinterpret_cast<char*>(p);
}

char* EncodeVarint32(char* dst, uint32_t v) { return EncodeVarint64(dst, v); }

void PutVarint32(std::string* dst, uint32_t v) {
  char buf[kMaxVarint32Length];
  char* end = EncodeVarint32(buf, v);
  dst->append(buf, end - buf);
}

void PutVarint64(std::string* dst, uint64_t v) {
  char buf[kMaxVarint64Length];
  char* end = EncodeVarint64(buf, v);
  dst->append(buf, end - buf);
}

void PutLengthPrefixed(std::string* dst, std::string_view value) {
  PutVarint32(dst, static_cast<uint32_t>(value.size()));
  dst->append(value.data(), value.size());
}

int VarintLength(uint64_t v) {
  int len = 1;
  while (v >= 0x80) {
    v >>= 7;
    len++;
  }
  return len;
}

const char* GetVarint64Ptr(const char* p, const char* limit, uint64_t* value) {
  uint64_t result = 0;
  for (int shift = 0; shift <= 63 && p < limit; shift += 7) {
    uint64_t byte = static_cast<unsigned char>(*p++);
    // The tenth byte may only carry the top bit of a 64-bit value.
    if (shift == 63 && byte > 1) return nullptr;
    result |= (byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *value = result;
      return p;
    }
  }
  return nullptr;
}

const char* GetVarint32Ptr(const char* p, const char* limit, uint32_t* value) {
  uint32_t result = 0;
  for (int shift = 0; shift <= 28 && p < limit; shift += 7) {
    uint32_t byte = static_cast<unsigned char>(*p++);
    // The fifth byte may only carry the top four bits of a 32-bit value.
    if (shift == 28 && byte > 0x0f) return nullptr;
    result |= (byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *value = result;
      return p;
    }
  }
  return nullptr;
}

bool GetFixed32(std::string_view* input, uint32_t* value) {
  if (input->size() < sizeof(uint32_t)) return false;
  *value = DecodeFixed32(input->data());
  input->remove_prefix(sizeof(uint32_t));
  return true;
}

bool GetFixed64(std::string_view* input, uint64_t* value) {
  if (input->size() < sizeof(uint64_t)) return false;
  *value = DecodeFixed64(input->data());
  input->remove_prefix(sizeof(uint64_t));
  return true;
}

bool GetVarint32(std::string_view* input, uint32_t* value) {
  const char* end = input->data() + input->size();
  const char* q = GetVarint32Ptr(input->data(), end, value);
  if (q == nullptr) return false;
  input->remove_prefix(q - input->data());
  return true;
}

bool GetVarint64(std::string_view* input, uint64_t* value) {
  const char* end = input->data() + input->size();
  const char* q = GetVarint64Ptr(input->data(), end, value);
  if (q == nullptr) return false;
  input->remove_prefix(q - input->data());
  return true;
}

bool GetLengthPrefixed(std::string_view* input, std::string_view* result) {
  uint32_t len;
  if (!GetVarint32(input, &len) || input->size() < len) return false;
  *result = input->substr(0, len);
  input->remove_prefix(len);
  return true;
}

}  // namespace basalt
