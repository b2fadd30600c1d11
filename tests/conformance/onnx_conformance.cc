// ONNX node-test conformance runner.
//
//   onnx_conformance --data DIR --plugins DIR --claimed FILE [--expected-failures FILE]
//                    [--report FILE] [--filter SUBSTR] [--all] [--no-fork] [--verbose]
//
// For every test folder in DIR (model.onnx + test_data_set_*/input_*.pb, output_*.pb) the
// model is imported through the engine's ONNX frontend, run with the loaded backends and
// compared with the reference outputs (|got - want| <= atol + rtol * |want|, rtol 1e-3,
// atol 1e-7). A test is claimed when every op in it is listed in the claimed-ops file;
// claimed tests must pass, others are counted and skipped (--all runs them too, for
// information). --shapes-only forces the test-only backend given by --probe (it computes
// nothing) and compares output shapes and element types: it checks the shape functions of
// ops that have no kernel yet. Each test runs in a child process, so a crash fails one test, not the run.
// Exit status: 0 all claimed tests passed, 1 a claimed test failed, 2 usage, 77 no data.
#include "onnx_tensor.h"

#include <minnow/minnow.h>

#include <onnx/onnx_pb.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace minnow;

namespace {

constexpr double kRtol = 1e-3, kAtol = 1e-7;

struct Args {
  std::string data, plugins, claimed, expected, report, filter, probe;
  bool all = false, fork = true, verbose = false, shapes_only = false;
};

std::set<std::string> read_list(const std::string& path, std::map<std::string, std::string>* reasons = nullptr) {
  std::set<std::string> out;
  if (path.empty()) return out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    auto hash = line.find('#');
    std::string body = line.substr(0, hash);
    std::istringstream ss(body);
    std::string name;
    if (!(ss >> name)) continue;
    out.insert(name);
    if (reasons) {
      std::string rest;
      std::getline(ss, rest);
      (*reasons)[name] = rest;
    }
  }
  return out;
}

bool read_proto_file(const std::string& path, google::protobuf::MessageLite* msg) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return msg->ParseFromString(bytes);
}

std::vector<std::string> sorted_files(const fs::path& dir, const std::string& prefix) {
  std::vector<std::pair<int, std::string>> v;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string n = e.path().filename().string();
    if (n.rfind(prefix, 0) == 0 && n.size() > prefix.size() + 3 && n.substr(n.size() - 3) == ".pb")
      v.emplace_back(std::atoi(n.c_str() + prefix.size()), e.path().string());
  }
  std::sort(v.begin(), v.end());
  std::vector<std::string> out;
  for (auto& p : v) out.push_back(p.second);
  return out;
}

std::string fmt(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

double element(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DataType::kFloat32: return t.data<float>()[i];
    case DataType::kInt64: return static_cast<double>(t.data<int64_t>()[i]);
    case DataType::kInt32: return t.data<int32_t>()[i];
    case DataType::kInt16: return t.data<int16_t>()[i];
    case DataType::kInt8: return t.data<int8_t>()[i];
    case DataType::kUInt8: case DataType::kBool: return t.data<uint8_t>()[i];
    case DataType::kUInt16: return t.data<uint16_t>()[i];
    case DataType::kUInt32: return t.data<uint32_t>()[i];
    case DataType::kUInt64: return static_cast<double>(t.data<uint64_t>()[i]);
    default: return NAN;
  }
}

// Empty if equal within tolerance; otherwise the first difference.
std::string compare(const std::string& name, const Tensor& got, const Tensor& want, bool shapes_only) {
  if (got.dtype() != want.dtype())
    return "output '" + name + "': element type " + dtype_name(got.dtype()) + ", expected " + dtype_name(want.dtype());
  if (got.shape() != want.shape())
    return "output '" + name + "': shape " + shape_to_string(got.shape()) + ", expected " + shape_to_string(want.shape());
  if (shapes_only) return "";
  const bool fl = want.dtype() == DataType::kFloat32;
  int64_t bad = 0, first = -1;
  double worst = 0;
  for (int64_t i = 0; i < want.elements(); ++i) {
    double g = element(got, i), w = element(want, i);
    bool ok;
    if (fl) {
      if (std::isnan(w)) ok = std::isnan(g);
      else if (std::isinf(w)) ok = g == w;
      else ok = std::fabs(g - w) <= kAtol + kRtol * std::fabs(w);
    } else {
      ok = g == w;
    }
    if (!ok) {
      if (first < 0) first = i;
      ++bad;
      if (!std::isnan(g - w)) worst = std::max(worst, std::fabs(g - w));
    }
  }
  if (!bad) return "";
  return "output '" + name + "': " + std::to_string(bad) + " of " + std::to_string(want.elements()) +
         " elements differ; first at " + std::to_string(first) + ": got " + fmt(element(got, first)) + ", expected " +
         fmt(element(want, first)) + " (max abs diff " + fmt(worst) + ")";
}

