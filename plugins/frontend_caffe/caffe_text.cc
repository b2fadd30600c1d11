// Protobuf text-format tokenizer and recursive-descent parser (see caffe_text.h).
#include "caffe_text.h"

#include "caffe_error.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace minnow {
namespace caffe {

namespace {

// Deeper nesting than any real net needs; the limit keeps a hostile file from
// exhausting the stack.
constexpr int kMaxDepth = 64;

class Parser {
 public:
  Parser(const std::string& text, const std::string& origin) : s_(text), origin_(origin) {}

  std::shared_ptr<TextMsg> parse() {
    auto root = std::make_shared<TextMsg>();
    root->line = 1;
    root->origin = origin_;
    parse_fields(*root, 0, '\0');
    return root;
  }

 private:
  const std::string& s_;
  const std::string& origin_;
  size_t pos_ = 0;
  int line_ = 1;
  size_t line_start_ = 0;

  [[noreturn]] void fail(const std::string& what) const {
    throw CaffeError(origin_ + ":" + std::to_string(line_) + ":" +
                     std::to_string(pos_ - line_start_ + 1) + ": " + what);
  }

  void skip_space() {
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      if (c == '\n') {
        ++pos_;
        ++line_;
        line_start_ = pos_;
      } else if (c == '#') {
        while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
      } else if (std::isspace(static_cast<unsigned char>(c))) {
        ++pos_;
      } else {
        break;
      }
    }
  }

  bool at_end() {
    skip_space();
    return pos_ >= s_.size();
  }
  char peek() {
    skip_space();
    return pos_ < s_.size() ? s_[pos_] : '\0';
  }

  static bool ident_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
  }

  std::string identifier() {
    skip_space();
    size_t b = pos_;
    while (pos_ < s_.size() && ident_char(s_[pos_])) ++pos_;
    if (b == pos_) fail(pos_ < s_.size() ? std::string("expected a field name, found '") + s_[pos_] + "'"
                                         : "expected a field name, found the end of the file");
    return s_.substr(b, pos_ - b);
  }

  // One string literal (single or double quoted) with C escapes.
  std::string string_literal() {
    char q = s_[pos_++];
    std::string out;
    while (true) {
      if (pos_ >= s_.size() || s_[pos_] == '\n') fail("unterminated string");
      char c = s_[pos_++];
      if (c == q) break;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) fail("unterminated string");
      char e = s_[pos_++];
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case '\\': case '\'': case '"': out += e; break;
        case 'x': {
          int v = 0, n = 0;
          while (n < 2 && pos_ < s_.size() && std::isxdigit(static_cast<unsigned char>(s_[pos_])))
            v = v * 16 + std::stoi(std::string(1, s_[pos_++]), nullptr, 16), ++n;
          if (n == 0) fail("bad \\x escape in string");
          out += static_cast<char>(v);
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            int v = e - '0', n = 1;
            while (n < 3 && pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '7') v = v * 8 + (s_[pos_++] - '0'), ++n;
            out += static_cast<char>(v);
          } else {
            fail(std::string("unknown escape '\\") + e + "' in string");
          }
      }
    }
    return out;
  }

  void scalar(TextField* f) {
    char c = peek();
    if (c == '"' || c == '\'') {
      f->quoted = true;
      f->scalar = string_literal();
      // Adjacent literals concatenate, as in C.
      while (peek() == '"' || peek() == '\'') f->scalar += string_literal();
      return;
    }
    size_t b = pos_;
    if (c == '-' || c == '+') ++pos_;
    while (pos_ < s_.size() && (ident_char(s_[pos_]) ||
                                ((s_[pos_] == '-' || s_[pos_] == '+') && (s_[pos_ - 1] == 'e' || s_[pos_ - 1] == 'E'))))
      ++pos_;
    if (pos_ == b || (pos_ == b + 1 && (c == '-' || c == '+')))
      fail(c ? std::string("expected a value, found '") + c + "'" : "expected a value, found the end of the file");
    f->scalar = s_.substr(b, pos_ - b);
  }

  void parse_fields(TextMsg& m, int depth, char close) {
    if (depth > kMaxDepth) fail("messages nested more than " + std::to_string(kMaxDepth) + " deep");
    while (true) {
      if (at_end()) {
        if (close) fail(std::string("missing '") + close + "' (message opened at line " + std::to_string(m.line) + ")");
        return;
      }
      char c = peek();
      if (close && c == close) {
        ++pos_;
        return;
      }
      if (c == '}' || c == '>') fail(std::string("unexpected '") + c + "'");
      TextField f;
      f.name = identifier();
      f.line = line_;
      bool colon = false;
      if (peek() == ':') {
        ++pos_;
        colon = true;
      }
      char v = peek();
      if (v == '{' || v == '<') {
        ++pos_;
        auto sub = std::make_shared<TextMsg>();
        sub->line = line_;
        sub->origin = origin_;
        parse_fields(*sub, depth + 1, v == '{' ? '}' : '>');
        f.msg = std::move(sub);
        m.fields.push_back(std::move(f));
      } else if (v == '[') {
        // Short form of a repeated field: name: [1, 2, 3] (scalars) or [{..}, {..}].
        ++pos_;
        if (peek() == ']') {
          ++pos_;
        } else {
          while (true) {
            TextField item;
            item.name = f.name;
            item.line = line_;
            char iv = peek();
            if (iv == '{' || iv == '<') {
              ++pos_;
              auto sub = std::make_shared<TextMsg>();
              sub->line = line_;
              sub->origin = origin_;
              parse_fields(*sub, depth + 1, iv == '{' ? '}' : '>');
              item.msg = std::move(sub);
            } else {
              scalar(&item);
            }
            m.fields.push_back(std::move(item));
            char sep = peek();
            if (sep == ',') {
              ++pos_;
              continue;
            }
            if (sep == ']') {
              ++pos_;
              break;
            }
            fail("expected ',' or ']' in the list of '" + f.name + "'");
          }
        }
      } else {
        if (!colon) fail("expected ':' or '{' after '" + f.name + "'");
        scalar(&f);
        m.fields.push_back(std::move(f));
      }
      char sep = peek();
      if (sep == ';' || sep == ',') ++pos_;
    }
  }
};

