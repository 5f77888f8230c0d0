// cgroups: where a process's cgroups are, what they cost (the Stats metrics
// containerd decodes), when they run out of memory, and (cgroup v2) making
// them: create with limits, freeze, kill, remove. Every path is read under
// Roots (the proc and cgroupfs mount points), so tests point the module at a
// temporary tree laid out like /sys/fs/cgroup. Reads and writes of cgroupfs
// files are synchronous (kernel memory, no I/O waits); waiting for the kernel
// (frozen, emptied) is bounded, or runs on the EventLoop (the *Async calls,
// OOM watches). Loop thread only; no global state.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json_fwd.hpp>
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

// Moves `pid` into the cgroup `path` ("/system.slice/shims"; a relative path
// counts from the root) on every hierarchy DetectHost finds (each v1 mount
// and the cgroup2 one) where that directory exists, by writing cgroup.procs
// there: how containerd's runc shim places itself in its shim_cgroup, and
// unlike Manager::AddProcess it works on v1 and hybrid hosts too. The path
// is taken below each mount point as it stands (not mapped through the
// mount's root as Manager::ForPath does) and opened one component at a time
// with O_NOFOLLOW. NotFound if no hierarchy has the directory,
// InvalidArgument for a "." or ".." component; a failed write stops at once
// (hierarchies written before it keep the process).
Status MoveProcess(pid_t pid, std::string_view path, const Roots& roots = {});

// ---- cgroup v2 limits ------------------------------------------------------

// "max": no limit, in every limit field below.
inline constexpr uint64_t kUnlimited = std::numeric_limits<uint64_t>::max();

// cpu.max: `quota` microseconds of CPU per `period` (kUnlimited quota: "max").
struct CpuMax {
  uint64_t quota = kUnlimited;
  uint64_t period = 100000;
  friend bool operator==(const CpuMax&, const CpuMax&) = default;
};

// One line of io.max: "<major>:<minor> <key>=<value>", key rbps, wbps, riops
// or wiops.
struct IoMax {
  uint64_t major = 0;
  uint64_t minor = 0;
  std::string key;
  uint64_t value = kUnlimited;
  friend bool operator==(const IoMax&, const IoMax&) = default;
};

// A per-device blkio weight (10..1000, OCI's scale).
struct IoDeviceWeight {
  uint64_t major = 0;
  uint64_t minor = 0;
  uint64_t weight = 0;
  friend bool operator==(const IoDeviceWeight&, const IoDeviceWeight&) = default;
};

// rdma.max for one device.
struct RdmaMax {
  std::string device;
  std::optional<uint32_t> hca_handles;  // nullopt: max
  std::optional<uint32_t> hca_objects;
  friend bool operator==(const RdmaMax&, const RdmaMax&) = default;
};

// What a cgroup v2 directory is limited to, in the kernel's units. Unset
// fields are left as they are. Built from OCI LinuxResources by
// ParseResources, or directly (the pod's size).
struct Resources {
  std::optional<uint64_t> cpu_weight;  // cpu.weight, 1..10000
  std::optional<CpuMax> cpu_max;
  std::optional<uint64_t> cpu_max_burst;  // cpu.max.burst, microseconds (Linux 5.14+)
  std::optional<int64_t> cpu_idle;        // cpu.idle (Linux 5.15+)
  std::optional<std::string> cpuset_cpus;
  std::optional<std::string> cpuset_mems;

  std::optional<uint64_t> memory_min;
  std::optional<uint64_t> memory_low;
  std::optional<uint64_t> memory_high;
  std::optional<uint64_t> memory_max;
  std::optional<uint64_t> memory_swap_max;

  std::optional<uint64_t> pids_max;

  // OCI's blkio weight (10..1000): io.bfq.weight as is where the kernel has
  // BFQ, else io.weight on its 1..10000 scale (IoWeightFromBlkio).
  std::optional<uint64_t> blkio_weight;
  std::vector<IoDeviceWeight> blkio_weight_devices;
  std::vector<IoMax> io_max;

  // Page size label ("2MB", "1GB") -> hugetlb.<label>.max bytes.
  std::map<std::string, uint64_t, std::less<>> hugetlb_max;
  std::vector<RdmaMax> rdma_max;

  // OCI's linux.resources.unified: file name -> content, written last, so it
  // overrides the fields above.
  std::map<std::string, std::string, std::less<>> unified;

