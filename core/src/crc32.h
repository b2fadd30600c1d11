// CRC-32 (IEEE 802.3, reflected 0xEDB88320, init and final xor 0xFFFFFFFF: the checksum of
// zlib, PNG and boost::crc_32_type) of the model's data section. Portable: slicing-by-16,
// sixteen independent table look-ups per 16 bytes instead of a chain of one per byte
// (resnet50's 97 MiB of weights: boost::crc_32_type 2.4 s on a loaded 2-core machine, this
// 0.3 s, as fast as zlib's crc32). On x86 with PCLMULQDQ, carry-less multiplication folds
// 64 bytes a step (Intel's "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ"):
// Zen 4, 100 MiB, 32 ms -> about 4 ms, most of resnet50's load time before. Where the CPU
// has AVX-512 and VPCLMULQDQ, one 512-bit register folds the four lanes at once.
// Tested against boost::crc_32_type (both paths) in tests/unit/crc32_test.cc.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#define MINNOW_CRC32_CLMUL 1
#endif

namespace minnow {
namespace detail {

using Crc32Tables = std::array<std::array<uint32_t, 256>, 16>;

constexpr Crc32Tables make_crc32_tables() {
  Crc32Tables t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    t[0][i] = c;
  }
  for (int s = 1; s < 16; ++s)
    for (uint32_t i = 0; i < 256; ++i) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
  return t;
}

inline constexpr Crc32Tables kCrc32Tables = make_crc32_tables();

}  // namespace detail

// Slicing-by-16. `crc` continues a previous checksum (0 to start).
inline uint32_t crc32_tables(const uint8_t* data, size_t size, uint32_t crc = 0) {
  const auto& t = detail::kCrc32Tables;
  uint32_t c = ~crc;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  for (; size >= 16; data += 16, size -= 16) {
    uint32_t w[4];
    std::memcpy(w, data, 16);
    w[0] ^= c;
    c = t[15][w[0] & 0xff] ^ t[14][(w[0] >> 8) & 0xff] ^ t[13][(w[0] >> 16) & 0xff] ^ t[12][w[0] >> 24] ^
        t[11][w[1] & 0xff] ^ t[10][(w[1] >> 8) & 0xff] ^ t[9][(w[1] >> 16) & 0xff] ^ t[8][w[1] >> 24] ^
        t[7][w[2] & 0xff] ^ t[6][(w[2] >> 8) & 0xff] ^ t[5][(w[2] >> 16) & 0xff] ^ t[4][w[2] >> 24] ^
        t[3][w[3] & 0xff] ^ t[2][(w[3] >> 8) & 0xff] ^ t[1][(w[3] >> 16) & 0xff] ^ t[0][w[3] >> 24];
  }
#endif
  for (; size > 0; ++data, --size) c = t[0][(c ^ *data) & 0xff] ^ (c >> 8);
  return ~c;
}

#ifdef MINNOW_CRC32_CLMUL
namespace detail {
// The folding constants, bit-reflected, as x^n mod P(x) for P = 0x104C11DB7: a 128-bit
// lane is carried forward by n bits as the sum of its two 64-bit halves times x^(n+32)
// and x^(n-32) (mod P, reflected, times x: the products of reflected operands come out
// one bit low). 512 bits (four lanes a step), 128 bits (one lane), then 64 bits, and
// Barrett's reduction to 32: P itself and mu = floor(x^64 / P), both reflected.
constexpr uint64_t kFold512Lo = 0x154442bd4, kFold512Hi = 0x1c6e41596;
constexpr uint64_t kFold128Lo = 0x1751997d0, kFold128Hi = 0x0ccaa009e;
constexpr uint64_t kFold64 = 0x163cd6124;
constexpr uint64_t kPoly = 0x1db710641, kMu = 0x1f7011641;

#define MINNOW_CRC32_TARGET __attribute__((target("pclmul,sse4.1")))
// lane * x^n (mod P): its low half times k.lo, its high half times k.hi, plus `next`.
MINNOW_CRC32_TARGET inline __m128i crc32_fold(__m128i lane, __m128i k, __m128i next) {
  return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(lane, k, 0x00), _mm_clmulepi64_si128(lane, k, 0x11)), next);
}
MINNOW_CRC32_TARGET inline __m128i crc32_load(const uint8_t* q) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
}

// The four 128-bit lanes a..d of the last 64 bytes folded into one, then the remaining
// 16-byte blocks (size: a multiple of 16) from p, and the reduction to 32 bits.
MINNOW_CRC32_TARGET inline uint32_t crc32_clmul_finish(__m128i a, __m128i b, __m128i c, __m128i d,
                                                       const uint8_t* p, size_t size) {
  const __m128i k128 = _mm_set_epi64x(static_cast<long long>(kFold128Hi), static_cast<long long>(kFold128Lo));
  a = crc32_fold(a, k128, b);
  a = crc32_fold(a, k128, c);
  a = crc32_fold(a, k128, d);
  for (; size >= 16; p += 16, size -= 16) a = crc32_fold(a, k128, crc32_load(p));
  // 128 -> 64 bits: the low half times x^96 into the high half's place ...
  const __m128i low32 = _mm_setr_epi32(-1, 0, -1, 0);
  a = _mm_xor_si128(_mm_srli_si128(a, 8), _mm_clmulepi64_si128(a, k128, 0x10));
  // ... then the low 32 bits times x^64 into the rest.
  const __m128i k64 = _mm_set_epi64x(0, static_cast<long long>(kFold64));
  a = _mm_xor_si128(_mm_srli_si128(a, 4), _mm_clmulepi64_si128(_mm_and_si128(a, low32), k64, 0x00));
  // Barrett: q = (a mod x^32) * mu, then a + (q mod x^32) * P leaves the CRC in bits 32..63.
  const __m128i pm = _mm_set_epi64x(static_cast<long long>(kMu), static_cast<long long>(kPoly));
  __m128i q = _mm_clmulepi64_si128(_mm_and_si128(a, low32), pm, 0x10);
  q = _mm_clmulepi64_si128(_mm_and_si128(q, low32), pm, 0x00);
  return static_cast<uint32_t>(_mm_extract_epi32(_mm_xor_si128(a, q), 1));
}

