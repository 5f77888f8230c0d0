#include "tests/integration/harness/host.h"

#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

#include "tests/integration/harness/host_internal.h"

#ifndef HULL_SOURCE_DIR
#error "HULL_SOURCE_DIR must be defined by the build"
#endif
#ifndef HULL_BINARY_DIR
#error "HULL_BINARY_DIR must be defined by the build"
#endif

namespace hull::itest {

namespace fs = std::filesystem;

namespace internal {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool WriteFile(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  out.close();
  return static_cast<bool>(out);
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string FindInPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/sbin:/usr/bin:/sbin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    std::string candidate = dir + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

std::string UnescapeMountPath(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      int value = 0;
      bool octal = true;
      for (size_t j = 1; j <= 3; ++j) {
        char c = s[i + j];
        if (c < '0' || c > '7') octal = false;
        value = value * 8 + (c - '0');
      }
      if (octal) {
        out.push_back(static_cast<char>(value));
        i += 3;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

bool IsAtOrUnder(const std::string& path, const std::string& prefix) {
  std::string p = prefix;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  if (path == p) return true;
  return path.size() > p.size() && path.compare(0, p.size(), p) == 0 &&
         (p == "/" || path[p.size()] == '/');
}

}  // namespace internal

std::string SkipReason() {
  if (const char* skip = std::getenv("HULL_SKIP_INTEGRATION"); skip != nullptr && *skip != '\0') {
    return "HULL_SKIP_INTEGRATION is set";
  }
  if (::geteuid() != 0) {
    return "integration tests need root (euid " + std::to_string(::geteuid()) + ")";
  }
  for (const char* tool : {"containerd", "ctr", "runc", "containerd-shim-runc-v2"}) {
    if (internal::FindInPath(tool).empty()) {
      return std::string(tool) + " not found in PATH (Debian packages containerd and runc)";
    }
  }
  if (::access("/proc/self/mountinfo", R_OK) != 0) return "/proc is not mounted";
  return "";
}

std::string SourceDir() {
  return HULL_SOURCE_DIR;
}
std::string BinaryDir() {
  return HULL_BINARY_DIR;
}

std::string HullShimDir() {
  for (const char* sub : {"", "/shim", "/bin"}) {
    std::string dir = BinaryDir() + sub;
    if (::access((dir + "/containerd-shim-hull-v2").c_str(), X_OK) == 0) return dir;
  }
  return "";
}

std::vector<std::string> MountsUnder(const std::string& prefix) {
  std::vector<std::string> mounts;
  std::istringstream lines(internal::ReadFile("/proc/self/mountinfo"));
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string id, parent, devno, root, mount_point;
    if (!(fields >> id >> parent >> devno >> root >> mount_point)) continue;
    std::string path = internal::UnescapeMountPath(mount_point);
    if (internal::IsAtOrUnder(path, prefix)) mounts.push_back(path);
  }
  return mounts;
}

bool ProcessAlive(pid_t pid) {
  std::string stat = internal::ReadFile("/proc/" + std::to_string(pid) + "/stat");
  size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size()) return false;
  char state = stat[paren + 2];
  return state != 'Z' && state != 'X';
}

long PssKb(pid_t pid) {
  std::istringstream in(internal::ReadFile("/proc/" + std::to_string(pid) + "/smaps_rollup"));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("Pss:", 0) == 0) return std::stol(line.substr(4));
  }
  return 0;
}

std::map<std::string, long> QemuPssSplitKb(pid_t pid) {
  struct Mapping {
    unsigned long long size = 0;
    std::string perms, path;
    long pss_kb = 0;
  };
  std::vector<Mapping> maps;
  std::istringstream in(internal::ReadFile("/proc/" + std::to_string(pid) + "/smaps"));
  for (std::string line; std::getline(in, line);) {
    const std::string first = line.substr(0, line.find(' '));
    const size_t dash = first.find('-');
    if (dash != std::string::npos && first.find(':') == std::string::npos) {
      Mapping m;
      std::istringstream f(line);
      std::string range, offset, dev, inode;
      f >> range >> m.perms >> offset >> dev >> inode;
      std::getline(f, m.path);
      m.path.erase(0, m.path.find_first_not_of(' '));
      m.size = std::stoull(first.substr(dash + 1), nullptr, 16) -
               std::stoull(first.substr(0, dash), nullptr, 16);
      maps.push_back(std::move(m));
    } else if (line.rfind("Pss:", 0) == 0 && !maps.empty()) {
      maps.back().pss_kb += std::stol(line.substr(4));
    }
  }
  const Mapping* ram = nullptr;
  for (const Mapping& m : maps) {
    if (m.perms.find('x') == std::string::npos && (!ram || m.size > ram->size)) ram = &m;
  }
  std::map<std::string, long> out;
  for (const Mapping& m : maps) {
    if (&m == ram) {
      out["guest RAM"] += m.pss_kb;
    } else if (m.perms.rfind("rwx", 0) == 0 && m.path.empty()) {
      out["TCG translation cache"] += m.pss_kb;
    } else if (!m.path.empty() && m.path[0] == '/') {
      out["files"] += m.pss_kb;
    } else {
      out["heap, stacks, other"] += m.pss_kb;
    }
  }
  return out;
}

