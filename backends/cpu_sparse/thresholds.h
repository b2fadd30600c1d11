// When does sparse pay? The measured cost model of the kernels against cpu_dense, and the
// choice of block shape for one weight matrix.
//
// For each kernel kind and block shape, bench/sparse.sh measures t_sparse / t_dense (same
// run, median of many) at several sparsities and fits a line in the fraction of blocks
// kept ("density"):  ratio(d) = r0 + slope * d, which ranks the shapes and prices the bid.
// Break-even, the sparsity the backend bids above, is measured per layer: the highest
// sparsity where a layer of that kind still ran slower sparse. The table
// lives in thresholds.cc with the numbers it came from; re-measuring after cpu_dense
// changes is one run of bench/sparse.sh --fit and pasting the printed table.
#pragma once

#include "sparse_matrix.h"

#include <string>

namespace minnow {
namespace cpu_sparse {

enum class Kind {
  kFc,          // Gemm / MatMul / the matmul service: rows form (sparse dot products)
  kConv1x1,     // 1x1 convolution, stride 1, no padding: columns form straight on X
  kConvIm2col,  // any other convolution: im2col tiles, then the columns form
};
const char* kind_name(Kind k);

// Whether this CPU runs the AVX-512 kernels (the table the bids use follows it).
bool cpu_has_avx512();

struct Calibration {
  Kind kind;
  BlockShape shape;
  double r0, slope;  // t_sparse / t_dense = r0 + slope * density, over all layers measured
  // The sparsity above which every layer measured of this kind ran faster sparse (each
  // layer's ratio interpolated where it crosses 1, the highest of them): the line above
  // is a fit over layers and sparsities, and near break-even it is too hopeful for the
  // small layers (fc 300-100 CSR: the line says 52 %, the layer breaks even at 60 %).
  double break_even;
};

// cpu_dense's bid, in ns: kDenseNsPerFlop * flops (backends/cpu_dense/backend.cc). Our
// bid is that times the predicted ratio, so the two are in the same units.
constexpr double kDenseNsPerFlop = 0.5;

// Never bid below this block sparsity, even where the fit says sparse would win: a model
// that is (almost) dense belongs to the dense backend, and the fit is only measured
// down to this point.
constexpr double kMinSparsity = 0.2;

const Calibration* calibration(Kind kind, BlockShape shape);
// Sparsity of blocks above which `shape` beats cpu_dense for `kind`, with the floor.
double break_even_sparsity(Kind kind, BlockShape shape);
double predicted_ratio(Kind kind, BlockShape shape, double block_sparsity);

struct LayoutChoice {
  bool ok = false;
  BlockShape shape;
  double sparsity = 0;  // of blocks of that shape
  double ratio = 1;     // predicted t_sparse / t_dense
  std::string reason;   // for the bid (and `minnow inspect --plan`)
};

// Picks the block shape with the lowest predicted ratio among those above break-even.
// W is [rows, cols] row-major, or with `transposed` stored as [cols, rows].
// MINNOW_CPU_SPARSE_BLOCK=RxC (benches) restricts the choice to that shape and ignores
// the break-even, so a bench can time the kernel at any sparsity.
LayoutChoice choose_layout(Kind kind, const float* w, int64_t rows, int64_t cols,
                           bool transposed);

}  // namespace cpu_sparse
}  // namespace minnow
