#pragma once

// DICT encoding for STRING, BINARY and VARCHAR: each distinct value of a column file is stored
// once in a per-file dictionary, and pages hold bit-packed codes; the default for strings
// (docs/cfile_encodings.md has the byte tables).
//
// The file's page builders share one DictionaryBuilder that assigns codes 0, 1, 2, ... in order
// of first appearance. Once the dictionary page passes --cfile_dict_max_bytes, the page being
// built ends and every later page of the file is a PLAIN page instead (high-cardinality data
// gains nothing from a dictionary). The cfile writer writes FinishDictionary() once, after the
// last page; the reader parses it with Dictionary::Parse() and hands it to every page decoder.
//
// Dictionary page: a PLAIN page of BINARY values, entry i being the value of code i.
// Data page: u8 mode | body; mode 0: body is a BIT_PACKED page of int32 codes; mode 1: body is a
// PLAIN page of the values (fallback).
//
// Predicates are evaluated on codes: Dictionary::Evaluate() runs the predicate once per
// dictionary entry into a bitmap indexed by code, and pages test each code against it.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cfile/encoding.h"
#include "common/arena.h"
#include "gflags/gflags_declare.h"

DECLARE_int64(cfile_dict_max_bytes);

namespace basalt {

class ColumnPredicate;

// The dictionary of one column file while it is written.
// Invariant: entries are unique; code i is the i-th distinct value added.
// Not thread-safe; the caller serializes (the file's writer owns it).
class DictionaryBuilder {
 public:
  // `max_bytes`: the dictionary page size past which IsFull() turns true.
  explicit DictionaryBuilder(size_t max_bytes = FLAGS_cfile_dict_max_bytes);
  DictionaryBuilder(const DictionaryBuilder&) = delete;
  DictionaryBuilder& operator=(const DictionaryBuilder&) = delete;

  // Returns the code of `value`, adding it when new (even when that takes the dictionary past
  // its bound: the value that fills it is still coded).
  uint32_t Add(std::string_view value);
  // Whether the dictionary has passed its size bound (or kMaxValuesPerPage entries); pages
  // started from now on are PLAIN.
  bool IsFull() const;

  size_t num_entries() const { return entries_.size(); }
  // Size in bytes of the dictionary page FinishDictionary() would return.
  size_t size_bytes() const { return 4 + 4 * entries_.size() + value_bytes_; }
  // REQUIRES: code < num_entries(). Valid as long as this builder.
  std::string_view entry(uint32_t code) const { return entries_[code]; }

  // The dictionary page: a PLAIN BINARY page of the entries in code order.
  std::string FinishDictionary() const;

 private:
  const size_t max_bytes_;
  Arena arena_;  // Holds the entries' bytes; never moves them.
  std::vector<std::string_view> entries_;
  absl::flat_hash_map<absl::string_view, uint32_t> codes_;
  size_t value_bytes_ = 0;
};

// A parsed dictionary page. Immutable; thread-safe.
class Dictionary {
 public:
  // Parses a dictionary page (it is copied). DATA_LOSS if malformed.
  static absl::StatusOr<std::unique_ptr<Dictionary>> Parse(std::string_view page);

  size_t size() const { return entries_.size(); }
  // Entries in code order; they point into this Dictionary.
  const std::string_view* entries() const { return entries_.data(); }

  // Evaluates `pred` once per entry: returns a bitmap of BitmapSize(size()) (+ 8 slack) bytes
  // with bit `code` set when the entry matches. Pages hold no NULLs, so IS NULL matches nothing.
  std::vector<uint8_t> Evaluate(const ColumnPredicate& pred) const;

 private:
  Dictionary() = default;
  std::string page_;
  std::vector<std::string_view> entries_;
};

// REQUIRES: options.dictionary != nullptr.
std::unique_ptr<PageBuilder> NewDictPageBuilder(const PageBuilderOptions& options);
// REQUIRES: dictionary != nullptr.
std::unique_ptr<PageDecoder> NewDictPageDecoder(const Dictionary* dictionary);

}  // namespace basalt