std::vector<pid_t> ProcessesMatching(const std::string& cmdline_substring) {
  std::vector<pid_t> pids;
  const pid_t self = ::getpid();
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    pid_t pid = static_cast<pid_t>(std::stol(name));
    if (pid == self) continue;
    std::string cmdline = internal::ReadFile("/proc/" + name + "/cmdline");
    for (char& c : cmdline) {
      if (c == '\0') c = ' ';
    }
    if (cmdline.find(cmdline_substring) != std::string::npos && ProcessAlive(pid)) {
      pids.push_back(pid);
    }
  }
  return pids;
}

std::vector<pid_t> QemusOf(const std::string& run_dir) {
  return ProcessesMatching("-name hull:" + run_dir + " ");
}

pid_t ParentPid(pid_t pid) {
  const std::string stat = internal::ReadFile("/proc/" + std::to_string(pid) + "/stat");
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return -1;
  std::istringstream rest(stat.substr(paren + 2));
  std::string state;
  pid_t ppid = -1;
  rest >> state >> ppid;
  return ppid;
}

std::vector<pid_t> ProcessesNamed(const std::string& comm) {
  std::vector<pid_t> pids;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(name));
    if (internal::ReadFile("/proc/" + name + "/comm") == comm + "\n" && ProcessAlive(pid)) {
      pids.push_back(pid);
    }
  }
  return pids;
}

std::vector<pid_t> ServerAndSpawner(pid_t server) {
  std::vector<pid_t> out = {server};
  const std::string self = std::to_string(server);
  std::istringstream children(internal::ReadFile("/proc/" + self + "/task/" + self + "/children"));
  for (pid_t child; children >> child;) {
    std::string comm = internal::ReadFile("/proc/" + std::to_string(child) + "/comm");
    if (comm == "hull-spawner\n") out.push_back(child);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> SocketsUnder(const std::string& dir) {
  std::vector<std::string> sockets;
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code type_ec;
    if (fs::is_socket(it->symlink_status(type_ec))) sockets.push_back(it->path());
  }
  return sockets;
}

std::vector<std::string> EntriesIn(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> NamedPipesOpenIn(const std::vector<pid_t>& pids) {
  std::set<std::string> fifos;
  for (pid_t pid : pids) {
    std::error_code ec;
    for (const auto& fd : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
      std::error_code link_ec;
      fs::path target = fs::read_symlink(fd.path(), link_ec);
      struct stat st;
      if (!link_ec && target.is_absolute() && ::stat(target.c_str(), &st) == 0 &&
          S_ISFIFO(st.st_mode)) {
        fifos.insert(target);
      }
    }
  }
  return {fifos.begin(), fifos.end()};
}

std::vector<int> OpenFds(pid_t pid) {
  std::vector<int> fds;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
    fds.push_back(std::stoi(entry.path().filename()));
  }
  return fds;
}

SharedMount::SharedMount(std::string path) : path_(std::move(path)) {
  if (::mount(path_.c_str(), path_.c_str(), nullptr, MS_BIND, nullptr) != 0) {
    error_ = "bind mount " + path_ + ": " + std::strerror(errno);
    return;
  }
  mounted_ = true;
  if (::mount(nullptr, path_.c_str(), nullptr, MS_SHARED | MS_REC, nullptr) != 0) {
    error_ = "make " + path_ + " shared: " + std::strerror(errno);
  }
}

SharedMount::~SharedMount() {
  if (mounted_) ::umount2(path_.c_str(), MNT_DETACH);
}

bool WaitUntil(const std::function<bool()>& condition, std::chrono::milliseconds timeout,
               std::chrono::milliseconds interval) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (condition()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return condition();
    std::this_thread::sleep_for(interval);
  }
}

}  // namespace hull::itest
