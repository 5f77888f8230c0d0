#include "shim/cli/fd_io.h"

#include <fcntl.h>
#include <unistd.h>

#include "base/unique_fd.h"

namespace hull::shim {

Result<std::string> ReadAll(int fd, std::string_view name, size_t max_size) {
  std::string out;
  char buf[16384];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError("read", name);
    if (n == 0) return out;
    if (out.size() + static_cast<size_t>(n) > max_size) {
      return InvalidArgumentError("read " + std::string(name) + ": more than " +
                                  std::to_string(max_size) + " bytes");
    }
    out.append(buf, static_cast<size_t>(n));
  }
}

Status WriteAll(int fd, std::string_view data, std::string_view name) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError("write", name);
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

Status WriteExistingFile(const std::string& path, std::string_view data) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return ErrnoError("open", path);
  return WriteAll(fd.get(), data, path);
}

}  // namespace hull::shim
