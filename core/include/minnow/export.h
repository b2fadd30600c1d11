// MINNOW_API marks what libminnow exports. The library is built with hidden visibility
// (smaller, and only the public API is a contract): everything not marked stays internal.
#pragma once
#if defined(_WIN32)
#define MINNOW_API
#else
#define MINNOW_API __attribute__((visibility("default")))
#endif
