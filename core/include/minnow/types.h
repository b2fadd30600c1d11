// Element types, shapes and host tensors.
#pragma once

#include <minnow/export.h>

#include <minnow/plugin.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace minnow {

// Same numbering as schema DataType and mn_dtype.
enum class DataType : int32_t {
  kUndefined = 0, kFloat32 = 1, kFloat16 = 2, kInt8 = 3, kUInt8 = 4, kInt32 = 5, kInt64 = 6,
  kBool = 7, kInt16 = 8, kUInt16 = 9, kUInt32 = 10, kUInt64 = 11, kFloat64 = 12,
  kBFloat16 = 13, kString = 14
};

MINNOW_API size_t dtype_size(DataType t);         // 0 for undefined/string
MINNOW_API const char* dtype_name(DataType t);    // "float32", ...
MINNOW_API bool parse_dtype(const std::string& name, DataType* out);

using Shape = std::vector<int64_t>;

// Product of dims; -1 if any dim is unknown (< 0); -2 on overflow.
MINNOW_API int64_t shape_elements(const Shape& s);
MINNOW_API std::string shape_to_string(const Shape& s);

// A dense host tensor that owns its (64-byte aligned) memory, or views someone else's.
class MINNOW_API Tensor {
 public:
  Tensor() = default;
  Tensor(DataType dtype, Shape shape);  // allocates zeroed storage
  static Tensor view(DataType dtype, Shape shape, void* data);
  template <class T>
  static Tensor from_vector(Shape shape, const std::vector<T>& values);

  DataType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t elements() const { return shape_elements(shape_); }
  size_t bytes() const { return static_cast<size_t>(elements()) * dtype_size(dtype_); }
  void* raw() { return data_; }
  const void* raw() const { return data_; }
  template <class T> T* data() { return static_cast<T*>(data_); }
  template <class T> const T* data() const { return static_cast<const T*>(data_); }
  bool empty() const { return data_ == nullptr && elements() != 0; }
  Tensor clone() const;

 private:
  DataType dtype_ = DataType::kUndefined;
  Shape shape_;
  std::shared_ptr<void> storage_;
  void* data_ = nullptr;
};

template <class T> struct DataTypeOf;
template <> struct DataTypeOf<float> { static constexpr DataType value = DataType::kFloat32; };
template <> struct DataTypeOf<int64_t> { static constexpr DataType value = DataType::kInt64; };
template <> struct DataTypeOf<int32_t> { static constexpr DataType value = DataType::kInt32; };
template <> struct DataTypeOf<uint8_t> { static constexpr DataType value = DataType::kUInt8; };
template <> struct DataTypeOf<int8_t> { static constexpr DataType value = DataType::kInt8; };
template <> struct DataTypeOf<bool> { static constexpr DataType value = DataType::kBool; };
template <> struct DataTypeOf<double> { static constexpr DataType value = DataType::kFloat64; };

template <class T>
Tensor Tensor::from_vector(Shape shape, const std::vector<T>& values) {
  Tensor t(DataTypeOf<T>::value, std::move(shape));
  T* p = t.data<T>();
  for (size_t i = 0; i < values.size() && static_cast<int64_t>(i) < t.elements(); ++i) p[i] = values[i];
  return t;
}

// IEEE half -> float (float16 weights and inputs are converted on load).
MINNOW_API float half_to_float(uint16_t h);

// 64-byte aligned allocation used for arenas, tensors and decoded weights.
MINNOW_API std::shared_ptr<void> aligned_alloc_shared(size_t bytes);

}  // namespace minnow
