// A schema-free reader for protobuf text format (what a .prototxt is).
//
// We do not compile caffe.proto: the text is parsed into a generic tree of named fields
// and the converter asks for the fields it knows by name. Fields it does not know (fillers,
// lr_mult, engine ...) are simply never read, so prototxts from Caffe forks with extra
// parameters still import. Values keep their line so errors can point at the text.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace minnow {
namespace caffe {

struct TextMsg;

struct TextField {
  std::string name;
  int line = 0;
  // Exactly one of: a scalar token (number, identifier, or the decoded string) ...
  std::string scalar;
  bool quoted = false;  // scalar came from a string literal
  // ... or a nested message.
  std::shared_ptr<TextMsg> msg;
};

struct TextMsg {
  int line = 0;
  std::string origin;  // file name, for messages
  std::vector<TextField> fields;

  // First field with this name, or null.
  const TextField* find(const std::string& name) const;
  std::vector<const TextField*> all(const std::string& name) const;
  bool has(const std::string& name) const { return find(name) != nullptr; }

  // Typed access; a present field of the wrong kind is an error naming file:line.
  int64_t get_int(const std::string& name, int64_t def) const;
  double get_float(const std::string& name, double def) const;
  bool get_bool(const std::string& name, bool def) const;
  // Strings and enum identifiers.
  std::string get_string(const std::string& name, const std::string& def) const;
  std::vector<int64_t> get_ints(const std::string& name) const;
  std::vector<float> get_floats(const std::string& name) const;
  std::vector<std::string> get_strings(const std::string& name) const;
  // First nested message with this name, or null.
  const TextMsg* get_msg(const std::string& name) const;
  std::vector<const TextMsg*> get_msgs(const std::string& name) const;

  // "file:line" of a field (or of this message when f is null).
  std::string where(const TextField* f = nullptr) const;
};

int64_t field_int(const TextMsg& m, const TextField& f);
double field_float(const TextMsg& m, const TextField& f);

// Parses protobuf text format; throws CaffeError("file:line:col: ...") on bad syntax.
std::shared_ptr<TextMsg> parse_text(const std::string& text, const std::string& origin);

}  // namespace caffe
}  // namespace minnow
