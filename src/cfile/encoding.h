#pragma once

// Page encodings of column files: the interface between the cfile writer/reader and the one file
// pair per encoding (plain_encoding, bitpacked_encoding, bitshuffle_encoding, rle_encoding,
// dict_encoding, prefix_encoding). Byte layouts are tabled in docs/cfile_encodings.md.
//
// A *page* holds the non-NULL values of a run of rows of one column, encoded. The cfile layer
// strips NULLs before Add() and keeps the null bitmap itself, checksums and compresses the
// encoded page body, and maps row ordinals to page positions; an encoding sees only the dense
// sequence of values. Cells passed to builders and produced by decoders are in the cell format of
// types.h (fixed-width values; std::string_view for STRING/BINARY/VARCHAR), i.e. the layout of a
// ColumnBlock.
//
// Writing a page:
//   auto builder = CreatePageBuilder(type, encoding, options);   // once per column file
//   while (rows remain) {
//     size_t taken = builder->Add(cells, n);   // may take fewer than n: the page is full
//     if (builder->IsFull()) { write builder->Finish(); builder->Reset(); }
//   }
//   if (builder->count() > 0) write builder->Finish();
//   DICT only: after the last page, write options.dictionary->FinishDictionary() once.
//
// Reading a page:
//   auto decoder = CreatePageDecoder(type, encoding, decoder_options);   // reusable across pages
//   BASALT_RETURN_IF_ERROR(decoder->Init(page_body));   // DATA_LOSS if malformed
//   decoder->SeekToPositionInPage(i); decoder->DecodeNext(n, &block, dst_offset); ...
//
// Errors: decoders treat their input as untrusted. Init() validates every header field and
// DecodeNext() whatever Init() could not check cheaply; malformed input yields DATA_LOSS with a
// message naming the encoding and the offending field or offset (the caller prepends the file
// name and page). Corrupt input never causes a crash or an out-of-bounds access; in a few places
// (bit-packed residuals, RLE literals, bit-shuffled planes) it may decode to wrong values, which
// the cfile layer's page CRC32C catches first.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/column_block.h"
#include "common/schema.h"
#include "common/types.h"

namespace basalt {

class ColumnPredicate;
class DictionaryBuilder;
class Dictionary;

// Default target size of an encoded page. The cfile writer owns --cfile_default_block_size and
// passes the column's block_size_bytes (or that flag) as PageBuilderOptions::page_size_bytes.
inline constexpr size_t kDefaultPageSizeBytes = 256 * 1024;
// Upper bound on the values one page may hold, whatever the encoding's compression: keeps the
// decode buffers a reader may need bounded, and lets decoders reject absurd counts in corrupt
// headers before allocating anything.
inline constexpr size_t kMaxValuesPerPage = 1 << 20;

struct PageBuilderOptions {
  // Target size of the encoded page body in bytes: a builder reports IsFull() once its encoded
  // size reaches this (BIT_SHUFFLE counts the bytes before LZ4). A page also ends at
  // kMaxValuesPerPage values.
  size_t page_size_bytes = kDefaultPageSizeBytes;
  // DICT only, required: the file's dictionary, shared by every page of the file. Borrowed; must
  // outlive the builder.
  DictionaryBuilder* dictionary = nullptr;
};

// Encodes one page at a time. Created once per column file and reused across its pages with
// Reset(). Valid call order per page: Add()* then Finish() then Reset().
// Not thread-safe; the caller serializes.
class PageBuilder {
 public:
  virtual ~PageBuilder() = default;

  // Adds up to `n` non-NULL cells from `cells` (n contiguous cells in the cell format; for
  // variable-length types an array of std::string_view) and returns how many it took: fewer
  // than n only when the page became full. Cells are copied; the input need not outlive the call.
  // Returns 0 if IsFull(). REQUIRES: Finish() not called since the last Reset().
  virtual size_t Add(const void* cells, size_t n) = 0;

