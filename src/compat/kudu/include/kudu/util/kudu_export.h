#pragma once

// Symbol visibility of the Kudu-compatible API (libbasalt_kudu_compat.so is compiled with
// -fvisibility=hidden; only what is marked KUDU_EXPORT is exported).

#ifndef KUDU_EXPORT
#define KUDU_EXPORT __attribute__((visibility("default")))
#endif
#ifndef KUDU_NO_EXPORT
#define KUDU_NO_EXPORT __attribute__((visibility("hidden")))
#endif
#ifndef KUDU_DEPRECATED
#define KUDU_DEPRECATED __attribute__((__deprecated__))
#endif
#ifndef KUDU_DEPRECATED_EXPORT
#define KUDU_DEPRECATED_EXPORT KUDU_EXPORT KUDU_DEPRECATED
#endif
#ifndef KUDU_DEPRECATED_NO_EXPORT
#define KUDU_DEPRECATED_NO_EXPORT KUDU_NO_EXPORT KUDU_DEPRECATED
#endif
