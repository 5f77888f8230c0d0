#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>
#include <sstream>

#include "tests/integration/harness/cleanup_internal.h"
#include "tests/integration/harness/host.h"
#include "tests/integration/harness/host_internal.h"

namespace hull::itest::internal {

namespace fs = std::filesystem;

bool KillAndWait(const std::vector<pid_t>& pids, std::chrono::milliseconds timeout) {
  std::vector<pid_t> killed;
  for (pid_t pid : pids) {
    if (pid <= 1 || pid == ::getpid()) continue;  // never 0, -1, init or us
    if (::kill(pid, SIGKILL) == 0) killed.push_back(pid);
  }
  return WaitUntil([&] { return std::none_of(killed.begin(), killed.end(), ProcessAlive); },
                   timeout);
}

std::vector<std::string> UnmountUnder(const std::string& prefix) {
  for (int round = 0; round < 8; ++round) {
    std::vector<std::string> mounts = MountsUnder(prefix);
    if (mounts.empty()) break;
    // Deepest first; among equals, the most recent mount (last in mountinfo) first.
    std::reverse(mounts.begin(), mounts.end());
    std::stable_sort(mounts.begin(), mounts.end(),
                     [](const auto& a, const auto& b) { return a.size() > b.size(); });
    bool progress = false;
    for (const auto& m : mounts) {
      if (::umount2(m.c_str(), UMOUNT_NOFOLLOW) == 0 ||
          ::umount2(m.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW) == 0) {
        progress = true;
      }
    }
    if (!progress) break;
  }
  return MountsUnder(prefix);
}

namespace {

bool RemoveOn(const std::string& path, dev_t dev, std::string* error) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return true;
    *error = "lstat " + path + ": " + std::strerror(errno);
    return false;
  }
  if (st.st_dev != dev) {
    *error = path + " is still a mount point";
    return false;
  }
  if (!S_ISDIR(st.st_mode)) {
    if (::unlink(path.c_str()) == 0 || errno == ENOENT) return true;
    *error = "unlink " + path + ": " + std::strerror(errno);
    return false;
  }
  bool ok = true;
  if (DIR* dir = ::opendir(path.c_str()); dir != nullptr) {
    while (dirent* e = ::readdir(dir)) {
      std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      ok = RemoveOn(path + "/" + name, dev, error) && ok;
    }
    ::closedir(dir);
  }
  if (::rmdir(path.c_str()) == 0 || errno == ENOENT) return ok;
  if (ok) *error = "rmdir " + path + ": " + std::strerror(errno);
  return false;
}

// Which directories to watch, and how deep below each.
std::vector<std::pair<std::string, int>> WatchedRoots() {
  std::vector<std::pair<std::string, int>> roots = {
      {"/run/containerd", 3}, {"/var/lib/cni", 3}, {"/run/netns", 1}};
  std::vector<std::string> hierarchies = {"/sys/fs/cgroup"};  // cgroup v2, or v1's tmpfs
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/sys/fs/cgroup", ec)) {
    std::error_code type_ec;
    if (fs::is_directory(e.symlink_status(type_ec))) hierarchies.push_back(e.path());
  }
  for (const auto& h : hierarchies) {
    for (const char* ns : {"default", "k8s.io", "hull-itest"}) roots.emplace_back(h + "/" + ns, 4);
  }
  return roots;
}

std::set<std::string> ScanWatchedDirs() {
  std::set<std::string> dirs;
  for (const auto& [root, depth] : WatchedRoots()) {
    std::error_code ec;
    if (!fs::is_directory(fs::symlink_status(root, ec))) continue;
    dirs.insert(root);
    fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec);
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      std::error_code type_ec;
      if (!fs::is_directory(it->symlink_status(type_ec))) {
        continue;
      }
      dirs.insert(it->path());
      if (it.depth() + 1 >= depth) it.disable_recursion_pending();
    }
  }
  return dirs;
}

// True when `fd` is still the file at `path` (a last leaver may have
// unlinked it between our open and our flock).
bool StillLinked(int fd, const char* path) {
  struct stat by_fd, by_path;
  return ::fstat(fd, &by_fd) == 0 && ::stat(path, &by_path) == 0 &&
         by_fd.st_dev == by_path.st_dev && by_fd.st_ino == by_path.st_ino;
}

}  // namespace

bool RemoveTree(const std::string& path, std::string* error) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return errno == ENOENT;
  return RemoveOn(path, st.st_dev, error);
}

std::unique_ptr<SharedHostDirs> SharedHostDirs::Join(const std::function<void()>& when_alone) {
  for (;;) {
    Fd fd(::open(kLockPath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644));
    if (!fd.valid()) return nullptr;
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) {
      if (!StillLinked(fd.get(), kLockPath)) continue;
      // No other instance is alive.
      when_alone();
      struct stat st;
      if (::fstat(fd.get(), &st) != 0) return nullptr;
      if (st.st_size == 0) {  // a fresh file: record the directories that exist now
        std::string snapshot = "# directories that existed before the first instance\n";
        for (const auto& dir : ScanWatchedDirs()) snapshot += dir + "\n";
        ssize_t n = ::pwrite(fd.get(), snapshot.data(), snapshot.size(), 0);
        if (n != static_cast<ssize_t>(snapshot.size())) return nullptr;
      }
    }
    // Shared from here on (a downgrade is not atomic: check the file again).
    if (::flock(fd.get(), LOCK_SH) != 0) return nullptr;
    if (!StillLinked(fd.get(), kLockPath)) continue;
    return std::unique_ptr<SharedHostDirs>(new SharedHostDirs(std::move(fd)));
  }
}

SharedHostDirs::~SharedHostDirs() {
  // Succeeds only when no other instance holds its shared lock.
  if (::flock(lock_.get(), LOCK_EX | LOCK_NB) != 0) return;
  std::set<std::string> before;
  std::istringstream lines(ReadFile("/proc/self/fd/" + std::to_string(lock_.get())));
  for (std::string line; std::getline(lines, line);) before.insert(line);
  std::vector<std::string> appeared;
  for (const auto& dir : ScanWatchedDirs()) {
    if (!before.contains(dir)) appeared.push_back(dir);
  }
  std::sort(appeared.begin(), appeared.end(),
            [](const auto& a, const auto& b) { return a.size() > b.size(); });
  for (const auto& dir : appeared) ::rmdir(dir.c_str());
  ::unlink(kLockPath);
}

}  // namespace hull::itest::internal