  // Whether the page has reached its target size (or kMaxValuesPerPage values).
  virtual bool IsFull() const = 0;

  // Values added since the last Reset().
  virtual size_t count() const = 0;

  // Encodes the page and returns its body. The bytes stay valid until Reset() or destruction.
  // An empty page (count() == 0) is valid. REQUIRES: not called twice without Reset().
  virtual std::string_view Finish() = 0;

  // Starts a new page; keeps allocated memory for reuse.
  virtual void Reset() = 0;

  // Copies the first / last value added to this page into `cell` (cell format; for
  // variable-length types the std::string_view points into the builder and stays valid until
  // Reset()). Used for the value index of key files. Returns false when the page is empty.
  virtual bool GetFirstValue(void* cell) const = 0;
  virtual bool GetLastValue(void* cell) const = 0;
};

// State an encoding prepares once for a predicate and reuses for every page of a file (DICT: the
// set of matching dictionary codes). Opaque to callers. Immutable once built; thread-safe.
class EncodedPredicate {
 public:
  virtual ~EncodedPredicate() = default;
};

// Where the parts of one page's bytes start, computed once by a decoder (PageDecoder::
// ComputeLayout) and handed to every later decoder of the same bytes (InitWithLayout), so that
// a decoder opened for one value skips the walk to it. BIT_PACKED: the offsets of its blocks,
// whose sizes vary (a point lookup walked half of a 256 KiB page's block headers, a cache miss
// each). Opaque to callers; immutable once built, so one layout may serve decoders on many
// threads. A layout used with other bytes than its own would send decodes out of the page: the
// cfile reader keeps each one with the cached page it was computed from.
class PageLayout {
 public:
  virtual ~PageLayout() = default;
  // Heap bytes it holds, for the block cache's charge.
  virtual size_t MemoryUsage() const = 0;
};

struct PageDecoderOptions {
  // DICT only, required: the file's parsed dictionary. Borrowed; must outlive the decoder and
  // every cell decoded from it (decoded strings point into the dictionary's memory).
  const Dictionary* dictionary = nullptr;
};

// Decodes one page at a time: Init() on a page, then any mix of seeks and DecodeNext().
// Reusable across pages: Init() starts over (and may keep scratch memory).
// Not thread-safe; the caller serializes.
class PageDecoder {
 public:
  virtual ~PageDecoder() = default;

  // Parses `page` (a page body as returned by PageBuilder::Finish(), after decompression).
  // Validates every header field: DATA_LOSS on malformed input. `page` is borrowed: it must stay
  // valid and unchanged while this decoder uses it and while any variable-length cell decoded
  // from it is used (PLAIN and DICT-fallback strings point into it). Positions at 0.
  virtual absl::Status Init(std::string_view page) = 0;

  // Init() given the layout a decoder of this encoding computed from the same bytes (null: none,
  // the same as Init(page)). The layout must outlive this decoder's use of the page.
  virtual absl::Status InitWithLayout(std::string_view page, const PageLayout* layout) {
    return Init(page);
  }

  // The layout of `page` (a body Init() would accept), validated whole, or null when this
  // encoding has none or the page is malformed anywhere (Init() and the decodes then report it
  // where they meet it, as without a layout). Leaves the decoder needing an Init().
  virtual std::unique_ptr<const PageLayout> ComputeLayout(std::string_view page) { return nullptr; }

  // Number of values in the page. REQUIRES: Init() succeeded.
  virtual size_t count() const = 0;
  // Position of the next value DecodeNext() returns, in [0, count()].
  virtual size_t position() const = 0;

  // Moves to value `pos`. REQUIRES: pos <= count().
  virtual void SeekToPositionInPage(size_t pos) = 0;

