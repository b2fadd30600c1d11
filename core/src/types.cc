#include <minnow/types.h>

#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace minnow {

size_t dtype_size(DataType t) {
  switch (t) {
    case DataType::kFloat32: case DataType::kInt32: case DataType::kUInt32: return 4;
    case DataType::kFloat16: case DataType::kInt16: case DataType::kUInt16:
    case DataType::kBFloat16: return 2;
    case DataType::kInt8: case DataType::kUInt8: case DataType::kBool: return 1;
    case DataType::kInt64: case DataType::kUInt64: case DataType::kFloat64: return 8;
    default: return 0;
  }
}

static const char* const kNames[] = {"undefined", "float32", "float16", "int8",   "uint8",
                                     "int32",     "int64",   "bool",    "int16",  "uint16",
                                     "uint32",    "uint64",  "float64", "bfloat16", "string"};

const char* dtype_name(DataType t) {
  auto i = static_cast<int>(t);
  return (i >= 0 && i < 15) ? kNames[i] : "invalid";
}

bool parse_dtype(const std::string& name, DataType* out) {
  for (int i = 0; i < 15; ++i)
    if (name == kNames[i]) {
      *out = static_cast<DataType>(i);
      return true;
    }
  return false;
}

int64_t shape_elements(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) {
    if (d < 0) return -1;
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) return -2;
    n *= d;
  }
  return n;
}

std::string shape_to_string(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) r += ",";
    r += s[i] < 0 ? std::string("?") : std::to_string(s[i]);
  }
  return r + "]";
}

float half_to_float(uint16_t h) {
  uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, f;
  if (exp == 0) {
    if (mant == 0) {
      f = sign << 31;
    } else {  // subnormal: normalise
      exp = 127 - 15 + 1;
      while (!(mant & 0x400)) {
        mant <<= 1;
        --exp;
      }
      f = (sign << 31) | (exp << 23) | ((mant & 0x3ff) << 13);
    }
  } else if (exp == 31) {
    f = (sign << 31) | 0x7f800000u | (mant << 13);
  } else {
    f = (sign << 31) | ((exp - 15 + 127) << 23) | (mant << 13);
  }
  float out;
  std::memcpy(&out, &f, 4);
  return out;
}

std::shared_ptr<void> aligned_alloc_shared(size_t bytes) {
  size_t n = (bytes + 63) / 64 * 64;
  if (n == 0) n = 64;
  // 2 MiB or more (a session's arena and scratch): on a 2 MiB boundary with transparent
  // huge pages asked for its whole 2 MiB pages, so zeroing it is not one page fault per
  // 4 KiB (THP "madvise") and kernels striding over it (Winograd's 16 matrices) miss the
  // TLB less. (From 4 MiB, resnet50's 1-thread scratch of 2.27 MiB took small pages and
  // its 14x14 Winograd layers ~5 % longer.)
  const size_t huge = size_t(2) << 20;
  const bool big = n >= huge;
  void* p = std::aligned_alloc(big ? huge : 64, big ? (n + huge - 1) / huge * huge : n);
  if (!p) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (big) (void)madvise(p, n / huge * huge, MADV_HUGEPAGE);  // a hint: failure changes nothing
#endif
  std::memset(p, 0, n);
  return std::shared_ptr<void>(p, [](void* q) { std::free(q); });
}

Tensor::Tensor(DataType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  int64_t n = shape_elements(shape_);
  size_t bytes = n > 0 ? static_cast<size_t>(n) * dtype_size(dtype_) : 0;
  storage_ = aligned_alloc_shared(bytes);
  data_ = storage_.get();
}

Tensor Tensor::view(DataType dtype, Shape shape, void* data) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.data_ = data;
  return t;
}

Tensor Tensor::clone() const {
  Tensor t(dtype_, shape_);
  if (bytes() && data_) std::memcpy(t.data_, data_, bytes());
  return t;
}

}  // namespace minnow
