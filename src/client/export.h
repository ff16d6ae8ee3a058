#pragma once

// BASALT_EXPORT marks the classes of the public client API. libbasalt_client.so is compiled with
// -fvisibility=hidden and links the internal libraries with --exclude-libs, so only what is marked
// here is exported from it.

#define BASALT_EXPORT __attribute__((visibility("default")))
