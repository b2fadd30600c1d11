// minnow bench: latency (median / min / max of many runs), per-node profile, memory.
#include "common.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>

namespace minnow {
namespace cli {

void register_bench_command(CLI::App& app, GlobalOptions& g) {
  auto* cmd = app.add_subcommand("bench", "Measure a model's latency");
  static std::string path, backend;
  static InputSpec spec;
  static int threads = 1, warmup = 5, runs = 0;
  static double seconds = 0;
  static bool profile = false, json = false;
  cmd->add_option("model", path, "Model file")->required();
  add_input_options(cmd, &spec);
  cmd->add_option("-t,--threads", threads, "Threads")->capture_default_str()->check(CLI::Range(1, 1024));
  cmd->add_option("--warmup", warmup, "Runs before timing")->capture_default_str()->check(CLI::NonNegativeNumber);
  auto* r = cmd->add_option("--runs", runs, "Timed runs (default 50)")->check(CLI::PositiveNumber);
  cmd->add_option("--seconds", seconds, "Time budget instead of a run count")->excludes(r)->check(CLI::PositiveNumber);
  cmd->add_flag("--profile", profile, "Per-node time table");
  cmd->add_flag("--json", json, "Machine-readable summary");
  cmd->add_option("--backend", backend, "Use only this backend");
  cmd->callback([&g] {
    spec.random = true;  // inputs not given are random: latency does not depend on values
    auto engine = make_engine(g);
    auto model = check(engine->load_model(path));
    auto inputs = load_inputs(*model, spec);
    BackendPolicy policy;
    policy.force = backend;
    auto pm = check(engine->prepare(model, policy));
    SessionOptions so;
    so.threads = threads;
    so.profile = profile;
    auto session = check(Session::create(pm, so));
    for (size_t i = 0; i < inputs.size(); ++i) check(session->set_input(i, inputs[i]));
    for (int i = 0; i < warmup; ++i) check(session->run());
    std::vector<double> times;
    std::vector<std::vector<double>> node_times;
    int target = runs > 0 ? runs : (seconds > 0 ? 1 << 30 : 50);
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < target; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      check(session->run());
      auto t1 = std::chrono::steady_clock::now();
      times.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      if (profile) {
        const auto& p = session->profile();
        node_times.resize(p.size());
        for (size_t k = 0; k < p.size(); ++k) node_times[k].push_back(p[k].ms);
      }
      if (seconds > 0 && std::chrono::duration<double>(t1 - start).count() >= seconds) break;
    }
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      size_t n = v.size();
      return n == 0 ? 0.0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
    };
    double med = median(times), mn = *std::min_element(times.begin(), times.end()),
           mx = *std::max_element(times.begin(), times.end());
    MemoryStats mem = session->memory();
    size_t peak = mem.arena_bytes + mem.scratch_bytes + mem.io_bytes + mem.weight_bytes;
    if (json) {
      std::printf("{\"model\": \"%s\", \"median_ms\": %.4f, \"min_ms\": %.4f, \"max_ms\": %.4f, \"runs\": %zu, \"threads\": %d, "
                  "\"arena_bytes\": %zu, \"weight_bytes\": %zu, \"peak_bytes\": %zu}\n",
                  json_escape(path).c_str(), med, mn, mx, times.size(), threads, mem.arena_bytes, mem.weight_bytes, peak);
    } else {
      std::printf("%s: median %.3f ms, min %.3f ms, max %.3f ms over %zu runs, %d thread(s)\n", path.c_str(), med, mn, mx,
                  times.size(), threads);
      std::printf("memory: arena %s (tensors unshared: %s), scratch %s, weights %s, inputs+outputs %s; peak %s\n",
                  human_bytes(double(mem.arena_bytes)).c_str(), human_bytes(double(mem.naive_bytes)).c_str(),
                  human_bytes(double(mem.scratch_bytes)).c_str(), human_bytes(double(mem.weight_bytes)).c_str(),
                  human_bytes(double(mem.io_bytes)).c_str(), human_bytes(double(peak)).c_str());
    }
    if (profile && !json) {
      const auto& p = session->profile();
      double total = 0;
      std::vector<double> med_node(p.size());
      for (size_t k = 0; k < p.size(); ++k) total += (med_node[k] = median(node_times[k]));
      std::printf("%-24s %-18s %-18s %-10s %-24s %9s %6s %8s\n", "node", "op", "output", "backend", "kernel", "ms", "share", "GFLOP/s");
      for (size_t k = 0; k < p.size(); ++k) {
        double gf = p[k].flops > 0 && med_node[k] > 0 ? p[k].flops / (med_node[k] * 1e6) : 0;
        std::printf("%-24s %-18s %-18s %-10s %-24s %9.4f %5.1f%% %8.2f\n", p[k].name.c_str(), p[k].op.c_str(),
                    shape_to_string(p[k].output_shape).c_str(), p[k].backend.c_str(), p[k].kernel.c_str(), med_node[k],
                    total > 0 ? 100 * med_node[k] / total : 0, gf);
      }
    }
  });
}

}  // namespace cli
}  // namespace minnow