  // The controllers these limits need ("cpu", "memory", ...).
  std::vector<std::string> Controllers() const;
  friend bool operator==(const Resources&, const Resources&) = default;
};

// runc's conversions from the cgroup v1 scales OCI and CRI speak.
// cpu.weight = 1 + ((shares - 2) * 9999) / 262142, shares clamped to the
// kernel's v1 range 2..262144 (so weight is 1..10000); 0 shares: unset.
uint64_t CpuWeightFromShares(uint64_t shares);
// io.weight = 1 + (weight - 10) * 9999 / 990, weight clamped to 10..1000.
uint64_t IoWeightFromBlkio(uint64_t blkio_weight);
// memory.swap.max from OCI's memory.swap (memory + swap) and memory.limit,
// both -1 for unlimited, 0 for unset: swap - limit. nullopt: leave unset.
// InvalidArgument for a swap limit without a memory limit, or below it.
Result<std::optional<uint64_t>> SwapMaxFromOci(int64_t swap, int64_t limit);

// OCI's linux.resources object -> Resources. Wrong types and impossible
// values are InvalidArgument naming the field ("memory.swap: ..."); fields
// cgroup v2 has no file for (cpu.realtime*, memory.kernel*, swappiness,
// disableOOMKiller, network, devices: runc puts those in an eBPF program) are
// ignored. Never throws.
Result<Resources> ParseResources(const nlohmann::json& linux_resources);
Result<Resources> ParseResources(const nlohmann::ordered_json& linux_resources);
Result<Resources> ParseResources(std::string_view linux_resources_json);

// ---- cgroup paths ----------------------------------------------------------

// A systemd slice name -> its cgroupfs path, as systemd (and runc) nest
// slices: "a-b-c.slice" -> "/a.slice/a-b.slice/a-b-c.slice", "-.slice" -> "/".
// InvalidArgument if it does not end in ".slice", has a '/' or an empty
// dash-separated part.
Result<std::string> ExpandSlice(std::string_view slice);

// OCI linux.cgroupsPath -> the absolute cgroup path. With the systemd driver
// it is "slice:prefix:name": the scope "<prefix>-<name>.scope" (or
// "<name>.scope" without a prefix) in the expanded slice (default
// "system.slice"), or, when name ends in ".slice", that name itself there,
// as runc joins them: "system.slice:docker:abc" ->
// "/system.slice/docker-abc.scope", "a-b.slice:p:c" -> "/a.slice/a-b.slice/p-c.scope".
// Otherwise the path as given, "/" added in front of a relative one.
// InvalidArgument for a malformed path (wrong number of parts, '/' in a
// part, "." or ".." components).
Result<std::string> CgroupPathFromOci(std::string_view cgroups_path, bool systemd);

// cgroup.events of a v2 cgroup.
struct CgroupEvents {
  bool populated = false;  // processes in it or below
  bool frozen = false;
};

// An asynchronous operation on a cgroup in flight on the EventLoop
// (Manager::*Async). Its `done` callback runs once, on the loop, never inside
// the call that started it. Dropping the AsyncOp cancels: `done` is then never
// called (dropping it inside `done` is fine).
class AsyncOp {
 public:
  struct State;
  AsyncOp() = default;
  explicit AsyncOp(std::shared_ptr<State> state) : state_(std::move(state)) {}
  bool active() const { return state_ != nullptr; }
  void Reset() { state_.reset(); }

