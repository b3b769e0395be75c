// The exception types of adjoint's core. Each maps to a Python subclass of
// aj.Error (see cpp/bindings/errors.cc); a location, when known, travels with
// the exception so Python can expose line/column. Also the helpers that build
// their messages (str, escape).
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace aj {

// Where in a text an error was found; line and column are 1-based, 0 = unknown.
struct SourceLoc {
  int line = 0;
  int column = 0;
  std::string source_line;
};

// `msg` with each NUL character written \0: what() is a C string, which
// would end at the first (a name holding one, given from Python, would cut
// the message short).
inline std::string without_nul(const std::string& msg) {
  if (msg.find('\0') == std::string::npos) return msg;
  std::string out;
  for (char c : msg) out += c == '\0' ? std::string("\\0") : std::string(1, c);
  return out;
}

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg, SourceLoc loc = {})
      : std::runtime_error(without_nul(msg)), loc_(std::move(loc)) {}
  const SourceLoc& loc() const { return loc_; }
  virtual const char* kind() const { return "Error"; }

 private:
  SourceLoc loc_;
};

#define AJ_DEFINE_ERROR(NAME)                                              \
  class NAME : public Error {                                              \
   public:                                                                 \
    using Error::Error;                                                    \
    const char* kind() const override { return #NAME; }                    \
  };

AJ_DEFINE_ERROR(ParseError)
AJ_DEFINE_ERROR(TypeInferenceError)
AJ_DEFINE_ERROR(VerifyError)
AJ_DEFINE_ERROR(ExecutionError)
AJ_DEFINE_ERROR(TransformError)
AJ_DEFINE_ERROR(OutOfMemoryError)
#undef AJ_DEFINE_ERROR

// Dim arithmetic, an element count or a byte size that does not fit in int64.
// Python sees a TypeInferenceError; code that knows the op or the param
// catches this class to rethrow it naming them.
class SizeOverflowError : public TypeInferenceError {
 public:
  using TypeInferenceError::TypeInferenceError;
};

// A symbolic dim past the size a polynomial may have (Dim::kMaxTerms terms,
// degree Dim::kMaxDegree), though its value at given symbols may fit: the
// FLOP estimates catch this class to say so.
class DimLimitError : public SizeOverflowError {
 public:
  using SizeOverflowError::SizeOverflowError;
};

// A dim string that is not an integer polynomial ("n / 2", "n**-1"). Python
// sees a TypeInferenceError; offset() is the byte of the string where reading
// stopped, so the text parser can point at it inside its string literal.
class DimSyntaxError : public TypeInferenceError {
 public:
  DimSyntaxError(const std::string& msg, size_t offset) : TypeInferenceError(msg), offset_(offset) {}
  size_t offset() const { return offset_; }

 private:
  size_t offset_;
};

// Text safe to show in a message: printable ASCII kept, other bytes as \xNN.
inline std::string escape(std::string_view s) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x7f) {
      out += ch;
    } else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

// Builds a message from streamable parts: throw TypeInferenceError(str("x: ", n)).
template <typename... Parts>
std::string str(const Parts&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}

}  // namespace aj
