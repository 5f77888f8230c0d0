#include "base/status.h"

#include <cstring>

namespace hull {

std::string_view CodeName(Code code) {
  switch (code) {
    case Code::kOk: return "OK";
    case Code::kCanceled: return "Canceled";
    case Code::kUnknown: return "Unknown";
    case Code::kInvalidArgument: return "InvalidArgument";
    case Code::kDeadlineExceeded: return "DeadlineExceeded";
    case Code::kNotFound: return "NotFound";
    case Code::kAlreadyExists: return "AlreadyExists";
    case Code::kPermissionDenied: return "PermissionDenied";
    case Code::kResourceExhausted: return "ResourceExhausted";
    case Code::kFailedPrecondition: return "FailedPrecondition";
    case Code::kAborted: return "Aborted";
    case Code::kOutOfRange: return "OutOfRange";
    case Code::kUnimplemented: return "Unimplemented";
    case Code::kInternal: return "Internal";
    case Code::kUnavailable: return "Unavailable";
    case Code::kDataLoss: return "DataLoss";
    case Code::kUnauthenticated: return "Unauthenticated";
  }
  return "Code(?)";
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  std::string message(context);
  message += ": ";
  message += message_;
  return Status(code_, std::move(message));
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string out(CodeName(code_));
  out += ": ";
  out += message_;
  return out;
}

Status CanceledError(std::string m) {
  return Status(Code::kCanceled, std::move(m));
}
Status UnknownError(std::string m) {
  return Status(Code::kUnknown, std::move(m));
}
Status InvalidArgumentError(std::string m) {
  return Status(Code::kInvalidArgument, std::move(m));
}
Status DeadlineExceededError(std::string m) {
  return Status(Code::kDeadlineExceeded, std::move(m));
}
Status NotFoundError(std::string m) {
  return Status(Code::kNotFound, std::move(m));
}
Status AlreadyExistsError(std::string m) {
  return Status(Code::kAlreadyExists, std::move(m));
}
Status PermissionDeniedError(std::string m) {
  return Status(Code::kPermissionDenied, std::move(m));
}
Status ResourceExhaustedError(std::string m) {
  return Status(Code::kResourceExhausted, std::move(m));
}
Status FailedPreconditionError(std::string m) {
  return Status(Code::kFailedPrecondition, std::move(m));
}
Status AbortedError(std::string m) {
  return Status(Code::kAborted, std::move(m));
}
Status OutOfRangeError(std::string m) {
  return Status(Code::kOutOfRange, std::move(m));
}
Status UnimplementedError(std::string m) {
  return Status(Code::kUnimplemented, std::move(m));
}
Status InternalError(std::string m) {
  return Status(Code::kInternal, std::move(m));
}
Status UnavailableError(std::string m) {
  return Status(Code::kUnavailable, std::move(m));
}

Code CodeFromErrno(int err) {
  switch (err) {
    case 0: return Code::kOk;
    case ENOENT:
    case ESRCH:
    case ENXIO: return Code::kNotFound;
    case EEXIST:
    case EADDRINUSE: return Code::kAlreadyExists;
    case EPERM:
    case EACCES: return Code::kPermissionDenied;
    case EINVAL:
    case ENAMETOOLONG:
    case ENOTDIR:
    case EISDIR:
    case ELOOP: return Code::kInvalidArgument;
    case ENOSPC:
    case ENOMEM:
    case EMFILE:
    case ENFILE:
    case EAGAIN: return Code::kResourceExhausted;
    case EBUSY:
    case ENOTEMPTY: return Code::kFailedPrecondition;
    case ETIMEDOUT: return Code::kDeadlineExceeded;
    case ECONNREFUSED:
    case ECONNRESET:
    case EPIPE: return Code::kUnavailable;
    case ENOSYS:
    case EOPNOTSUPP: return Code::kUnimplemented;
    case ECANCELED: return Code::kCanceled;
    default: return Code::kUnknown;
  }
}

Status ErrnoError(int err, std::string_view op, std::string_view object) {
  std::string message(op);
  if (!object.empty()) {
    message += ' ';
    message += object;
  }
  message += ": ";
  message += std::strerror(err);
  return Status(CodeFromErrno(err), std::move(message));
}

}  // namespace hull