// Runs one test; empty string on success, else the reason.
std::string run_test(const Engine& engine, const fs::path& dir, const onnx::ModelProto& proto, bool shapes_only) {
  auto model = engine.load_model((dir / "model.onnx").string());
  if (!model) return "import: " + model.status().message();
  BackendPolicy policy;
  if (shapes_only) policy.force = "shape_probe";
  auto prepared = engine.prepare(model.value(), policy);
  if (!prepared) return "prepare: " + prepared.status().message();
  auto session = Session::create(prepared.value());
  if (!session) return "session: " + session.status().message();
  Session& s = *session.value();
  std::set<std::string> inits;
  for (const auto& t : proto.graph().initializer()) inits.insert(t.name());
  std::vector<std::string> onnx_inputs;
  for (const auto& vi : proto.graph().input())
    if (!inits.count(vi.name())) onnx_inputs.push_back(vi.name());
  std::vector<std::string> onnx_outputs;
  for (const auto& vi : proto.graph().output()) onnx_outputs.push_back(vi.name());

  int sets = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (!e.is_directory() || e.path().filename().string().rfind("test_data_set_", 0) != 0) continue;
    ++sets;
    const std::string set_name = e.path().filename().string();
    auto inputs = sorted_files(e.path(), "input_");
    auto outputs = sorted_files(e.path(), "output_");
    for (size_t i = 0; i < inputs.size(); ++i) {
      onnx::TensorProto tp;
      if (!read_proto_file(inputs[i], &tp)) return set_name + ": cannot parse " + inputs[i] + " as a TensorProto";
      auto t = onnx_frontend::tensor_from_proto(tp);
      if (!t) return set_name + ": input " + std::to_string(i) + ": " + t.status().message();
      std::string name = i < onnx_inputs.size() ? onnx_inputs[i] : tp.name();
      Status st = s.set_input(name, t.value());
      if (!st) return set_name + ": set_input: " + st.message();
    }
    Status st = s.run();
    if (!st) return set_name + ": run: " + st.message();
    for (size_t o = 0; o < outputs.size(); ++o) {
      onnx::TensorProto tp;
      if (!read_proto_file(outputs[o], &tp)) return set_name + ": cannot parse " + outputs[o] + " as a TensorProto";
      auto want = onnx_frontend::tensor_from_proto(tp);
      if (!want) return set_name + ": expected output " + std::to_string(o) + ": " + want.status().message();
      std::string name = o < onnx_outputs.size() ? onnx_outputs[o] : tp.name();
      auto got = s.output(name);
      if (!got) return set_name + ": " + got.status().message();
      std::string diff = compare(name, got.value(), want.value(), shapes_only);
      if (!diff.empty()) return set_name + ": " + diff;
    }
  }
  if (!sets) return "no test_data_set_* folder";
  return "";
}

// Runs the test in a child process (crash isolation, 120 s limit).
std::string run_isolated(const Engine& engine, const fs::path& dir, const onnx::ModelProto& proto, bool use_fork,
                         bool shapes_only) {
  if (!use_fork) return run_test(engine, dir, proto, shapes_only);
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) return "fork failed";
  if (pid == 0) {
    close(fds[0]);
    alarm(120);
    std::string r;
    try {
      r = run_test(engine, dir, proto, shapes_only);
    } catch (const std::exception& ex) {
      r = std::string("exception: ") + ex.what();
    }
    if (r.empty()) r = "OK";
    size_t off = 0;
    while (off < r.size()) {
      ssize_t w = write(fds[1], r.data() + off, r.size() - off);
      if (w <= 0) break;
      off += static_cast<size_t>(w);
    }
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  std::string msg;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) msg.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status))
    return std::string("crashed: ") + (WTERMSIG(status) == SIGALRM ? "timed out after 120 s" : strsignal(WTERMSIG(status)));
  if (msg == "OK") return "";
  return msg.empty() ? "child exited without a result" : msg;
}

