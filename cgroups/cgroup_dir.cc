#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "base/text.h"
#include "cgroups/cgroup_dir_internal.h"

namespace hull::cgroups::internal {
namespace {

Result<std::string> ReadAll(int fd, const std::filesystem::path& path) {
  std::string out;
  char buf[4096];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("read", path.string());
    }
    if (n == 0) return out;
    out.append(buf, static_cast<size_t>(n));
  }
}

// Files a kernel may simply not have for this cgroup or configuration.
bool IsMissing(const Status& status) {
  return status.code() == Code::kNotFound || status.code() == Code::kUnimplemented;
}

Result<std::vector<std::string>> ListEntries(int dir_fd, const std::filesystem::path& path,
                                             bool dirs_only) {
  // fdopendir takes ownership of its descriptor, so give it a fresh one.
  UniqueFd fd(::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) return ErrnoError("open", path.string());
  DIR* dir = ::fdopendir(fd.get());
  if (dir == nullptr) return ErrnoError("opendir", path.string());
  (void)fd.release();  // now owned by `dir`
  std::vector<std::string> names;
  while (true) {
    errno = 0;
    dirent* entry = ::readdir(dir);
    if (entry == nullptr) break;
    std::string_view name = entry->d_name;
    if (name == "." || name == "..") continue;
    if (dirs_only) {
      bool is_dir = entry->d_type == DT_DIR;
      if (entry->d_type == DT_UNKNOWN) {
        struct stat st;
        is_dir = ::fstatat(::dirfd(dir), entry->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                 S_ISDIR(st.st_mode);
      }
      if (!is_dir) continue;
    }
    names.emplace_back(name);
  }
  int err = errno;
  ::closedir(dir);
  if (err != 0) return ErrnoError(err, "readdir", path.string());
  return names;
}

}  // namespace

Status ValidateComponent(std::string_view name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string_view::npos) {
    return InvalidArgumentError("not a single path component: \"" + std::string(name) + "\"");
  }
  return Status::Ok();
}

Result<CgroupDir> CgroupDir::OpenChild(std::string_view name) const {
  HULL_RETURN_IF_ERROR(ValidateComponent(name));
  std::string n(name);
  UniqueFd fd(::openat(fd_.get(), n.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return ErrnoError("open", (path_ / n).string());
  return CgroupDir(std::move(fd), path_ / n);
}

Status CgroupDir::MakeChild(std::string_view name, mode_t mode) const {
  HULL_RETURN_IF_ERROR(ValidateComponent(name));
  std::string n(name);
  if (::mkdirat(fd_.get(), n.c_str(), mode) != 0) return ErrnoError("mkdir", (path_ / n).string());
  return Status::Ok();
}

Status CgroupDir::RemoveChild(std::string_view name) const {
  HULL_RETURN_IF_ERROR(ValidateComponent(name));
  std::string n(name);
  if (::unlinkat(fd_.get(), n.c_str(), AT_REMOVEDIR) != 0) {
    return ErrnoError("rmdir", (path_ / n).string());
  }
  return Status::Ok();
}

Result<CgroupDir> CgroupDir::Open(const std::filesystem::path& mount_point,
                                  std::string_view relative) {
  UniqueFd fd(::open(mount_point.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) return ErrnoError("open", mount_point.string());
  std::filesystem::path path = mount_point;
  for (std::string_view component : Split(relative, '/')) {
    if (component == "." || component == "..") {
      return InvalidArgumentError("cgroup path has a '" + std::string(component) +
                                  "' component: " + std::string(relative));
    }
    path /= component;
    std::string name(component);
    UniqueFd next(
        ::openat(fd.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!next) return ErrnoError("open", path.string());
    fd = std::move(next);
  }
  return CgroupDir(std::move(fd), std::move(path));
}

Result<UniqueFd> CgroupDir::OpenFile(std::string_view name, int flags) const {
  std::string n(name);
  UniqueFd fd(::openat(fd_.get(), n.c_str(), flags | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return ErrnoError("open", (path_ / n).string());
  return fd;
}

Result<std::string> CgroupDir::Read(std::string_view name) const {
  HULL_ASSIGN_OR_RETURN(UniqueFd fd, OpenFile(name, O_RDONLY));
  return ReadAll(fd.get(), path_ / name);
}

Status CgroupDir::Write(std::string_view name, std::string_view data) const {
  HULL_ASSIGN_OR_RETURN(UniqueFd fd, OpenFile(name, O_WRONLY));
  ssize_t n;
  do {
    n = ::write(fd.get(), data.data(), data.size());
  } while (n < 0 && errno == EINTR);
  if (n < 0) return ErrnoError("write", (path_ / name).string());
  if (static_cast<size_t>(n) != data.size()) {
    return InternalError("write " + (path_ / name).string() + ": short write");
  }
  return Status::Ok();
}

Result<std::vector<std::string>> CgroupDir::List() const {
  return ListEntries(fd_.get(), path_, /*dirs_only=*/false);
}

Result<std::vector<std::string>> CgroupDir::ListDirs() const {
  return ListEntries(fd_.get(), path_, /*dirs_only=*/true);
}

Result<CgroupDir> CgroupDir::Duplicate() const {
  HULL_ASSIGN_OR_RETURN(UniqueFd fd, fd_.Duplicate());
  return CgroupDir(std::move(fd), path_);
}

std::optional<std::string> StatFiles::Text(std::string_view name) {
  Result<std::string> content = dir_.Read(name);
  if (content) return std::move(*content);
  if (!IsMissing(content.error())) Fail(content.error());
  return std::nullopt;
}

std::optional<uint64_t> StatFiles::Uint(std::string_view name, uint64_t max_value) {
  std::optional<std::string> text = Text(name);
  if (!text) return std::nullopt;
  std::optional<uint64_t> value = ParseUintOrMax(*text, max_value);
  if (!value) {
    Fail(InternalError("parse " + (dir_.path() / name).string() + ": not a number: \"" +
                       std::string(TrimSpace(*text)) + "\""));
  }
  return value;
}

std::optional<FlatKeyed> StatFiles::Keyed(std::string_view name) {
  std::optional<std::string> text = Text(name);
  if (!text) return std::nullopt;
  return ParseFlatKeyed(*text);
}

std::optional<std::vector<NestedLine>> StatFiles::Nested(std::string_view name) {
  std::optional<std::string> text = Text(name);
  if (!text) return std::nullopt;
  return ParseNestedKeyed(*text);
}

void StatFiles::Fail(Status status) {
  if (status_.ok()) status_ = std::move(status);
}

Result<std::string> ReadFileAt(const std::filesystem::path& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return ErrnoError("open", path.string());
  return ReadAll(fd.get(), path);
}

}  // namespace hull::cgroups::internal
