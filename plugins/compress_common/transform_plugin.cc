#include "transform_plugin.h"

#include "ir_util.h"

#include <minnow/plugin_io.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <exception>
#include <stdexcept>
#include <vector>

namespace minnow {
namespace compress {

namespace {

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::vector<uint8_t> serialized(const ir::ModelIR& m, int level) {
  auto bytes = serialize_model(m, level);
  if (!bytes) throw std::runtime_error(bytes.status().message());
  return std::move(bytes.value());
}

}  // namespace

// A plain file's size does not depend on the recorded value; a compact (deflated)
// description may, and the data section starts on the next 8-byte boundary after it, so a
// value can move the file across a boundary and back (size a records b, b records a: about
// one timestamp in 30). Another deflate level breaks such a cycle; the plain layout (level
// 0 here), whose size is fixed, is the last resort.
std::vector<uint8_t> serialize_recording_size(ir::ModelIR& m) {
  uint64_t& recorded = m.compression_log.back().size_after;
  for (int level = m.compact ? 9 : 0; level >= 0; --level) {
    m.compact = level > 0;
    for (int i = 0; i < 4; ++i) {
      std::vector<uint8_t> bytes = serialized(m, std::max(level, 1));
      if (recorded == bytes.size()) return bytes;
      recorded = bytes.size();
    }
  }
  throw std::runtime_error("internal: the file's size changes with the size recorded in it");
}

mn_status run_transform(const char* name, const char* version, TransformFn fn,
                        const mn_host_api* host, const uint8_t* model, size_t size,
                        const mn_options* options, mn_blob* out_model, mn_blob* out_report,
                        mn_error* err) {
  TransformContext ctx;
  ctx.name = name;
  ctx.version = version;
  ctx.host = host;
  try {
    auto parsed = parse_model(model, size, nullptr, std::string("input of transform '") + name + "'");
    if (!parsed) {
      plugin::set_error(err, parsed.status().message());
      return MN_ERR_INVALID_ARGUMENT;
    }
    ctx.model = std::move(parsed.value());
    ctx.options = Options(options);
    ctx.seed = static_cast<uint64_t>(ctx.options.get_int("seed", 1));
    fn(ctx);
    ctx.options.check_all_used(name);
    compact(ctx.model);
    ir::CompressionRecord rec;
    rec.plugin = name;
    rec.plugin_version = version;
    rec.parameters = ctx.parameters;
    rec.size_before = size;
    rec.size_after = size;  // placeholder of the same encoded width; fixed below
    rec.metric = ctx.metric;
    rec.metric_before = ctx.metric_before;
    rec.metric_after = ctx.metric_after;
    rec.timestamp = utc_now();
    ctx.model.compression_log.push_back(rec);
    plugin::export_blob(host, serialize_recording_size(ctx.model), out_model);
    plugin::export_blob(host, ctx.report.str(), out_report);
    return MN_OK;
  } catch (const std::exception& e) {
    plugin::set_error(err, e.what());
    // The report says how far the transform got; losing it to a second failure is fine.
    try {
      if (out_report) plugin::export_blob(host, ctx.report.str(), out_report);
    } catch (const std::exception&) {
    }
    return MN_ERR_INVALID_ARGUMENT;
  }
}

mn_status register_transform(const mn_registrar* reg, const mn_transform* table, mn_error* err) {
  if (!reg || !reg->add_transform) {
    plugin::set_error(err, "host registrar has no add_transform");
    return MN_ERR_INTERNAL;
  }
  return reg->add_transform(reg->host, table);
}

}  // namespace compress
}  // namespace minnow