int usage() {
  std::cerr << "usage: onnx_conformance --data DIR --plugins DIR --claimed FILE [--expected-failures FILE]"
               " [--report FILE] [--filter SUBSTR] [--all] [--no-fork] [--verbose]"
               " [--shapes-only --probe PLUGIN]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (k == "--data") a.data = next();
    else if (k == "--plugins") a.plugins = next();
    else if (k == "--claimed") a.claimed = next();
    else if (k == "--expected-failures") a.expected += (a.expected.empty() ? "" : ",") + next();
    else if (k == "--report") a.report = next();
    else if (k == "--filter") a.filter = next();
    else if (k == "--all") a.all = true;
    else if (k == "--shapes-only") a.shapes_only = true;
    else if (k == "--probe") a.probe = next();
    else if (k == "--no-fork") a.fork = false;
    else if (k == "--verbose" || k == "-v") a.verbose = true;
    else return usage();
  }
  if (a.data.empty() || a.claimed.empty() || (a.shapes_only && a.probe.empty())) return usage();
  std::error_code ec;
  if (!fs::is_directory(a.data, ec)) {
    std::cout << "onnx_conformance: test data folder '" << a.data
              << "' not found: install Debian's libonnx-testdata (the setup script does). Skipped.\n";
    return 77;
  }
  const std::set<std::string> claimed = read_list(a.claimed);
  std::map<std::string, std::string> expected_reason;
  std::set<std::string> expected;
  {
    std::stringstream files(a.expected);
    std::string f;
    while (std::getline(files, f, ','))
      for (const auto& e : read_list(f, &expected_reason)) expected.insert(e);
  }

  EngineOptions eo;
  if (!a.plugins.empty()) eo.plugin_paths.push_back(a.plugins);
  if (!a.probe.empty()) eo.plugin_paths.push_back(a.probe);
  eo.use_environment = a.plugins.empty();
  eo.use_default_folder = a.plugins.empty();
  auto engine = Engine::create(eo);
  if (!engine) {
    std::cerr << "onnx_conformance: " << engine.status().message() << "\n";
    return 1;
  }

  std::vector<fs::path> tests;
  for (const auto& e : fs::directory_iterator(a.data))
    if (e.is_directory() && fs::exists(e.path() / "model.onnx")) tests.push_back(e.path());
  std::sort(tests.begin(), tests.end());

  int total = 0, n_claimed = 0, passed = 0, n_expected = 0, extra_passed = 0, extra_run = 0;
  std::vector<std::pair<std::string, std::string>> failures;
  std::map<std::string, int> missing_ops;  // op -> tests it blocks (ops not claimed)
  for (const auto& dir : tests) {
    const std::string name = dir.filename().string();
    if (!a.filter.empty() && name.find(a.filter) == std::string::npos) continue;
    ++total;
    onnx::ModelProto proto;
    if (!read_proto_file((dir / "model.onnx").string(), &proto)) {
      failures.emplace_back(name, "model.onnx does not parse");
      continue;
    }
    std::set<std::string> unclaimed;
    for (const auto& n : proto.graph().node()) {
      bool def = n.domain().empty() || n.domain() == "ai.onnx";
      std::string op = def ? n.op_type() : n.domain() + "::" + n.op_type();
      if (!def || !claimed.count(op)) unclaimed.insert(op);
    }
    bool is_claimed = unclaimed.empty() && !expected.count(name);
    if (expected.count(name) && unclaimed.empty()) ++n_expected;
    for (const auto& op : unclaimed) missing_ops[op]++;
    if (!is_claimed && !a.all) continue;
    std::string r = run_isolated(*engine.value(), dir, proto, a.fork, a.shapes_only);
    if (is_claimed) {
      ++n_claimed;
      if (r.empty()) ++passed;
      else failures.emplace_back(name, r);
      if (a.verbose || !r.empty()) std::cout << (r.empty() ? "PASS " : "FAIL ") << name << (r.empty() ? "" : ": " + r) << "\n";
    } else {
      ++extra_run;
      if (r.empty()) ++extra_passed;
      if (a.verbose) std::cout << (r.empty() ? "pass (unclaimed) " : "fail (unclaimed) ") << name << (r.empty() ? "" : ": " + r) << "\n";
    }
  }

  std::ostringstream summary;
  summary << (a.shapes_only ? "ONNX node conformance of shape functions (shapes and types only): " : "ONNX node conformance: ") << passed << " / " << n_claimed << " / " << total
          << " (passed / claimed / total); " << (total - n_claimed - n_expected) << " not claimed, " << n_expected
          << " expected failures";
  if (a.all) summary << "; unclaimed tests run: " << extra_passed << " of " << extra_run << " pass";
  std::cout << summary.str() << "\n";
  if (!failures.empty()) {
    std::cout << failures.size() << " claimed test(s) failed:\n";
    for (const auto& f : failures) std::cout << "  " << f.first << "\n";
  }
  if (!a.report.empty()) {
    std::ofstream rep(a.report);
    rep << summary.str() << "\n\nclaimed ops (" << claimed.size() << "):";
    for (const auto& op : claimed) rep << " " << op;
    rep << "\n\nfailures (" << failures.size() << "):\n";
    for (const auto& f : failures) rep << f.first << ": " << f.second << "\n";
    rep << "\nexpected failures (" << expected.size() << "):\n";
    for (const auto& e : expected) rep << e << ":" << expected_reason[e] << "\n";
    std::vector<std::pair<int, std::string>> ops;
    for (const auto& m : missing_ops) ops.emplace_back(-m.second, m.first);
    std::sort(ops.begin(), ops.end());
    rep << "\nops not claimed (tests needing them):\n";
    for (const auto& o : ops) rep << "  " << o.second << " " << -o.first << "\n";
    std::cout << "report: " << a.report << "\n";
  }
  return failures.empty() ? 0 : 1;
}