// The CRC register (not inverted) after `size` bytes, size >= 64 and a multiple of 16.
MINNOW_CRC32_TARGET inline uint32_t crc32_clmul_blocks(const uint8_t* p, size_t size, uint32_t reg) {
  __m128i a = _mm_xor_si128(crc32_load(p), _mm_cvtsi32_si128(static_cast<int>(reg)));
  __m128i b = crc32_load(p + 16), c = crc32_load(p + 32), d = crc32_load(p + 48);
  p += 64;
  size -= 64;
  const __m128i k512 = _mm_set_epi64x(static_cast<long long>(kFold512Hi), static_cast<long long>(kFold512Lo));
  for (; size >= 64; p += 64, size -= 64) {
    a = crc32_fold(a, k512, crc32_load(p));
    b = crc32_fold(b, k512, crc32_load(p + 16));
    c = crc32_fold(c, k512, crc32_load(p + 32));
    d = crc32_fold(d, k512, crc32_load(p + 48));
  }
  return crc32_clmul_finish(a, b, c, d, p, size);
}

// The same four lanes in one 512-bit register, each VPCLMULQDQ folding all four: the
// 128-bit loop is bound by PCLMULQDQ's throughput (Zen 5: resnet50's 97 MiB in 8.5 ms,
// 12 GB/s, with the data in memory); this one by memory.
#define MINNOW_CRC32_TARGET512 __attribute__((target("pclmul,sse4.1,avx512f,vpclmulqdq")))
MINNOW_CRC32_TARGET512 inline uint32_t crc32_clmul512_blocks(const uint8_t* p, size_t size, uint32_t reg) {
  // (Set and store, not zext / broadcast / extract: GCC 12's versions of those read an
  // undefined vector and warn.)
  __m512i acc = _mm512_xor_si512(_mm512_loadu_si512(p), _mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                                                         static_cast<int>(reg)));
  p += 64;
  size -= 64;
  const long long hi = static_cast<long long>(kFold512Hi), lo = static_cast<long long>(kFold512Lo);
  const __m512i k512 = _mm512_set_epi64(hi, lo, hi, lo, hi, lo, hi, lo);
  for (; size >= 64; p += 64, size -= 64) {
    const __m512i l = _mm512_clmulepi64_epi128(acc, k512, 0x00);
    const __m512i h = _mm512_clmulepi64_epi128(acc, k512, 0x11);
    acc = _mm512_ternarylogic_epi64(l, h, _mm512_loadu_si512(p), 0x96);  // l ^ h ^ next
  }
  alignas(64) __m128i lanes[4];
  _mm512_store_si512(lanes, acc);
  return crc32_clmul_finish(lanes[0], lanes[1], lanes[2], lanes[3], p, size);
}
#undef MINNOW_CRC32_TARGET512

#undef MINNOW_CRC32_TARGET

// The carry-less multiply path this CPU takes, read once: 0 none, 1 the 128-bit folds
// (CPUID leaf 1, ECX: PCLMULQDQ bit 1, SSE4.1 bit 19), 2 the 512-bit ones too (also leaf 7:
// AVX-512F EBX bit 16, VPCLMULQDQ ECX bit 10; and the OS saving the 512-bit state: OSXSAVE,
// leaf 1 ECX bit 27, then XCR0's SSE, AVX, opmask and ZMM bits). (Not __builtin_cpu_supports:
// it links libgcc's CPU model tables, 6 KB of the core library.)
inline int crc32_clmul_level() {
  static const int level = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || !(ecx & (1u << 1)) || !(ecx & (1u << 19))) return 0;
    const bool osxsave = (ecx & (1u << 27)) != 0;
    if (!osxsave || !__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) || !(ebx & (1u << 16)) || !(ecx & (1u << 10)))
      return 1;
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (lo & 0xE6u) == 0xE6u ? 2 : 1;
  }();
  return level;
}
inline bool crc32_clmul_available() { return crc32_clmul_level() >= 1; }
inline bool crc32_clmul512_available() { return crc32_clmul_level() >= 2; }
}  // namespace detail
#endif

// `crc` continues a previous checksum (0 to start). The carry-less multiply path where the
// CPU has it (x86) and there are 64 bytes or more; the tables for the tail and elsewhere.
inline uint32_t crc32(const uint8_t* data, size_t size, uint32_t crc = 0) {
#ifdef MINNOW_CRC32_CLMUL
  const int level = size >= 64 ? detail::crc32_clmul_level() : 0;
  if (level > 0) {
    const size_t blocks = size & ~size_t(15);
    const uint32_t reg = level == 2 ? detail::crc32_clmul512_blocks(data, blocks, ~crc)
                                    : detail::crc32_clmul_blocks(data, blocks, ~crc);
    return crc32_tables(data + blocks, size - blocks, ~reg);
  }
#endif
  return crc32_tables(data, size, crc);
}

}  // namespace minnow
