#pragma once

// String helpers that accept std::string_view.
//
// The packaged Abseil (20220623, ABSL_OPTION_USE_STD_STRING_VIEW=0) has its own
// absl::string_view, and absl::StrCat / absl::StrAppend / absl::Status do not accept
// std::string_view, which our code uses everywhere. basalt::StrCat and basalt::StrAppend forward
// to Abseil's after converting any std::string_view argument; ToAbsl converts one explicitly
// (e.g. for an absl::Status message). absl::StrFormat accepts std::string_view with %s directly.

#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace basalt {

inline absl::string_view ToAbsl(std::string_view s) {
  return absl::string_view(s.data(), s.size());
}

namespace strings_internal {
template <typename T>
const T& Forward(const T& v) {
  return v;
}
inline absl::string_view Forward(std::string_view s) { return ToAbsl(s); }
}  // namespace strings_internal

template <typename... Args>
std::string StrCat(const Args&... args) {
  return absl::StrCat(strings_internal::Forward(args)...);
}

template <typename... Args>
void StrAppend(std::string* out, const Args&... args) {
  absl::StrAppend(out, strings_internal::Forward(args)...);
}

}  // namespace basalt
