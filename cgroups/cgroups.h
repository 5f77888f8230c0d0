// cgroups: where a process's cgroups are, what they cost (the Stats metrics
// containerd decodes) and when they run out of memory. Every path is read
// under Roots (the proc and cgroupfs mount points), so tests point the module
// at a temporary tree laid out like /sys/fs/cgroup. Reads of cgroupfs files
// are synchronous (the files live in kernel memory and never wait on I/O);
// OOM watches run on the EventLoop. Loop thread only; no global state.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/event_loop.h"
#include "base/status.h"
#include "google/protobuf/any.pb.h"
#include "io/containerd/cgroups/v1/metrics.pb.h"
#include "io/containerd/cgroups/v2/metrics.pb.h"

namespace hull::cgroups {

namespace v1 = ::io::containerd::cgroups::v1;
namespace v2 = ::io::containerd::cgroups::v2;

// The Any type_urls containerd and CRI decode from a Stats reply: bare names,
// no "type.googleapis.com/" prefix.
inline constexpr std::string_view kV1MetricsTypeUrl = "io.containerd.cgroups.v1.Metrics";
inline constexpr std::string_view kV2MetricsTypeUrl = "io.containerd.cgroups.v2.Metrics";

// Where the host's proc and cgroup filesystems are mounted.
struct Roots {
  std::filesystem::path proc = "/proc";
  std::filesystem::path cgroupfs = "/sys/fs/cgroup";
};

enum class Mode {
  kLegacy,   // v1 hierarchies only
  kHybrid,   // v1 hierarchies plus a cgroup2 mount (usually <root>/unified) without controllers
  kUnified,  // cgroup2 mounted at the root
};
std::string_view ModeName(Mode mode);

// One cgroup filesystem mount under Roots::cgroupfs, from mountinfo.
struct Hierarchy {
  // v1 controllers attached to it ("cpu", "cpuacct", "name=systemd"); empty
  // for cgroup2.
  std::vector<std::string> controllers;
  std::filesystem::path mount_point;
  // The cgroup the mount shows at its mount point ("/" on a host; deeper
  // inside a cgroup namespace). Paths from /proc/<pid>/cgroup are relative to
  // the namespace root, so this prefix is stripped from them.
  std::string root = "/";
};

// What is mounted where, read from <proc>/self/mountinfo: the mounts of type
// cgroup/cgroup2 at or below Roots::cgroupfs.
struct Host {
  Mode mode = Mode::kUnified;
  std::vector<Hierarchy> v1;         // empty in unified mode
  std::optional<Hierarchy> unified;  // the cgroup2 mount, if any

  // The v1 hierarchy that has `controller`, or null.
  const Hierarchy* FindV1(std::string_view controller) const;
};
Result<Host> DetectHost(const Roots& roots = {});

// The contents of /proc/<pid>/cgroup. Every path is absolute and has no "."
// or ".." component (the parser rejects them).
struct ProcessCgroups {
  // v1 controller -> cgroup path; a co-mounted "cpu,cpuacct" line gives both.
  std::map<std::string, std::string, std::less<>> v1;
  std::optional<std::string> unified;  // the "0::<path>" line
};
Result<ProcessCgroups> ParseProcCgroup(std::string_view content);
Result<ProcessCgroups> ReadProcessCgroups(pid_t pid, const Roots& roots = {});

// One cgroup on this host: a directory of the unified tree (v2), or one
// directory per v1 hierarchy. A Manager is a small value holding locations;
// every call opens the directories afresh, walking each path component with
// O_NOFOLLOW under its mount point, so nothing inside the cgroup tree can
// redirect a read or write elsewhere. Resolve it while the process lives (at
// Start) and keep it: after the process is reaped /proc/<pid>/cgroup is gone.
class Manager {
 public:
  // The cgroups `pid` is in now.
  static Result<Manager> ForPid(pid_t pid, const Roots& roots = {});
  // The cgroup at `path` (absolute, as in /proc/<pid>/cgroup): on v1, that
  // path in every mounted hierarchy.
  static Result<Manager> ForPath(std::string_view path, const Roots& roots = {});

  Mode mode() const { return mode_; }
  const Roots& roots() const { return roots_; }

  // The directory holding `controller`'s files ("memory", "cpuacct"); the
  // controller is ignored in unified mode. NotFound if this cgroup has none.
  Result<std::filesystem::path> Dir(std::string_view controller) const;

  // The Stats payload: v1 Metrics in legacy and hybrid mode, v2 in unified
  // mode, packed in an Any with type_url kV1MetricsTypeUrl/kV2MetricsTypeUrl.
  // Files the kernel does not provide are skipped; NotFound if the cgroup
  // does not exist.
  Result<google::protobuf::Any> Metrics() const;
  Result<v1::Metrics> MetricsV1() const;  // FailedPrecondition in unified mode
  Result<v2::Metrics> MetricsV2() const;  // FailedPrecondition unless unified

  // Processes OOM-killed in this cgroup so far: `oom_kill` of
  // memory.oom_control (v1, Linux 4.13+) or memory.events (v2). Unimplemented
  // if the kernel does not count them.
  Result<uint64_t> OomKillCount() const;

  // Calls `on_oom` on `loop` each time the OOM killer has killed in this
  // cgroup since the last call (several kills between two wake-ups give one
  // call). v1: an eventfd registered on memory.oom_control through
  // cgroup.event_control; the kernel signals it before it picks a victim, so
  // the watch confirms the kill on the oom_kill counter, re-reading for up to
  // about a second (kernels without the counter: every notification counts).
  // v2: inotify on memory.events, comparing oom_kill. The handle owns every
  // descriptor of the watch; dropping it (also from inside `on_oom`) ends it.
  // When the cgroup is removed the watch goes quiet.
  Result<EventHandle> WatchOom(EventLoop& loop, std::function<void()> on_oom) const;

 private:
  // A cgroup directory: mount point + path below it (relative, validated).
  struct Location {
    std::filesystem::path mount_point;
    std::string relative;
  };

  Manager(Roots roots, Mode mode) : roots_(std::move(roots)), mode_(mode) {}
  Result<Location> Find(std::string_view controller) const;

  Roots roots_;
  Mode mode_;
  std::map<std::string, Location, std::less<>> v1_;  // controller -> directory
  std::optional<Location> unified_;
};

// Shorthands for the shim: Manager::ForPid(pid, roots) then the call.
Result<google::protobuf::Any> MetricsForPid(pid_t pid, const Roots& roots = {});
Result<EventHandle> WatchOom(EventLoop& loop, pid_t pid, std::function<void()> on_oom,
                             const Roots& roots = {});
Result<uint64_t> OomKillCount(pid_t pid, const Roots& roots = {});

}  // namespace hull::cgroups
