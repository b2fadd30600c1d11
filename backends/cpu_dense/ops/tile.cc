// Tile: repeats the input repeats[i] times along each dim i (repeats: int64 input), any
// element type. Output coordinate o reads input coordinate o mod d (mapped_copy).
#include "../data_ops.h"
#include "../ops.h"

namespace minnow {
namespace cpu_dense {

namespace {

class TileKernel final : public OpKernel {
 public:
  explicit TileKernel(const Node& node) : OpKernel(node, "tile_ref") {}

  double flops(const mn_tensor*, int, const mn_tensor* out, int) const override {
    return static_cast<double>(numel(out[0])) / 4.0;
  }

  void run(const RunContext& ctx, const mn_tensor* in, int num_inputs, mn_tensor* out,
           int num_outputs) const override {
    if (num_inputs < 2) fail("inputs missing at run time");
    const Dims xd = Dims::of(in[0]);
    const std::vector<int64_t> rep = read_ints(*this, in[1], "repeats");
    if (static_cast<int>(rep.size()) != xd.rank)
      fail("repeats has " + std::to_string(rep.size()) + " entries for input " +
           shape_str(in[0]));
    Dims od = xd;
    std::vector<std::vector<int64_t>> map(xd.rank);
    for (int i = 0; i < xd.rank; ++i) {
      if (rep[i] < 0) fail("negative repeat " + std::to_string(rep[i]));
      od[i] = xd[i] * rep[i];
      map[i].resize(static_cast<size_t>(od[i]));
      for (int64_t o = 0; o < od[i]; ++o) map[i][o] = o % xd[i];
    }
    check_output(out, num_outputs, 0, in[0].dtype, od);
    const uint64_t unused = 0;
    mapped_copy(*this, ctx, in[0].dtype, xd, od, map, in[0].data, out[0].data, &unused);
  }
};

}  // namespace

double tile_bid(const Node& node) {
  require_inputs(node, 2, 2);
  require_movable(node, node.input(0).dtype());
  require_input_dtype(node, 1, {MN_I64});
  return numel_estimate(*node.output(0).t) / 4.0;
}

std::unique_ptr<Kernel> tile_make(const Node& node) {
  tile_bid(node);
  return std::make_unique<TileKernel>(node);
}

}  // namespace cpu_dense
}  // namespace minnow
