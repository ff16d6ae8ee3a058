#pragma once

// Binds the predicate expressions of --predicates (predicate_parser.h; syntax: docs/cli.md) to a
// table's columns and adds them to a scanner. Shared by the actions that scan (`table scan`,
// `table count`, `table copy`).

#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "client/client.h"
#include "tools/predicate_parser.h"

namespace basalt::tools {

// Parses `expr` and adds each predicate to `scanner` (of `table`). INVALID_ARGUMENT prefixed with
// "--predicates: " for a syntax error (with a caret line), an unknown column or a value that does
// not fit its column. REQUIRES: the scanner is not open.
absl::Status AddScanPredicates(std::string_view expr, client::Table* table,
                               client::Scanner* scanner);

// Binds parsed predicates and adds them to `scanner`; errors are prefixed with "<what>: " (an
// unknown column, a value that does not fit its column).
absl::Status AddPredicateDefs(const std::vector<PredicateDef>& preds, std::string_view what,
                              client::Table* table, client::Scanner* scanner);

}  // namespace basalt::tools
