// Fuzz targets: the tensor readers of `minnow run` / `minnow eval`. Compiled once per
// reader (MINNOW_FUZZ_READER: 1 = ONNX TensorProto .pb, 2 = NumPy .npy, 3 = idx images
// and labels), so each gets its own corpus.
#include "tensor_io.h"

#include <minnow/minnow.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace minnow::cli;
#if MINNOW_FUZZ_READER == 1
  std::string name;
  auto t = parse_tensor_proto(data, size, "fuzz.pb", &name);
  if (t) (void)write_tensor_proto(t.value(), name);  // and back: sizes must agree
#elif MINNOW_FUZZ_READER == 2
  auto t = parse_npy(data, size, "fuzz.npy");
  if (t) (void)write_npy(t.value());
#else
  (void)parse_idx_images(data, size, "fuzz-images-idx3-ubyte");
  (void)parse_idx_labels(data, size, "fuzz-labels-idx1-ubyte");
#endif
  return 0;
}
