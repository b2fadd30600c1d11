// In-process A/B of two engine settings on one model: two sessions in one process, one
// prepared and run under each set of environment variables, their runs alternated in short
// blocks, so that the host's slow phases (seconds to minutes long on the shared guests,
// 1.1-1.3x) fall on both sides alike. bench/ab.sh alternates whole processes, a second or
// more apart; here the two sides are milliseconds apart, and two identical settings (A/A)
// come out within about +-1.5 % (quartiles of the block ratios).
//
//   inproc_ab MODEL [--threads N] [--blocks B] [--runs R] [--seed S] [--nodes K] "ENV_A" "ENV_B"
//
// --nodes K: both sessions profile every node (SessionOptions::profile); prints the K nodes
// whose median times differ most between the sides (and the sum over all nodes).
//
// ENV_A / ENV_B: space-separated NAME=VALUE assignments, each set while its side is
// prepared, its session created and its runs timed, and unset otherwise (so a setting read
// at prepare time, at session creation or at run time takes effect; a switch must read
// the environment each time, not once into a `static`, or both sides run whichever
// setting was read first). Inputs are random
// floats in [-1, 1] of the model's declared shapes. Prints each side's median of the block
// medians and the median (and quartiles) of the per-block ratios B / A.
//
// Built on demand (cmake --build BUILD --target inproc_ab), not by `make`: an experiment
// tool, like sparse_bench. bench/inproc_ab.sh builds and runs it.
#include <minnow/minnow.h>

#include "cmd_bench_stats.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {

using namespace minnow;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "inproc_ab: %s\n", what.c_str());
  std::exit(1);
}

template <class T>
T must(Result<T> r, const char* what) {
  if (!r.is_ok()) die(std::string(what) + ": " + r.status().message());
  return std::move(r).value();
}

void must(const Status& st, const char* what) {
  if (!st.is_ok()) die(std::string(what) + ": " + st.message());
}

std::vector<std::pair<std::string, std::string>> parse_env(const std::string& spec) {
  std::vector<std::pair<std::string, std::string>> out;
  std::istringstream is(spec);
  std::string kv;
  while (is >> kv) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) die("'" + kv + "' is not NAME=VALUE");
    out.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
  }
  return out;
}

// Sets a side's variables for the lifetime of the guard.
class EnvGuard {
 public:
  explicit EnvGuard(const std::vector<std::pair<std::string, std::string>>& env) : env_(env) {
    for (const auto& [k, v] : env_) setenv(k.c_str(), v.c_str(), 1);
  }
  ~EnvGuard() {
    for (const auto& kv : env_) unsetenv(kv.first.c_str());
  }

 private:
  const std::vector<std::pair<std::string, std::string>>& env_;
};

// The median as `minnow bench` takes it.
double median(std::vector<double> v) { return cli::time_stats(std::move(v)).median; }
double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[size_t(q * double(v.size() - 1))];
}

