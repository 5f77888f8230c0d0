// The cgroup v2 manager: create with limits, processes, kill, freeze and
// remove, with synchronous bounded waits on cgroup.events. The loop-driven
// variants are in async_ops.cc; both share the steps in v2_internal.h.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <functional>
#include <limits>
#include <string>
#include <thread>

#include "cgroups/cgroup_dir_internal.h"
#include "cgroups/cgroups.h"
#include "cgroups/parse_internal.h"
#include "cgroups/resources_internal.h"
#include "cgroups/v2_internal.h"

namespace hull::cgroups {

using internal::CgroupDir;
using internal::Deadline;
using internal::EventWait;

namespace internal {
namespace {

constexpr std::string_view kEvents = "cgroup.events";

bool IsNotFound(const Status& s) {
  return s.code() == Code::kNotFound;
}

Result<std::vector<pid_t>> ReadProcs(const CgroupDir& dir) {
  HULL_ASSIGN_OR_RETURN(std::string text, dir.Read("cgroup.procs"));
  std::vector<pid_t> pids;
  for (std::string_view field : Fields(text)) {
    auto pid = ParseUint(field);
    if (!pid || *pid == 0 || *pid > static_cast<uint64_t>(std::numeric_limits<pid_t>::max())) {
      return InternalError("parse " + (dir.path() / "cgroup.procs").string() + ": \"" +
                           std::string(field) + "\"");
    }
    pids.push_back(static_cast<pid_t>(*pid));
  }
  return pids;
}

// Whether the cgroup.procs of `dir` or any cgroup below lists a process.
Result<bool> SubtreeHasProcesses(const CgroupDir& dir) {
  Result<std::vector<pid_t>> pids = ReadProcs(dir);
  if (pids && !pids->empty()) return true;
  if (!pids && !IsNotFound(pids.error())) return pids.error();
  HULL_ASSIGN_OR_RETURN(std::vector<std::string> children, dir.ListDirs());
  for (const std::string& name : children) {
    Result<CgroupDir> child = dir.OpenChild(name);
    if (!child) {
      if (IsNotFound(child.error())) continue;  // removed meanwhile
      return child.error();
    }
    HULL_ASSIGN_OR_RETURN(bool busy, SubtreeHasProcesses(*child));
    if (busy) return true;
  }
  return false;
}

// The controllers listed in a space-separated cgroup file.
Result<std::vector<std::string>> ReadList(const CgroupDir& dir, std::string_view file) {
  HULL_ASSIGN_OR_RETURN(std::string text, dir.Read(file));
  std::vector<std::string> out;
  for (std::string_view field : Fields(text)) out.emplace_back(field);
  return out;
}

// Turns on in `dir`'s cgroup.subtree_control every controller `dir` has and
// has not enabled yet, all at once, else one by one. A controller the kernel
// refuses here (an ancestor with processes of its own, a realtime task for
// cpu) stays off: Create checks afterwards that what it needs arrived.
void EnableControllers(const CgroupDir& dir) {
  Result<std::vector<std::string>> available = ReadList(dir, "cgroup.controllers");
  Result<std::vector<std::string>> enabled = ReadList(dir, "cgroup.subtree_control");
  if (!available || !enabled) return;
  std::vector<std::string> missing;
  for (const std::string& c : *available) {
    if (std::find(enabled->begin(), enabled->end(), c) == enabled->end()) missing.push_back(c);
  }
  if (missing.empty()) return;
  std::string all;
  for (const std::string& c : missing) all += (all.empty() ? "+" : " +") + c;
  if (dir.Write("cgroup.subtree_control", all).ok()) return;
  for (const std::string& c : missing) dir.Write("cgroup.subtree_control", "+" + c).IgnoreError();
}

}  // namespace

Result<CgroupEvents> ReadEvents(const CgroupDir& dir) {
  HULL_ASSIGN_OR_RETURN(std::string text, dir.Read(kEvents));
  FlatKeyed keyed = ParseFlatKeyed(text);
  CgroupEvents events;
  events.populated = Lookup(keyed, "populated").value_or(0) != 0;
  events.frozen = Lookup(keyed, "frozen").value_or(0) != 0;
  return events;
}

Result<bool> EventHolds(const CgroupDir& dir, const EventWait& wait) {
  Result<std::string> text = dir.Read(kEvents);
  if (!text) {
    if (!IsNotFound(text.error())) return text.error();
    if (wait.key != "populated") {
      return UnimplementedError("no " + (dir.path() / kEvents).string());
    }
    HULL_ASSIGN_OR_RETURN(bool busy, SubtreeHasProcesses(dir));
    return busy == wait.value;
  }
  std::optional<uint64_t> value = Lookup(ParseFlatKeyed(*text), wait.key);
  if (!value) {
    return UnimplementedError("no \"" + std::string(wait.key) + "\" in " +
                              (dir.path() / kEvents).string());
  }
  return (*value != 0) == wait.value;
}

Result<bool> WriteKill(const CgroupDir& dir) {
  Status s = dir.Write("cgroup.kill", "1");
  if (s.ok()) return true;
  if (IsNotFound(s)) return false;
  return s;
}

Status KillListed(const CgroupDir& dir) {
  Result<std::vector<pid_t>> pids = ReadProcs(dir);
  if (!pids) return IsNotFound(pids.error()) ? Status::Ok() : pids.error();
  for (pid_t pid : *pids) {
    if (::kill(pid, SIGKILL) != 0 && errno != ESRCH) {
      return ErrnoError("kill", "process " + std::to_string(pid) + " of " + dir.path().string());
    }
  }
  HULL_ASSIGN_OR_RETURN(std::vector<std::string> children, dir.ListDirs());
  for (const std::string& name : children) {
    Result<CgroupDir> child = dir.OpenChild(name);
    if (!child) {
      if (IsNotFound(child.error())) continue;
      return child.error();
    }
    HULL_RETURN_IF_ERROR(KillListed(*child));
  }
  return Status::Ok();
}

Status WriteFreeze(const CgroupDir& dir, bool frozen) {
  Status s = dir.Write("cgroup.freeze", frozen ? "1" : "0");
  if (IsNotFound(s)) {
    return UnimplementedError("no " + (dir.path() / "cgroup.freeze").string() +
                              " (the freezer needs Linux 5.2)");
  }
  return s;
}

Status RemoveTree(const CgroupDir& parent, const std::string& name, Deadline deadline) {
  Result<CgroupDir> dir = parent.OpenChild(name);
  if (!dir) return IsNotFound(dir.error()) ? Status::Ok() : dir.error();
  HULL_ASSIGN_OR_RETURN(std::vector<std::string> children, dir->ListDirs());
  for (const std::string& child : children) {
    HULL_RETURN_IF_ERROR(RemoveTree(*dir, child, deadline));
  }
  while (true) {
    Status s = parent.RemoveChild(name);
    if (s.ok() || IsNotFound(s)) return Status::Ok();
    // EBUSY for a moment after the last task left is possible; anything
    // else (a file in a fake tree: ENOTEMPTY) ends at the deadline too.
    if (s.code() != Code::kFailedPrecondition || std::chrono::steady_clock::now() >= deadline) {
      return s;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

Result<Opened> OpenWithParent(const std::filesystem::path& mount_point, std::string_view relative) {
  std::vector<std::string_view> parts = Split(relative, '/');
  if (parts.empty()) {
    HULL_ASSIGN_OR_RETURN(CgroupDir root, CgroupDir::Open(mount_point, ""));
    return Opened{.parent = std::nullopt, .name = "", .dir = std::move(root)};
  }
  std::string parent_path;
  for (size_t i = 0; i + 1 < parts.size(); ++i) parent_path += "/" + std::string(parts[i]);
  HULL_ASSIGN_OR_RETURN(CgroupDir parent, CgroupDir::Open(mount_point, parent_path));
  std::string name(parts.back());
  HULL_ASSIGN_OR_RETURN(CgroupDir dir, parent.OpenChild(name));
  return Opened{.parent = std::move(parent), .name = std::move(name), .dir = std::move(dir)};
}

}  // namespace internal

namespace {

// Polls cgroup.events until `wait` holds or `deadline` passes. The kernel
// signals a change of the file with POLLPRI; a plain file (the unit tests)
// never does, so every wait is also capped at kRecheckInterval. `each_round`
// runs before every re-check (the kill fallback uses it to catch forks).
Status WaitFor(const CgroupDir& dir, const EventWait& wait, Deadline deadline,
               const std::function<Status()>& each_round = nullptr) {
  Result<UniqueFd> fd = dir.OpenFile("cgroup.events", O_RDONLY);
  while (true) {
    HULL_ASSIGN_OR_RETURN(bool holds, internal::EventHolds(dir, wait));
    if (holds) return Status::Ok();
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      return DeadlineExceededError(dir.path().string() + ": still " +
                                   std::string(wait.value ? "not " : "") + std::string(wait.key) +
                                   " at the deadline");
    }
    if (each_round) HULL_RETURN_IF_ERROR(each_round());
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    int ms = static_cast<int>(std::min(left, internal::kRecheckInterval).count()) + 1;
    if (fd) {
      // Reading the file arms the notification; poll then waits for the next.
      char buf[256];
      (void)::lseek(fd->get(), 0, SEEK_SET);
      while (::read(fd->get(), buf, sizeof buf) > 0) {
      }
      pollfd p{.fd = fd->get(), .events = POLLPRI, .revents = 0};
      (void)::poll(&p, 1, ms);
    } else {
      ::poll(nullptr, 0, ms);
    }
  }
}

Deadline DeadlineAfter(std::chrono::milliseconds timeout) {
  return std::chrono::steady_clock::now() + timeout;
}

}  // namespace

Result<Manager> Manager::Unified(std::string_view path, const std::filesystem::path& cgroupfs) {
  HULL_RETURN_IF_ERROR(internal::ValidateCgroupPath(path));
  Roots roots;
  roots.cgroupfs = cgroupfs;
  Manager m(roots, Mode::kUnified);
  m.path_ = std::string(path);
  m.unified_ = Location{cgroupfs, std::string(path)};
  return m;
}

Result<Manager::Location> Manager::UnifiedLocation(std::string_view what) const {
  if (mode_ != Mode::kUnified || !unified_) {
    return FailedPreconditionError(std::string(what) + " needs cgroup v2; this host is " +
                                   std::string(ModeName(mode_)));
  }
  return *unified_;
}

Status Manager::Create(const Resources& resources) const {
  HULL_ASSIGN_OR_RETURN(Location loc, UnifiedLocation("create cgroup"));
  const std::string context = "create cgroup " + path_;
  Result<CgroupDir> dir = CgroupDir::Open(loc.mount_point, "");
  if (!dir) return dir.error().WithContext(context);
  for (std::string_view component : internal::Split(loc.relative, '/')) {
    internal::EnableControllers(*dir);
    Status made = dir->MakeChild(component);
    if (!made.ok() && made.code() != Code::kAlreadyExists) return made.WithContext(context);
    dir = dir->OpenChild(component);
    if (!dir) return dir.error().WithContext(context);
  }
  std::vector<std::string> needed = resources.Controllers();
  if (needed.empty()) return Status::Ok();
  Result<std::vector<std::string>> available = internal::ReadList(*dir, "cgroup.controllers");
  if (!available) return available.error().WithContext(context);
  for (const std::string& c : needed) {
    if (std::find(available->begin(), available->end(), c) == available->end()) {
      return FailedPreconditionError(context + ": controller " + c +
                                     " is not available (not enabled in the parent)");
    }
  }
  return Apply(resources);
}

Status Manager::Apply(const Resources& resources) const {
  HULL_ASSIGN_OR_RETURN(Location loc, UnifiedLocation("set cgroup limits"));
  const std::string context = "set limits of cgroup " + path_;
  Result<CgroupDir> dir = CgroupDir::Open(loc.mount_point, loc.relative);
  if (!dir) return dir.error().WithContext(context);
  bool bfq = false;
  if (resources.blkio_weight || !resources.blkio_weight_devices.empty()) {
    bfq = dir->OpenFile("io.bfq.weight", O_RDONLY).has_value();
  }
  for (const internal::FileWrite& w : internal::ResourceWrites(resources, bfq)) {
    Status s = dir->Write(w.file, w.value);
    // runc's rule: without swap accounting, "no swap limit" and "no swap"
    // are already true.
    if (!s.ok() && s.code() == Code::kNotFound && w.file == "memory.swap.max" &&
        (w.value == "max" || w.value == "0")) {
      continue;
    }
    if (!s.ok()) return s.WithContext(context);
  }
  return Status::Ok();
}

Status Manager::AddProcess(pid_t pid) const {
  HULL_ASSIGN_OR_RETURN(Location loc, UnifiedLocation("add a process to a cgroup"));
  HULL_ASSIGN_OR_RETURN(CgroupDir dir, CgroupDir::Open(loc.mount_point, loc.relative));
  return dir.Write("cgroup.procs", std::to_string(pid));
}

Result<std::vector<pid_t>> Manager::Processes() const {
  HULL_ASSIGN_OR_RETURN(Location loc, UnifiedLocation("list a cgroup's processes"));
  HULL_ASSIGN_OR_RETURN(CgroupDir dir, CgroupDir::Open(loc.mount_point, loc.relative));
  return internal::ReadProcs(dir);
}

Result<CgroupEvents> Manager::Events() const {
  HULL_ASSIGN_OR_RETURN(Location loc, UnifiedLocation("read cgroup.events"));
  HULL_ASSIGN_OR_RETURN(CgroupDir dir, CgroupDir::Open(loc.mount_point, loc.relative));
  return internal::ReadEvents(dir);
}

Status Manager::Kill() const {
  HULL_ASSIGN_OR_RETURN(Location loc, UnifiedLocation("kill a cgroup"));
  HULL_ASSIGN_OR_RETURN(CgroupDir dir, CgroupDir::Open(loc.mount_point, loc.relative));
  HULL_ASSIGN_OR_RETURN(bool killed, internal::WriteKill(dir));
  if (killed) return Status::Ok();
  return internal::KillListed(dir);
}

Status Manager::Freeze(std::chrono::milliseconds timeout) const {
  HULL_ASSIGN_OR_RETURN(Location loc, UnifiedLocation("freeze a cgroup"));
  const std::string context = "freeze cgroup " + path_;
  Deadline deadline = DeadlineAfter(timeout);
  Result<CgroupDir> dir = CgroupDir::Open(loc.mount_point, loc.relative);
  if (!dir) return dir.error().WithContext(context);
  HULL_RETURN_IF_ERROR_CTX(internal::WriteFreeze(*dir, true), context);
  HULL_RETURN_IF_ERROR_CTX(WaitFor(*dir, {"frozen", true}, deadline), context);
  return Status::Ok();
}

Status Manager::Thaw(std::chrono::milliseconds timeout) const {
  HULL_ASSIGN_OR_RETURN(Location loc, UnifiedLocation("thaw a cgroup"));
  const std::string context = "thaw cgroup " + path_;
  Deadline deadline = DeadlineAfter(timeout);
  Result<CgroupDir> dir = CgroupDir::Open(loc.mount_point, loc.relative);
  if (!dir) return dir.error().WithContext(context);
  HULL_RETURN_IF_ERROR_CTX(internal::WriteFreeze(*dir, false), context);
  HULL_RETURN_IF_ERROR_CTX(WaitFor(*dir, {"frozen", false}, deadline), context);
  return Status::Ok();
}

Status Manager::Remove(std::chrono::milliseconds timeout) const {
  HULL_ASSIGN_OR_RETURN(Location loc, UnifiedLocation("remove a cgroup"));
  const std::string context = "remove cgroup " + path_;
  Deadline deadline = DeadlineAfter(timeout);
  Result<internal::Opened> opened = internal::OpenWithParent(loc.mount_point, loc.relative);
  if (!opened) {
    if (opened.error().code() == Code::kNotFound) return Status::Ok();
    return opened.error().WithContext(context);
  }
  if (!opened->parent) return InvalidArgumentError(context + ": it is the root of the mount");
  Result<bool> killed = internal::WriteKill(opened->dir);
  if (!killed) return killed.error().WithContext(context);
  // Without cgroup.kill, a process may fork between reading cgroup.procs and
  // the signal: kill again on every round until the cgroup is empty.
  std::function<Status()> rekill;
  if (!*killed) {
    rekill = [&] { return internal::KillListed(opened->dir); };
    HULL_RETURN_IF_ERROR_CTX(rekill(), context);
  }
  HULL_RETURN_IF_ERROR_CTX(WaitFor(opened->dir, {"populated", false}, deadline, rekill), context);
  HULL_RETURN_IF_ERROR_CTX(internal::RemoveTree(*opened->parent, opened->name, deadline), context);
  return Status::Ok();
}

}  // namespace hull::cgroups
