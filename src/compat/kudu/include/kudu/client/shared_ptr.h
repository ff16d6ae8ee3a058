#pragma once

// kudu::client::sp: the smart pointers the client API hands out (std's).

#include <memory>

namespace kudu {
namespace client {
namespace sp {
using std::enable_shared_from_this;
using std::shared_ptr;
using std::weak_ptr;
}  // namespace sp
}  // namespace client
}  // namespace kudu
