// A Session runs a prepared model: one per concurrent run. It owns the arena (planned
// from tensor lifetimes), scratch memory and a oneTBB arena of `threads` threads.
// Sessions of one PreparedModel run concurrently without locks.
#pragma once

#include <minnow/export.h>

#include <minnow/engine.h>
#include <minnow/status.h>
#include <minnow/types.h>

#include <memory>
#include <string>
#include <vector>

namespace minnow {

struct SessionOptions {
  int threads = 1;
  bool profile = false;
  // Refuse plans whose arena exceeds this (a model declaring absurd shapes).
  uint64_t max_arena_bytes = uint64_t(4) << 30;
  // Force / forbid backends for this session (default: the model's prepared choice).
  BackendPolicy policy;
};

struct NodeProfile {
  int node = -1;
  std::string name, op, backend, kernel;
  Shape output_shape;
  double ms = 0;     // last run
  double flops = 0;  // per run, if the kernel reports it
};

struct MemoryStats {
  size_t arena_bytes = 0;     // planned arena
  size_t naive_bytes = 0;     // sum of intermediate tensor sizes
  size_t io_bytes = 0;        // graph inputs + outputs
  size_t scratch_bytes = 0;
  size_t weight_bytes = 0;    // decoded constants
};

class MINNOW_API Session {
 public:
  static Result<std::unique_ptr<Session>> create(std::shared_ptr<const PreparedModel> model,
                                                 const SessionOptions& options = {});
  ~Session();

  size_t num_inputs() const;
  size_t num_outputs() const;
  std::string input_name(size_t i) const;
  std::string output_name(size_t i) const;

  // Copies the tensor in; a new shape (batch N) re-infers shapes and re-plans memory.
  Status set_input(const std::string& name, const Tensor& value);
  Status set_input(size_t index, const Tensor& value);
  Status run();
  // Output of the last run (a view valid until the next run or set_input).
  Result<Tensor> output(const std::string& name) const;
  Result<Tensor> output(size_t index) const;

  // Convenience: inputs in graph order, outputs returned as owned copies.
  Result<std::vector<Tensor>> run(const std::vector<Tensor>& inputs);

  const std::vector<NodeProfile>& profile() const;
  MemoryStats memory() const;
  // Inferred shape of any tensor by name (after set_input), for inspection.
  Result<Shape> tensor_shape(const std::string& name) const;

 private:
  Session();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace minnow
