#pragma once

// A string as a JSON string literal: quotes, backslashes and control characters escaped (\n,
// \r, \t, \u00XX); other bytes, UTF-8 included, as they are. Shared by the CLI's JSON output
// and basalt-tsdbd's answers.

#include <string>
#include <string_view>

namespace basalt {

std::string JsonQuote(std::string_view s);

}  // namespace basalt
