// Status and Result: how every fallible core function reports failure. Messages name the
// file, node, op or tensor at fault, so a caller can show them as they are.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace minnow {

enum class StatusCode { kOk = 0, kInvalidArgument, kUnsupported, kNotFound, kIo, kInternal,
                        kOutOfMemory, kResourceExhausted };

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status ok() { return Status(); }
  bool is_ok() const { return code_ == StatusCode::kOk; }
  explicit operator bool() const { return is_ok(); }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // Prefixes the message with context ("loading 'x.minnow': ...").
  Status with_context(const std::string& context) const {
    return is_ok() ? *this : Status(code_, context + ": " + message_);
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status invalid_argument(std::string m) { return Status(StatusCode::kInvalidArgument, std::move(m)); }
inline Status unsupported(std::string m) { return Status(StatusCode::kUnsupported, std::move(m)); }
inline Status not_found(std::string m) { return Status(StatusCode::kNotFound, std::move(m)); }
inline Status io_error(std::string m) { return Status(StatusCode::kIo, std::move(m)); }
inline Status internal_error(std::string m) { return Status(StatusCode::kInternal, std::move(m)); }
inline Status resource_exhausted(std::string m) { return Status(StatusCode::kResourceExhausted, std::move(m)); }

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) { assert(!status_.is_ok()); }  // NOLINT
  bool is_ok() const { return status_.is_ok(); }
  explicit operator bool() const { return is_ok(); }
  const Status& status() const { return status_; }
  T& value() & { assert(is_ok()); return *value_; }
  const T& value() const& { assert(is_ok()); return *value_; }
  T&& value() && { assert(is_ok()); return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

#define MINNOW_RETURN_IF_ERROR(expr)        \
  do {                                      \
    ::minnow::Status _st = (expr);          \
    if (!_st.is_ok()) return _st;           \
  } while (0)

}  // namespace minnow
