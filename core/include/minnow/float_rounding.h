// Rounding a float32 to the nearest float16 / bfloat16 value, kept as a float32.
//
// The engine computes in float32 and stores float16 / bfloat16 tensors of imported models
// as float32 (ONNX frontend). A Cast to one of those types must still give the values that
// type can hold, so the Cast kernel and the frontend's constant folding round through
// these (round to nearest even, overflow to infinity, subnormals kept, NaN stays NaN).
// Header-only and C++17, so plugins can use it without linking the core.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace minnow {

inline float round_to_float16(float v) {
  if (std::isnan(v) || std::isinf(v)) return v;
  const float a = std::fabs(v);
  // Below 2^-14 float16 is subnormal: a fixed step of 2^-24.
  if (a < 6.103515625e-05f) return std::nearbyint(v * 16777216.0f) / 16777216.0f;
  uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  u += 0xFFFu + ((u >> 13) & 1u);  // round the 23-bit mantissa to 10 bits, ties to even
  u &= ~0x1FFFu;
  float r;
  std::memcpy(&r, &u, sizeof r);
  if (std::fabs(r) > 65504.0f) return std::copysign(std::numeric_limits<float>::infinity(), v);
  return r;
}

inline float round_to_bfloat16(float v) {
  if (std::isnan(v)) return v;
  uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  u += 0x7FFFu + ((u >> 16) & 1u);  // 23 mantissa bits to 7, ties to even (overflows to inf)
  u &= 0xFFFF0000u;
  float r;
  std::memcpy(&r, &u, sizeof r);
  return r;
}

}  // namespace minnow
