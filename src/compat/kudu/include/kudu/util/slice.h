#pragma once

// kudu::Slice: a non-owning view of bytes (pointer + length). The bytes must outlive the slice.
// Converts implicitly from std::string and C strings, which is how the client API takes column
// names and string values. Not thread-safe to mutate; const methods are thread-safe.

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <ostream>
#include <string>

#include "kudu/util/kudu_export.h"

namespace kudu {

class Status;

class KUDU_EXPORT Slice {
 public:
  Slice() : data_(reinterpret_cast<const uint8_t*>("")), size_(0) {}
  Slice(const uint8_t* d, size_t n) : data_(d), size_(n) {}
  Slice(const char* d, size_t n) : data_(reinterpret_cast<const uint8_t*>(d)), size_(n) {}
  Slice(const std::string& s)  // NOLINT(runtime/explicit)
      : data_(reinterpret_cast<const uint8_t*>(s.data())), size_(s.size()) {}
  Slice(const char* s)  // NOLINT(runtime/explicit)
      : data_(reinterpret_cast<const uint8_t*>(s)), size_(strlen(s)) {}

  const uint8_t* data() const { return data_; }
  uint8_t* mutable_data() { return const_cast<uint8_t*>(data_); }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // REQUIRES: n < size().
  const uint8_t& operator[](size_t n) const {
    assert(n < size_);
    return data_[n];
  }
  void clear() {
    data_ = reinterpret_cast<const uint8_t*>("");
    size_ = 0;
  }
  // REQUIRES: n <= size().
  void remove_prefix(size_t n) {
    assert(n <= size_);
    data_ += n;
    size_ -= n;
  }
  // REQUIRES: n <= size().
  void truncate(size_t n) {
    assert(n <= size_);
    size_ = n;
  }

  // Corruption unless size() == expected_size.
  Status check_size(size_t expected_size) const;
  std::string ToString() const;
  // Printable characters as they are, others as \xNN; at most max_len input bytes (0: all), with
  // "...<N bytes total>" when cut.
  std::string ToDebugString(size_t max_len = 0) const;

  // <0, 0 or >0 as *this is before, equal to or after b in byte order (a prefix sorts first).
  int compare(const Slice& b) const {
    const size_t n = size_ < b.size_ ? size_ : b.size_;
    const int r = n == 0 ? 0 : memcmp(data_, b.data_, n);
    if (r != 0) return r;
    return size_ < b.size_ ? -1 : (size_ > b.size_ ? 1 : 0);
  }
  bool starts_with(const Slice& x) const {
    return size_ >= x.size_ && (x.size_ == 0 || memcmp(data_, x.data_, x.size_) == 0);
  }

  struct Comparator {
    bool operator()(const Slice& a, const Slice& b) const { return a.compare(b) < 0; }
  };

  // Copies the bytes to `d` and points there. REQUIRES: d holds size() bytes.
  void relocate(uint8_t* d) {
    if (data_ != d) {
      if (size_ > 0) memcpy(d, data_, size_);
      data_ = d;
    }
  }

 private:
  const uint8_t* data_;
  size_t size_;
};

inline bool operator==(const Slice& x, const Slice& y) { return x.compare(y) == 0; }
inline bool operator!=(const Slice& x, const Slice& y) { return x.compare(y) != 0; }
inline bool operator<(const Slice& x, const Slice& y) { return x.compare(y) < 0; }
inline bool operator>(const Slice& x, const Slice& y) { return x.compare(y) > 0; }
inline bool operator<=(const Slice& x, const Slice& y) { return x.compare(y) <= 0; }
inline bool operator>=(const Slice& x, const Slice& y) { return x.compare(y) >= 0; }
inline std::ostream& operator<<(std::ostream& o, const Slice& s) {
  return o << s.ToDebugString(16);
}

// True when every byte of `s` is zero (also for an empty slice).
KUDU_EXPORT bool IsAllZeros(const Slice& s);

template <typename T>
struct SliceMap {
  typedef std::map<Slice, T, Slice::Comparator> type;
};

}  // namespace kudu
