// Dispatch from a run-time element type (MN_*) to a C++ type: fn(T{}) is called with the
// type, so one generic lambda serves every instantiation. Shared by the binary kernels
// (binary.h) and Cast.
#pragma once

#include <cstdint>
#include <minnow/plugin.h>

namespace minnow {
namespace cpu_dense {

// The integer types other than int64 (which kernels usually instantiate on their own);
// false if `dt` is not one.
template <class Fn>
bool with_other_int(int32_t dt, Fn&& fn) {
  switch (dt) {
    case MN_I8: fn(int8_t()); return true;
    case MN_U8: fn(uint8_t()); return true;
    case MN_I16: fn(int16_t()); return true;
    case MN_U16: fn(uint16_t()); return true;
    case MN_I32: fn(int32_t()); return true;
    case MN_U32: fn(uint32_t()); return true;
    case MN_U64: fn(uint64_t()); return true;
    default: return false;
  }
}

// Every fixed-size numeric type the engine computes on, and bool (one byte 0/1, which C++
// bool matches on every platform we build for); false for others (float16, strings).
template <class Fn>
bool with_numeric_type(int32_t dt, Fn&& fn) {
  switch (dt) {
    case MN_F32: fn(float()); return true;
    case MN_F64: fn(double()); return true;
    case MN_I64: fn(int64_t()); return true;
    case MN_BOOL: fn(bool()); return true;
    default: return with_other_int(dt, fn);
  }
}

}  // namespace cpu_dense
}  // namespace minnow