 private:
  std::shared_ptr<State> state_;
};

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
  // path in every mounted hierarchy. It need not exist (Create makes it).
  static Result<Manager> ForPath(std::string_view path, const Roots& roots = {});
  // The cgroup at `path` below a cgroup2 mount at `cgroupfs`, without
  // reading mountinfo: for a caller that knows the host is unified.
  static Result<Manager> Unified(std::string_view path,
                                 const std::filesystem::path& cgroupfs = "/sys/fs/cgroup");

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

  // ---- cgroup v2 only (FailedPrecondition on other hosts) ----
  //
  // Removal and freezing wait for the kernel: the synchronous calls poll
  // cgroup.events up to `timeout` (DeadlineExceeded after; meant for paths
  // off the loop's hot path, such as delete), the *Async ones watch it on
  // the loop.

  // The absolute cgroup path ("/kubepods/pod1").
  const std::string& path() const { return path_; }

  // Makes the directory and any missing parents, enabling in each ancestor's
  // cgroup.subtree_control every controller it has (as runc does), then
  // applies `resources`. FailedPrecondition if a controller `resources`
  // needs is not available to the new cgroup. An existing cgroup is fine.
  Status Create(const Resources& resources = {}) const;
  // Writes the limits (Update). Errors name the file.
  Status Apply(const Resources& resources) const;
  // Moves `pid` into this cgroup (cgroup.procs).
  Status AddProcess(pid_t pid) const;
  // The processes in this cgroup (not below it).
  Result<std::vector<pid_t>> Processes() const;
  Result<CgroupEvents> Events() const;
  // SIGKILL to everything in this cgroup and below: cgroup.kill (Linux
  // 5.14+), else a signal to each process listed in the subtree's
  // cgroup.procs. Returns without waiting.
  Status Kill() const;

  // Freezes (cgroup.freeze 1) and waits until cgroup.events says "frozen 1";
  // Thaw the reverse. Unimplemented without cgroup.freeze (Linux < 5.2).
  Status Freeze(std::chrono::milliseconds timeout) const;
  Status Thaw(std::chrono::milliseconds timeout) const;
  // Kills everything in the cgroup and below, waits until cgroup.events says
  // "populated 0", then removes it, children first. A cgroup that does not
  // exist is removed already (OK). Not the root of the mount.
  Status Remove(std::chrono::milliseconds timeout) const;

  using Done = std::function<void(Status)>;
  Result<AsyncOp> FreezeAsync(EventLoop& loop, std::chrono::milliseconds timeout, Done done) const;
  Result<AsyncOp> ThawAsync(EventLoop& loop, std::chrono::milliseconds timeout, Done done) const;
  Result<AsyncOp> RemoveAsync(EventLoop& loop, std::chrono::milliseconds timeout, Done done) const;

  // ---- any host ----

  // Waits until no process is left in this cgroup or below it (what is left
  // after a kill), then `done(OK)`; DeadlineExceeded after `timeout`. A cgroup
  // that does not exist is empty. Unified: "populated 0" in cgroup.events,
  // watched with inotify (the kernel's notification for the file), re-read
  // every 50 ms as well. v1 and hybrid: the cgroup.procs files of
  // ProcessesDir() and every cgroup below it, re-read every 50 ms (v1 has no
  // notification of a cgroup emptying to a process that is not its
  // release agent). Zombies are not listed: a process counts as gone once
  // it has exited, before it is reaped.
  Result<AsyncOp> WaitEmptyAsync(EventLoop& loop, std::chrono::milliseconds timeout,
                                 Done done) const;
  // Where WaitEmptyAsync looks: the cgroup2 directory in unified mode, else
  // this cgroup in the first of the v1 hierarchies pids, freezer, memory,
  // devices, cpu (any other controller's after them; never a name=
  // hierarchy, which runtimes need not join). In hybrid mode the cgroup2
  // directory is not used: runtimes driving v1 controllers (runc's cgroupfs
  // driver) leave the container in the caller's cgroup2 directory. NotFound
  // if there is none.
  Result<std::filesystem::path> ProcessesDir() const;

 private:
  // A cgroup directory: mount point + path below it (relative, validated).
  struct Location {
    std::filesystem::path mount_point;
    std::string relative;
  };

  Manager(Roots roots, Mode mode) : roots_(std::move(roots)), mode_(mode) {}
  Result<Location> Find(std::string_view controller) const;
  // The v2 location, or FailedPrecondition naming `what` was asked.
  Result<Location> UnifiedLocation(std::string_view what) const;
  Result<Location> ProcessesLocation() const;
  Result<AsyncOp> FreezeAsyncImpl(EventLoop& loop, bool freeze, std::chrono::milliseconds timeout,
                                  Done done) const;

  Roots roots_;
  Mode mode_;
  std::string path_;
  std::map<std::string, Location, std::less<>> v1_;  // controller -> directory
  std::optional<Location> unified_;
};

// Shorthands for the shim: Manager::ForPid(pid, roots) then the call.
Result<google::protobuf::Any> MetricsForPid(pid_t pid, const Roots& roots = {});
Result<EventHandle> WatchOom(EventLoop& loop, pid_t pid, std::function<void()> on_oom,
                             const Roots& roots = {});
Result<uint64_t> OomKillCount(pid_t pid, const Roots& roots = {});

}  // namespace hull::cgroups
