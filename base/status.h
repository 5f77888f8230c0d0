// Status and Result<T>: hull's error values. No exceptions cross hull's code;
// every fallible function returns a Status or a Result<T>. Codes are the
// google.rpc codes that ttrpc carries, so an error reaches containerd with the
// meaning it had where it was made.
#pragma once

#include <cerrno>
#include <expected>
#include <string>
#include <string_view>
#include <utility>

namespace hull {

// google.rpc.Code values.
enum class Code : int {
  kOk = 0,
  kCanceled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

std::string_view CodeName(Code code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

  // "context: message", same code. Used on the way up the stack.
  Status WithContext(std::string_view context) const;

  // "Code: message", for logs and test failures.
  std::string ToString() const;

  // Explicitly drops a status the caller has decided not to act on.
  void IgnoreError() const {}

  friend bool operator==(const Status& a, const Status& b) = default;

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

Status CanceledError(std::string message);
Status UnknownError(std::string message);
Status InvalidArgumentError(std::string message);
Status DeadlineExceededError(std::string message);
Status NotFoundError(std::string message);
Status AlreadyExistsError(std::string message);
Status PermissionDeniedError(std::string message);
Status ResourceExhaustedError(std::string message);
Status FailedPreconditionError(std::string message);
Status AbortedError(std::string message);
Status OutOfRangeError(std::string message);
Status UnimplementedError(std::string message);
Status InternalError(std::string message);
Status UnavailableError(std::string message);

// The one place a failing syscall becomes a Status: "<op> <object>: <strerror>",
// e.g. "open /run/x/config.json: No such file or directory". The code follows
// errno (ENOENT -> NotFound, EEXIST -> AlreadyExists, EPERM/EACCES ->
// PermissionDenied, EINVAL -> InvalidArgument, ...).
Status ErrnoError(int err, std::string_view op, std::string_view object = {});
// Same, reading errno.
inline Status ErrnoError(std::string_view op, std::string_view object = {}) {
  return ErrnoError(errno, op, object);
}
Code CodeFromErrno(int err);

// Result<T>: a value or the Status saying why there is none. A Status converts
// implicitly into a failed Result, so `return NotFoundError("...")` works in a
// function returning Result<T>.
template <typename T>
class [[nodiscard]] Result : public std::expected<T, Status> {
 public:
  using Base = std::expected<T, Status>;
  using Base::Base;
  Result(Status status) : Base(std::unexpect, std::move(status)) {}  // NOLINT: implicit by design
  Result(const Base& b) : Base(b) {}                                 // NOLINT
  Result(Base&& b) : Base(std::move(b)) {}                           // NOLINT

  // The error, or OK when there is a value.
  Status status() const { return this->has_value() ? Status() : this->error(); }
};

namespace internal {
inline Status AsStatus(const Status& s) {
  return s;
}
template <typename T>
Status AsStatus(const Result<T>& r) {
  return r.status();
}
}  // namespace internal

}  // namespace hull

#define HULL_CONCAT_INNER(a, b) a##b
#define HULL_CONCAT(a, b) HULL_CONCAT_INNER(a, b)

// Returns the Status of `expr` (a Status or a Result) from the enclosing
// function if it is not OK.
#define HULL_RETURN_IF_ERROR(expr)                                    \
  do {                                                                \
    ::hull::Status hull_status_ = ::hull::internal::AsStatus((expr)); \
    if (!hull_status_.ok()) return hull_status_;                      \
  } while (0)

// Same, adding context to the message on the way up.
#define HULL_RETURN_IF_ERROR_CTX(expr, ctx)                           \
  do {                                                                \
    ::hull::Status hull_status_ = ::hull::internal::AsStatus((expr)); \
    if (!hull_status_.ok()) return hull_status_.WithContext(ctx);     \
  } while (0)

// `HULL_ASSIGN_OR_RETURN(auto x, MakeX());` binds the value of a Result or
// returns its error.
#define HULL_ASSIGN_OR_RETURN(lhs, expr) \
  HULL_ASSIGN_OR_RETURN_IMPL(HULL_CONCAT(hull_result_, __LINE__), lhs, expr)
#define HULL_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr)     \
  auto tmp = (expr);                                   \
  if (!tmp.has_value()) return std::move(tmp).error(); \
  lhs = std::move(*tmp)

// For callback-style functions: `HULL_ASSIGN_OR_ANSWER(auto x, MakeX(), done);`
// binds the value, or calls done(error) and returns.
#define HULL_ASSIGN_OR_ANSWER(lhs, expr, done) \
  HULL_ASSIGN_OR_ANSWER_IMPL(HULL_CONCAT(hull_result_, __LINE__), lhs, expr, done)
#define HULL_ASSIGN_OR_ANSWER_IMPL(tmp, lhs, expr, done) \
  auto tmp = (expr);                                     \
  if (!tmp.has_value()) {                                \
    (done)(std::move(tmp).error());                      \
    return;                                              \
  }                                                      \
  lhs = std::move(*tmp)
