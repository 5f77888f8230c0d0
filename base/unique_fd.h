// UniqueFd: sole owner of one file descriptor; closes it on destruction.
// Every descriptor hull opens lives in one of these, and every one is opened
// O_CLOEXEC so that children inherit only what they are given explicitly.
#pragma once

#include <utility>

#include "base/status.h"

namespace hull {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  explicit operator bool() const { return valid(); }

  // Gives up ownership without closing.
  [[nodiscard]] int release() { return std::exchange(fd_, -1); }
  // Closes the current descriptor (if any) and takes `fd`.
  void reset(int fd = -1);

  // A new descriptor for the same file, O_CLOEXEC.
  Result<UniqueFd> Duplicate() const;

 private:
  int fd_ = -1;
};

struct Pipe {
  UniqueFd read;
  UniqueFd write;
};
// pipe2(O_CLOEXEC | extra_flags).
Result<Pipe> MakePipe(int extra_flags = 0);

// Sets or clears O_NONBLOCK.
Status SetNonBlocking(int fd, bool on = true);

}  // namespace hull
