// minnow bench: latency (median / min / max of many runs), per-node profile, memory,
// and the one-off costs a user pays before the first run (load, prepare, session).
#include "cmd_bench_stats.h"
#include "common.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>

namespace minnow {
namespace cli {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

struct BenchOptions {
  std::string path, backend, out_dir;
  InputSpec spec;
  ImportSpec import_spec;
  int threads = 1, warmup = 5, runs = 0;
  double seconds = 0;
  bool profile = false, json = false;
};

// One-off costs and memory of the benchmarked model.
struct Setup {
  double load_ms = 0, prepare_ms = 0, session_ms = 0, first_run_ms = 0;
  size_t prepare_rss = 0;  // resident memory added by prepare: packed weights, kernel state
  MemoryStats mem;
};

struct NodeRow {
  NodeProfile p;
  TimeStats t;
};

void print_profile_table(const std::vector<NodeRow>& rows, double total) {
  std::printf("\n%-28s %-16s %-18s %-10s %-26s %9s %6s %8s\n", "node", "op", "output", "backend", "kernel", "ms", "share",
              "GFLOP/s");
  for (const auto& r : rows) {
    double gf = r.p.flops > 0 && r.t.median > 0 ? r.p.flops / (r.t.median * 1e6) : 0;
    std::printf("%-28s %-16s %-18s %-10s %-26s %9.4f %5.1f%% %8.2f\n", r.p.name.c_str(), r.p.op.c_str(),
                shape_to_string(r.p.output_shape).c_str(), r.p.backend.c_str(), r.p.kernel.c_str(), r.t.median,
                total > 0 ? 100 * r.t.median / total : 0, gf);
  }
  // Per op type: where the time goes at a glance.
  struct Agg { int count = 0; double ms = 0, flops = 0; };
  std::map<std::string, Agg> by_op;
  for (const auto& r : rows) {
    auto& a = by_op[r.p.op];
    a.count++, a.ms += r.t.median, a.flops += r.p.flops;
  }
  std::vector<std::pair<std::string, Agg>> ops(by_op.begin(), by_op.end());
  std::sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) { return a.second.ms > b.second.ms; });
  std::printf("\n%-16s %6s %9s %6s %8s\n", "op", "nodes", "ms", "share", "GFLOP/s");
  for (const auto& [op, a] : ops)
    std::printf("%-16s %6d %9.4f %5.1f%% %8.2f\n", op.c_str(), a.count, a.ms, total > 0 ? 100 * a.ms / total : 0,
                a.flops > 0 && a.ms > 0 ? a.flops / (a.ms * 1e6) : 0);
  std::printf("%-16s %6zu %9.4f (sum of node medians)\n", "total", rows.size(), total);
}

void print_json(const BenchOptions& o, const Setup& s, const TimeStats& t, size_t runs, size_t peak_bytes,
                const std::vector<NodeRow>& rows) {
  const MemoryStats& m = s.mem;
  std::printf("{\"model\": \"%s\", \"median_ms\": %.4f, \"min_ms\": %.4f, \"max_ms\": %.4f, \"mean_ms\": %.4f, "
              "\"p90_ms\": %.4f, \"runs\": %zu, \"warmup\": %d, \"threads\": %d, "
              "\"load_ms\": %.3f, \"prepare_ms\": %.3f, \"session_ms\": %.3f, \"first_run_ms\": %.3f, "
              "\"arena_bytes\": %zu, \"naive_bytes\": %zu, \"scratch_bytes\": %zu, \"io_bytes\": %zu, "
              "\"weight_bytes\": %zu, \"prepare_rss_bytes\": %zu, \"peak_bytes\": %zu, \"peak_rss_bytes\": %zu",
              json_escape(o.path).c_str(), t.median, t.min, t.max, t.mean, t.p90, runs, o.warmup, o.threads, s.load_ms,
              s.prepare_ms, s.session_ms, s.first_run_ms, m.arena_bytes, m.naive_bytes, m.scratch_bytes, m.io_bytes,
              m.weight_bytes, s.prepare_rss, peak_bytes, peak_rss_bytes());
  if (o.profile) {
    std::printf(", \"nodes\": [");
    for (size_t k = 0; k < rows.size(); ++k) {
      const auto& r = rows[k];
      std::printf("%s{\"name\": \"%s\", \"op\": \"%s\", \"output\": \"%s\", \"backend\": \"%s\", \"kernel\": \"%s\", "
                  "\"median_ms\": %.5f, \"flops\": %.0f}",
                  k ? ", " : "", json_escape(r.p.name).c_str(), json_escape(r.p.op).c_str(),
                  shape_to_string(r.p.output_shape).c_str(), json_escape(r.p.backend).c_str(),
                  json_escape(r.p.kernel).c_str(), r.t.median, r.p.flops);
    }
    std::printf("]");
  }
  std::printf("}\n");
}

