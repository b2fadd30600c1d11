#include "transform_plugin.h"

#include "ir_util.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <exception>

namespace minnow {
namespace compress {

namespace {

void set_error(mn_error* err, const std::string& msg) {
  if (!err) return;
  std::snprintf(err->message, sizeof(err->message), "%s", msg.c_str());
}

void free_new(uint8_t* data, size_t) { delete[] data; }

mn_blob make_blob(const mn_host_api* host, const void* data, size_t size) {
  mn_blob b{};
  if (host && host->blob_alloc && host->blob_free) {
    b.data = host->blob_alloc(size ? size : 1);
    b.free_fn = host->blob_free;
  } else {
    b.data = new uint8_t[size ? size : 1];
    b.free_fn = free_new;
  }
  b.size = size;
  if (size) std::memcpy(b.data, data, size);
  return b;
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

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
      set_error(err, parsed.status().message());
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
    auto bytes = serialize_model(ctx.model);
    if (!bytes) throw std::runtime_error(bytes.status().message());
    ctx.model.compression_log.back().size_after = bytes.value().size();
    bytes = serialize_model(ctx.model);
    if (!bytes) throw std::runtime_error(bytes.status().message());
    *out_model = make_blob(host, bytes.value().data(), bytes.value().size());
    std::string rep = ctx.report.str();
    *out_report = make_blob(host, rep.data(), rep.size());
    return MN_OK;
  } catch (const std::exception& e) {
    set_error(err, e.what());
    std::string rep = ctx.report.str();
    if (out_report) *out_report = make_blob(host, rep.data(), rep.size());
    return MN_ERR_INVALID_ARGUMENT;
  }
}

mn_status register_transform(const mn_registrar* reg, const mn_transform* table, mn_error* err) {
  if (!reg || !reg->add_transform) {
    set_error(err, "host registrar has no add_transform");
    return MN_ERR_INTERNAL;
  }
  return reg->add_transform(reg->host, table);
}

}  // namespace compress
}  // namespace minnow
