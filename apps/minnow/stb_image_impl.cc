// stb_image's implementation, compiled here from Debian's header (libstb-dev) instead of
// linking Debian's prebuilt libstb.so, for two reasons:
// - attack surface: images given to `minnow run` may come from anywhere, and most of
//   stb_image's published bugs are in its rarer decoders (GIF, PSD, PIC, HDR, TGA). Only
//   the formats `minnow run` documents are compiled in: PNG, JPEG, BMP, PGM/PPM.
// - the sanitizer and fuzzing builds instrument the decoder too (tests/fuzz/fuzz_image.cc);
//   a prebuilt library is invisible to AddressSanitizer and to libFuzzer's coverage.
// No file I/O (STBI_NO_STDIO): image_input.cc reads the file itself, with a size limit.
// The dimension limit is stb's own first check on a header; image_input.cc also caps the
// pixel count (kMaxImagePixels) before anything is decoded.
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#define STBI_ONLY_BMP
#define STBI_ONLY_PNM
#define STBI_NO_STDIO
#define STBI_NO_LINEAR
#define STBI_NO_HDR
#define STBI_MAX_DIMENSIONS (1 << 16)
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#endif
#include <stb/stb_image.h>