void bench(const GlobalOptions& g, BenchOptions& o) {
  if (!o.out_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.out_dir, ec);
    if (ec) throw CliError("cannot create output folder '" + o.out_dir + "': " + ec.message());
  }
  o.spec.random = true;  // inputs not given are random: latency does not depend on values
  auto engine = make_engine(g);
  Setup s;
  auto t0 = Clock::now();
  auto model = check(engine->load_model(o.path, import_options(o.import_spec)));
  s.load_ms = ms_since(t0);
  auto inputs = load_inputs(*model, o.spec);
  BackendPolicy policy;
  policy.force = o.backend;
  size_t rss0 = current_rss_bytes();
  t0 = Clock::now();
  auto pm = check(engine->prepare(model, policy));
  s.prepare_ms = ms_since(t0);
  size_t rss1 = current_rss_bytes();
  s.prepare_rss = rss1 > rss0 ? rss1 - rss0 : 0;
  SessionOptions so;
  so.threads = o.threads;
  so.profile = o.profile;
  t0 = Clock::now();
  auto session = check(Session::create(pm, so));
  for (size_t i = 0; i < inputs.size(); ++i) check(session->set_input(i, inputs[i]));
  s.session_ms = ms_since(t0);

  // The first run pays page faults on the arena and cold caches: reported, never timed.
  t0 = Clock::now();
  check(session->run());
  s.first_run_ms = ms_since(t0);
  for (int i = 1; i < o.warmup; ++i) check(session->run());

  std::vector<double> times;
  std::vector<std::vector<double>> node_times;
  const int target = o.runs > 0 ? o.runs : (o.seconds > 0 ? 1 << 30 : 50);
  times.reserve(o.seconds > 0 ? 1024 : size_t(target));
  auto start = Clock::now();
  for (int i = 0; i < target; ++i) {
    auto r0 = Clock::now();
    check(session->run());
    auto r1 = Clock::now();
    times.push_back(std::chrono::duration<double, std::milli>(r1 - r0).count());
    if (o.profile) {
      const auto& p = session->profile();
      node_times.resize(p.size());
      for (size_t k = 0; k < p.size(); ++k) node_times[k].push_back(p[k].ms);
    }
    if (o.seconds > 0 && std::chrono::duration<double>(r1 - start).count() >= o.seconds) break;
  }
  TimeStats t = time_stats(times);
  s.mem = session->memory();
  const MemoryStats& m = s.mem;
  // What the model needs resident while running: planned arena, scratch, inputs/outputs,
  // decoded weights, and what prepare added (packed weights and kernel state).
  size_t peak = m.arena_bytes + m.scratch_bytes + m.io_bytes + m.weight_bytes + s.prepare_rss;

  std::vector<NodeRow> rows;
  double total = 0;
  if (o.profile) {
    const auto& p = session->profile();
    for (size_t k = 0; k < p.size(); ++k) {
      rows.push_back({p[k], time_stats(node_times[k])});
      total += rows.back().t.median;
    }
  }
  if (!o.out_dir.empty())  // outputs of the last timed run, for checking against another engine
    for (size_t i = 0; i < session->num_outputs(); ++i)
      save_output_npy(o.out_dir, session->output_name(i), check(session->output(i)));

  if (o.json) return print_json(o, s, t, times.size(), peak, rows);
  std::printf("%s: median %.3f ms, min %.3f ms, max %.3f ms, mean %.3f ms over %zu runs (%d warm-up), %d thread(s)\n",
              o.path.c_str(), t.median, t.min, t.max, t.mean, times.size(), o.warmup, o.threads);
  std::printf("setup: load %.1f ms, prepare %.1f ms, session %.1f ms, first run %.1f ms\n", s.load_ms, s.prepare_ms,
              s.session_ms, s.first_run_ms);
  std::printf("memory: arena %s (tensors unshared: %s), scratch %s, weights %s, prepared (packed) +%s, "
              "inputs+outputs %s; peak %s (process peak RSS %s)\n",
              human_bytes(double(m.arena_bytes)).c_str(), human_bytes(double(m.naive_bytes)).c_str(),
              human_bytes(double(m.scratch_bytes)).c_str(), human_bytes(double(m.weight_bytes)).c_str(),
              human_bytes(double(s.prepare_rss)).c_str(), human_bytes(double(m.io_bytes)).c_str(),
              human_bytes(double(peak)).c_str(), human_bytes(double(peak_rss_bytes())).c_str());
  if (o.profile) print_profile_table(rows, total);
}

}  // namespace

void register_bench_command(CLI::App& app, GlobalOptions& g) {
  auto* cmd = app.add_subcommand("bench", "Measure a model's latency");
  static BenchOptions o;
  cmd->add_option("model", o.path, "Model file (.minnow, or any format a frontend reads)")->required();
  add_input_options(cmd, &o.spec);
  add_import_options(cmd, &o.import_spec);
  cmd->add_option("-t,--threads", o.threads, "Threads")->capture_default_str()->check(CLI::Range(1, 1024));
  cmd->add_option("--warmup", o.warmup, "Untimed runs first (at least one is always done)")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  auto* r = cmd->add_option("--runs", o.runs, "Timed runs (default 50)")->check(CLI::PositiveNumber);
  cmd->add_option("--seconds", o.seconds, "Time budget instead of a run count")->excludes(r)->check(CLI::PositiveNumber);
  cmd->add_flag("--profile", o.profile, "Per-node time table (op, shape, backend, kernel, time, share, GFLOP/s)");
  cmd->add_flag("--json", o.json, "One JSON object: median_ms, min_ms, max_ms, runs, threads, setup and memory");
  cmd->add_option("--backend", o.backend, "Use only this backend");
  cmd->add_option("-o,--output-dir", o.out_dir, "Save the last run's outputs as <name>.npy in this folder");
  cmd->callback([&g] { bench(g, o); });
}

}  // namespace cli
}  // namespace minnow
