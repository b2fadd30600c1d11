// Shared pieces of the minnow command: global options, engine creation, input handling.
#pragma once

#include <minnow/minnow.h>

#include <CLI/CLI.hpp>

#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace minnow {
namespace cli {

// Thrown by commands; main() prints "minnow: error: <message>" and exits 1.
struct CliError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

template <class T>
T check(Result<T> r) {
  if (!r) throw CliError(r.status().message());
  return std::move(r.value());
}
inline void check(const Status& s) {
  if (!s) throw CliError(s.message());
}

struct GlobalOptions {
  std::vector<std::string> plugin_paths;
  std::string log_level;
};

std::shared_ptr<Engine> make_engine(const GlobalOptions& g);

// Model inputs from the command line: NAME=FILE pairs or files in input order; shapes for
// symbolic dims (NAME=1x3x224x224); --random fills what was not given.
struct InputSpec {
  std::vector<std::string> inputs;  // "name=file" or "file"
  std::string resize;               // "WxH" for image inputs
  std::string mean, std;            // "0.485,0.456,0.406" or one value
  float scale = 255.f;
  bool bgr = false;
  std::string layout = "nchw";
  std::vector<std::string> shapes;  // "name=1x3x224x224"
  bool random = false;
  uint64_t seed = 1;
};
void add_input_options(CLI::App* cmd, InputSpec* spec);
std::vector<Tensor> load_inputs(const Model& model, const InputSpec& spec);

// Options for models read through a frontend (not .minnow): --weights FILE (the Caffe
// .caffemodel for a .prototxt) and --import-opt KEY=VALUE, passed to the frontend.
struct ImportSpec {
  std::string weights;
  std::vector<std::string> opts;
};
void add_import_options(CLI::App* cmd, ImportSpec* spec);
std::vector<std::pair<std::string, std::string>> import_options(const ImportSpec& spec);

// Writes `t` as DIR/<name>.npy (characters unsafe in file names become '_'), atomically.
void save_output_npy(const std::string& dir, const std::string& name, const Tensor& t);

std::string human_bytes(double bytes);
std::string json_escape(const std::string& s);

void register_plugins_command(CLI::App& app, GlobalOptions& g);
void register_inspect_command(CLI::App& app, GlobalOptions& g);
void register_run_command(CLI::App& app, GlobalOptions& g);
void register_bench_command(CLI::App& app, GlobalOptions& g);
void register_import_command(CLI::App& app, GlobalOptions& g);
void register_eval_command(CLI::App& app, GlobalOptions& g);
void register_compress_command(CLI::App& app, GlobalOptions& g);

}  // namespace cli
}  // namespace minnow
