// Status -> Python exception mapping (basalt/errors.py holds the classes and the code map).

#include <string>

#include "py_common.h"

namespace basalt::python {
namespace {

// The classes outlive the interpreter's module teardown on purpose (leaked): a destructor running
// after Py_Finalize would touch a dead interpreter.
struct ErrorClasses {
  py::object base;          // basalt.errors.BasaltError
  py::object by_code;       // dict: code name -> class
  py::object invalid;       // InvalidArgument
  py::object invalid_type;  // InvalidType
};

const ErrorClasses& Classes() {
  static const ErrorClasses* classes = [] {
    py::module_ errors = py::module_::import("basalt.errors");
    auto* c = new ErrorClasses;
    c->base = errors.attr("BasaltError");
    c->by_code = errors.attr("STATUS_CODE_TO_EXCEPTION");
    c->invalid = errors.attr("InvalidArgument");
    c->invalid_type = errors.attr("InvalidType");
    return c;
  }();
  return *classes;
}

[[noreturn]] void Raise(py::handle cls, const std::string& message) {
  PyErr_SetString(cls.ptr(), message.c_str());
  throw py::error_already_set();
}

// Borrowed: the class lives in errors.py's map.
py::handle ClassOf(const absl::Status& status) {
  const ErrorClasses& c = Classes();
  py::str code(absl::StatusCodeToString(status.code()));
  PyObject* cls = PyDict_GetItem(c.by_code.ptr(), code.ptr());
  return cls != nullptr ? py::handle(cls) : py::handle(c.base);
}

}  // namespace

void RaiseStatus(const absl::Status& status, std::string_view context) {
  std::string message(status.message());
  if (!context.empty()) message = std::string(context) + ": " + message;
  Raise(ClassOf(status), message);
}

py::object MakeException(const absl::Status& status) {
  return ClassOf(status)(std::string(status.message()));
}

void RaiseInvalid(const std::string& message) { Raise(Classes().invalid, message); }
void RaiseInvalidType(const std::string& message) { Raise(Classes().invalid_type, message); }

void InitErrors(py::module_& m) {
  // Fail at import, not at the first error, if the package is incomplete.
  Classes();
  m.def(
      "_raise_status",
      [](const std::string& code_name, const std::string& message) {
        // Test hook: raise the exception of an absl status code by name.
        for (int code = 1; code <= 16; ++code) {
          auto c = static_cast<absl::StatusCode>(code);
          if (absl::StatusCodeToString(c) == code_name) RaiseStatus(absl::Status(c, message));
        }
        RaiseInvalid("unknown status code " + code_name);
      },
      "Raises the exception mapped from an absl status code name (tests use it).");
}

}  // namespace basalt::python
