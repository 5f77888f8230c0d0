#include "base/file_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "base/unique_fd.h"

namespace hull {

Result<std::string> ReadAll(int fd, std::string_view name) {
  std::string out;
  char buf[8192];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError("read", name);
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

Result<std::string> ReadFile(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return ErrnoError("open", path);
  return ReadAll(fd.get(), path);
}

Status WriteAll(int fd, std::string_view data, std::string_view name) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError("write", std::string(name));
    off += static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status WriteFileAtomic(const std::string& path, std::string_view data, int mode) {
  std::string tmp;
  auto slash = path.rfind('/');
  tmp = (slash == std::string::npos ? std::string() : path.substr(0, slash + 1)) + "." +
        path.substr(slash == std::string::npos ? 0 : slash + 1) + ".tmp";
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode));
  if (!fd) return ErrnoError("create", tmp);
  if (Status s = WriteAll(fd.get(), data, tmp); !s.ok()) {
    ::unlink(tmp.c_str());
    return s;
  }
  fd.reset();
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Status s = ErrnoError("rename", tmp + " to " + path);
    ::unlink(tmp.c_str());
    return s;
  }
  return Status::Ok();
}

Status WriteKernelFile(const std::string& path, std::string_view data) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return ErrnoError("open", path);
  if (::write(fd.get(), data.data(), data.size()) != static_cast<ssize_t>(data.size())) {
    return ErrnoError("write " + std::string(data), path);
  }
  return Status::Ok();
}

Status MakeDirs(const std::string& dir, mode_t mode) {
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos != dir.size() && dir[pos] != '/') continue;
    std::string prefix = dir.substr(0, pos);
    if (::mkdir(prefix.c_str(), pos == dir.size() ? mode : 0711) != 0 && errno != EEXIST) {
      return ErrnoError("mkdir", prefix);
    }
  }
  return Status::Ok();
}

}  // namespace hull
