// The data section's CRC-32 (core/src/crc32.h: slicing-by-16, and the carry-less multiply
// folds on x86 with PCLMULQDQ) against boost::crc_32_type, the bytewise implementation
// files were written with: same value for every length (the 64- and 16-byte loops and the
// byte tail), every start alignment, and chained calls cut anywhere; the 128-bit and the
// 512-bit folds each on their own.
#include <doctest/doctest.h>

#include "crc32.h"

#include <boost/crc.hpp>

#include <random>
#include <string>
#include <vector>

namespace {
uint32_t reference(const uint8_t* p, size_t n) {
  boost::crc_32_type c;
  c.process_bytes(p, n);
  return c.checksum();
}
}  // namespace

TEST_SUITE("crc32") {
  TEST_CASE("known values") {
    const char* s = "123456789";  // the standard check value of CRC-32/ISO-HDLC
    CHECK(minnow::crc32(reinterpret_cast<const uint8_t*>(s), 9) == 0xCBF43926u);
    CHECK(minnow::crc32(nullptr, 0) == 0u);
  }

  TEST_CASE("matches boost::crc_32_type over lengths, offsets and chaining") {
    std::mt19937 rng(7);
    std::vector<uint8_t> buf(4096 + 64);
    for (auto& b : buf) b = static_cast<uint8_t>(rng());
#ifdef MINNOW_CRC32_CLMUL
    const std::string path = minnow::detail::crc32_clmul_available() ? "used" : "not available";
    MESSAGE("carry-less multiply path: " << path);
#endif
    for (size_t off = 0; off < 17; ++off)
      for (size_t n = 0; n <= 600; ++n) {
        CAPTURE(off);
        CAPTURE(n);
        const uint32_t want = reference(buf.data() + off, n);
        REQUIRE(minnow::crc32(buf.data() + off, n) == want);
        REQUIRE(minnow::crc32_tables(buf.data() + off, n) == want);
      }
#ifdef MINNOW_CRC32_CLMUL
    // crc32() takes the 512-bit folds where the CPU has them: the 128-bit ones are checked
    // here on their own, the 512-bit ones against them (register values, any start value).
    if (minnow::detail::crc32_clmul_available()) {
      const bool wide = minnow::detail::crc32_clmul512_available();
      MESSAGE("512-bit carry-less multiply path: " << std::string(wide ? "used" : "not available"));
      for (size_t off = 0; off < 5; ++off)
        for (size_t n = 64; n <= 4096; n += 16) {
          CAPTURE(off);
          CAPTURE(n);
          const uint32_t reg = minnow::detail::crc32_clmul_blocks(buf.data() + off, n, 0xFFFFFFFFu);
          REQUIRE(~reg == reference(buf.data() + off, n));
          if (wide) {
            REQUIRE(minnow::detail::crc32_clmul512_blocks(buf.data() + off, n, 0xFFFFFFFFu) == reg);
            REQUIRE(minnow::detail::crc32_clmul512_blocks(buf.data() + off, n, 0x12345678u) ==
                    minnow::detail::crc32_clmul_blocks(buf.data() + off, n, 0x12345678u));
          }
        }
    }
#endif
    for (size_t n : {size_t(1000), size_t(4096), size_t(4096 + 63)})
      for (size_t cut : {size_t(0), size_t(1), size_t(63), size_t(64), size_t(65), n / 3, n - 1, n}) {
        CAPTURE(n);
        CAPTURE(cut);
        CHECK(minnow::crc32(buf.data(), n) == reference(buf.data(), n));
        CHECK(minnow::crc32(buf.data() + cut, n - cut, minnow::crc32(buf.data(), cut)) == reference(buf.data(), n));
      }
  }
}
