#pragma once

// The chaos suite's verifier: compares what the writers were told (chaos_writer_util.h) with what
// a final snapshot scan returns, and counts each kind of anomaly.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tests/chaos_writer_util.h"

namespace basalt::chaos {

// A row as the final scan returns it.
struct ScannedRow {
  int32_t key = 0;
  int32_t value = 0;                 // int_val
  std::optional<std::string> label;  // string_val
};

struct Verdict {
  int64_t acknowledged = 0;  // Acknowledged inserts and updates.
  int64_t rows = 0;          // Rows the scan returned.
  // Acknowledged inserts missing from the scan.
  int64_t lost = 0;
  // Keys the scan returned that no writer ever sent, or sent and was told were not applied.
  int64_t phantom = 0;
  // Keys the scan returned more than once.
  int64_t duplicated = 0;
  // Keys whose value is older than their newest acknowledged update, or newer than any sent.
  int64_t lost_updates = 0;
  // Rows whose string_val is not the one written with their int_val (a column mixed up).
  int64_t corrupt = 0;
  // Inserts of fresh keys answered ALREADY_EXISTS (a retry applied twice).
  int64_t own_already_exists = 0;
  // The longest any writer went without an acknowledgement, in seconds.
  double longest_unavailability_s = 0;
  // The longest Flush() of any writer, in seconds.
  double longest_flush_s = 0;
  // A few examples of each anomaly, for the report.
  std::vector<std::string> examples;

  bool ok() const {
    return lost == 0 && phantom == 0 && duplicated == 0 && lost_updates == 0 && corrupt == 0 &&
           own_already_exists == 0;
  }
  // One line: {"seed":...,"acknowledged":...,"lost":...,...}.
  std::string ToJson(uint64_t seed) const;
};

// `rows`: every row the scan returned, in any order.
Verdict Verify(const std::vector<WriterLog>& logs, const std::vector<ScannedRow>& rows);

}  // namespace basalt::chaos