int to_int(const char* s, const char* what) {
  char* end = nullptr;
  const long v = std::strtol(s, &end, 10);
  if (!end || *end || v < 1 || v > 1 << 20) die(std::string(what) + " expects a positive integer, got '" + s + "'");
  return int(v);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> pos;
  int threads = 1, blocks = 30, runs = 10, nodes = 0;
  unsigned seed = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) die(a + " needs a value");
      return argv[++i];
    };
    if (a == "--threads" || a == "-t") threads = to_int(value(), "--threads");
    else if (a == "--blocks") blocks = to_int(value(), "--blocks");
    else if (a == "--runs") runs = to_int(value(), "--runs");
    else if (a == "--seed") seed = unsigned(to_int(value(), "--seed"));
    else if (a == "--nodes") nodes = to_int(value(), "--nodes");
    else if (a == "-h" || a == "--help") {
      std::printf("usage: inproc_ab MODEL [--threads N] [--blocks B] [--runs R] [--seed S] [--nodes K] \"ENV_A\" \"ENV_B\"\n");
      return 0;
    } else pos.push_back(a);
  }
  if (pos.size() != 3)
    die("usage: inproc_ab MODEL [--threads N] [--blocks B] [--runs R] [--seed S] [--nodes K] \"ENV_A\" \"ENV_B\"");
  const std::string path = pos[0];
  const std::vector<std::pair<std::string, std::string>> env[2] = {parse_env(pos[1]), parse_env(pos[2])};

  auto engine = must(Engine::create(), "engine");
  auto model = must(engine->load_model(path), path.c_str());
  const auto& g = model->graph();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<Tensor> inputs;
  for (int32_t id : g.inputs) {
    const auto& info = g.tensors[size_t(id)];
    if (info.dtype != DataType::kFloat32) die(path + ": input '" + info.name + "' is not float32");
    const Shape shape = info.static_shape();
    size_t n = 1;
    for (int64_t d : shape) {
      if (d < 1) die(path + ": input '" + info.name + "' has a symbolic dimension");
      n *= size_t(d);
    }
    std::vector<float> v(n);
    for (float& f : v) f = u(rng);
    inputs.push_back(Tensor::from_vector(shape, v));
  }

  std::unique_ptr<Session> session[2];
  for (int side = 0; side < 2; ++side) {
    EnvGuard guard(env[side]);
    auto pm = must(engine->prepare(model), "prepare");
    SessionOptions so;
    so.threads = threads;
    so.profile = nodes > 0;
    session[side] = must(Session::create(pm, so), "session");
    for (size_t i = 0; i < inputs.size(); ++i) must(session[side]->set_input(i, inputs[i]), "input");
    for (int w = 0; w < 5; ++w) must(session[side]->run(), "run");  // warm-up
  }
  std::vector<double> med[2], ratio;
  std::vector<std::vector<double>> node_ms[2];  // [side][node][sample]
  for (int b = 0; b < blocks; ++b) {
    double m[2];
    for (int side = 0; side < 2; ++side) {
      EnvGuard guard(env[side]);
      std::vector<double> t;
      for (int r = 0; r < runs; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        must(session[side]->run(), "run");
        t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        if (nodes > 0) {
          const auto& prof = session[side]->profile();
          node_ms[side].resize(prof.size());
          for (size_t k = 0; k < prof.size(); ++k) node_ms[side][k].push_back(prof[k].ms);
        }
      }
      m[side] = median(t);
      med[side].push_back(m[side]);
    }
    ratio.push_back(m[1] / m[0]);
  }
  std::printf("%s, %d thread(s): A %.4f ms, B %.4f ms; B/A median of %d block ratios %.4f (quartiles %.4f %.4f)\n",
              path.c_str(), threads, median(med[0]), median(med[1]), blocks, median(ratio), quantile(ratio, 0.25),
              quantile(ratio, 0.75));
  if (nodes > 0 && node_ms[0].size() == node_ms[1].size()) {
    const auto& prof = session[0]->profile();
    struct Row {
      double a, b;
      size_t k;
    };
    std::vector<Row> rows;
    double sa = 0, sb = 0;
    for (size_t k = 0; k < node_ms[0].size(); ++k) {
      if (node_ms[0][k].empty() || node_ms[1][k].empty()) continue;
      rows.push_back({median(node_ms[0][k]), median(node_ms[1][k]), k});
      sa += rows.back().a;
      sb += rows.back().b;
    }
    std::sort(rows.begin(), rows.end(), [](const Row& x, const Row& y) {
      return std::abs(x.b - x.a) > std::abs(y.b - y.a);
    });
    std::printf("sum of node medians: A %.4f ms, B %.4f ms (B/A %.4f); the %d nodes that differ most:\n", sa, sb,
                sb / sa, nodes);
    for (size_t i = 0; i < rows.size() && i < size_t(nodes); ++i)
      std::printf("  %-48s %-10s A %.4f B %.4f ms  B/A %.3f\n", prof[rows[i].k].name.c_str(), prof[rows[i].k].kernel.c_str(),
                  rows[i].a, rows[i].b, rows[i].b / rows[i].a);
  }
  return 0;
}
