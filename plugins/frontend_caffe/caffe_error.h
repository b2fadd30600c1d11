// The one exception type of the Caffe frontend: every parse or conversion error is thrown
// as CaffeError with a message that already names the file, line, layer or blob, and the
// plugin entry turns it into an mn_status + message.
#pragma once

#include <stdexcept>
#include <string>

namespace minnow {
namespace caffe {

class CaffeError : public std::runtime_error {
 public:
  enum Kind { kInvalid, kUnsupported, kIo };
  explicit CaffeError(const std::string& msg, Kind kind = kInvalid)
      : std::runtime_error(msg), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

}  // namespace caffe
}  // namespace minnow
