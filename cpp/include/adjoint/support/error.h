// The exception types of adjoint's core. Each maps to a Python subclass of
// aj.Error (see cpp/bindings/errors.cc); a location, when known, travels with
// the exception so Python can expose line/column.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace aj {

// Where in a text an error was found; line and column are 1-based, 0 = unknown.
struct SourceLoc {
  int line = 0;
  int column = 0;
  std::string source_line;
};

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg, SourceLoc loc = {})
      : std::runtime_error(msg), loc_(std::move(loc)) {}
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

// Builds a message from streamable parts: throw TypeInferenceError(str("x: ", n)).
template <typename... Parts>
std::string str(const Parts&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}

}  // namespace aj