[[noreturn]] void bad_value(const TextMsg& m, const TextField& f, const char* want) {
  throw CaffeError(m.where(&f) + ": field '" + f.name + "' expects " + want + ", got " +
                   (f.msg ? std::string("a message") : "'" + f.scalar + "'"));
}

}  // namespace

std::string TextMsg::where(const TextField* f) const {
  return origin + ":" + std::to_string(f ? f->line : line);
}

const TextField* TextMsg::find(const std::string& name) const {
  for (const auto& f : fields)
    if (f.name == name) return &f;
  return nullptr;
}

std::vector<const TextField*> TextMsg::all(const std::string& name) const {
  std::vector<const TextField*> out;
  for (const auto& f : fields)
    if (f.name == name) out.push_back(&f);
  return out;
}

int64_t field_int(const TextMsg& m, const TextField& f) {
  if (f.msg || f.quoted || f.scalar.empty()) bad_value(m, f, "an integer");
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(f.scalar.c_str(), &end, 0);
  if (errno == ERANGE || *end) bad_value(m, f, "an integer");
  return v;
}

double field_float(const TextMsg& m, const TextField& f) {
  if (f.msg || f.quoted || f.scalar.empty()) bad_value(m, f, "a number");
  std::string s = f.scalar;
  // Text format allows a float suffix ("1.0f") and the words inf / nan.
  if (s.size() > 1 && (s.back() == 'f' || s.back() == 'F') && s.find_first_of("iInN") == std::string::npos)
    s.pop_back();
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (*end) bad_value(m, f, "a number");
  return v;
}

int64_t TextMsg::get_int(const std::string& name, int64_t def) const {
  const TextField* f = find(name);
  return f ? field_int(*this, *f) : def;
}

double TextMsg::get_float(const std::string& name, double def) const {
  const TextField* f = find(name);
  return f ? field_float(*this, *f) : def;
}

bool TextMsg::get_bool(const std::string& name, bool def) const {
  const TextField* f = find(name);
  if (!f) return def;
  if (!f->msg && !f->quoted) {
    if (f->scalar == "true" || f->scalar == "True" || f->scalar == "t" || f->scalar == "1") return true;
    if (f->scalar == "false" || f->scalar == "False" || f->scalar == "f" || f->scalar == "0") return false;
  }
  bad_value(*this, *f, "true or false");
}

std::string TextMsg::get_string(const std::string& name, const std::string& def) const {
  const TextField* f = find(name);
  if (!f) return def;
  if (f->msg) bad_value(*this, *f, "a string");
  return f->scalar;
}

std::vector<int64_t> TextMsg::get_ints(const std::string& name) const {
  std::vector<int64_t> out;
  for (const auto* f : all(name)) out.push_back(field_int(*this, *f));
  return out;
}

std::vector<float> TextMsg::get_floats(const std::string& name) const {
  std::vector<float> out;
  for (const auto* f : all(name)) out.push_back(static_cast<float>(field_float(*this, *f)));
  return out;
}

std::vector<std::string> TextMsg::get_strings(const std::string& name) const {
  std::vector<std::string> out;
  for (const auto* f : all(name)) {
    if (f->msg) bad_value(*this, *f, "a string");
    out.push_back(f->scalar);
  }
  return out;
}

const TextMsg* TextMsg::get_msg(const std::string& name) const {
  for (const auto& f : fields)
    if (f.name == name) {
      if (!f.msg) bad_value(*this, f, "a message { ... }");
      return f.msg.get();
    }
  return nullptr;
}

std::vector<const TextMsg*> TextMsg::get_msgs(const std::string& name) const {
  std::vector<const TextMsg*> out;
  for (const auto& f : fields)
    if (f.name == name) {
      if (!f.msg) bad_value(*this, f, "a message { ... }");
      out.push_back(f.msg.get());
    }
  return out;
}

std::shared_ptr<TextMsg> parse_text(const std::string& text, const std::string& origin) {
  return Parser(text, origin).parse();
}

}  // namespace caffe
}  // namespace minnow