  // Decodes min(n, count() - position()) values into out's cells [dst_offset, dst_offset + k),
  // advances, and returns k. Leaves out->null_bitmap alone. Variable-length cells point into the
  // page, the dictionary, or out->arena (PREFIX; REQUIRES out->arena != nullptr then).
  // REQUIRES: out->type has this decoder's cell format; dst_offset + k <= out->capacity.
  // DATA_LOSS when the values turn out malformed (position is then unspecified).
  virtual absl::StatusOr<size_t> DecodeNext(size_t n, ColumnBlock* out, size_t dst_offset) = 0;

  // For pages whose values are sorted ascending (key columns): positions at the first value
  // >= *value (cell format) and sets *exact to whether it equals *value. Returns NOT_FOUND, and
  // positions at count(), when every value is smaller. Results on unsorted pages are
  // unspecified but safe. DATA_LOSS if malformed values are met.
  virtual absl::Status SeekAtOrAfterValue(const void* value, bool* exact);

  // Whether EvaluatePredicate() works on this page without decoding values (DICT pages that
  // use the dictionary). REQUIRES: Init() succeeded.
  virtual bool CanEvaluateOnEncoded() const { return false; }

  // Prepares `pred` (on this column) for EvaluatePredicate(); the result is valid for every
  // page of the same file (DICT: it depends only on the dictionary) and is meant to be built once
  // per scan. UNIMPLEMENTED for encodings without predicate evaluation on encoded data.
  virtual absl::StatusOr<std::unique_ptr<EncodedPredicate>> PreparePredicate(
      const ColumnPredicate& pred) const;

  // Evaluates the prepared predicate on the next min(n, count() - position()) values without
  // materializing them, clears bit (sel_offset + j) of `selection` for each value j that does
  // not match (bits already clear stay clear), advances, and returns the number evaluated.
  // Bits are per page value (dense, non-NULL), like DecodeNext's cells.
  // REQUIRES: CanEvaluateOnEncoded(); `prepared` came from PreparePredicate() of a decoder of
  // the same file. DATA_LOSS on malformed values.
  virtual absl::StatusOr<size_t> EvaluatePredicate(const EncodedPredicate& prepared, size_t n,
                                                   uint8_t* selection, size_t sel_offset);

 protected:
  // Random access used by the default SeekAtOrAfterValue (binary search): compares value `pos`
  // of the page with *value (TypeInfo::Compare order) into *result. DATA_LOSS if malformed.
  virtual absl::Status CompareAt(size_t pos, const void* value, int* result) = 0;
};

// The encoding `requested` resolves to for `type`: kAuto becomes the type's default
// (BIT_PACKED for integers, DATE, UNIXTIME_MICROS, DECIMAL32/64; BIT_SHUFFLE for FLOAT/DOUBLE;
// RLE for BOOL; DICT for STRING/BINARY/VARCHAR; PLAIN for DECIMAL128). INVALID_ARGUMENT, naming
// the pair and the allowed encodings, when `requested` is not allowed for `type`.
absl::StatusOr<EncodingType> ResolveEncoding(DataType type, EncodingType requested);
// Whether `encoding` (not kAuto) can store `type`. Allowed: PLAIN for every type; BIT_PACKED
// for integer-backed types except BOOL and DECIMAL128; BIT_SHUFFLE for every fixed-width type
// except BOOL; RLE for BOOL; DICT and PREFIX for STRING/BINARY/VARCHAR.
bool IsEncodingAllowed(DataType type, EncodingType encoding);
// The default encoding of `type`.
EncodingType DefaultEncoding(DataType type);

// Factories. INVALID_ARGUMENT for a disallowed (type, encoding) pair, kAuto, or DICT without a
// dictionary in the options.
absl::StatusOr<std::unique_ptr<PageBuilder>> CreatePageBuilder(DataType type, EncodingType encoding,
                                                               const PageBuilderOptions& options);
absl::StatusOr<std::unique_ptr<PageDecoder>> CreatePageDecoder(DataType type, EncodingType encoding,
                                                               const PageDecoderOptions& options);

}  // namespace basalt
