// Steps of the cgroup v2 manager that the synchronous and the loop-driven
// (*Async) operations share. Each is a short run of cgroupfs reads and
// writes; none waits.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "cgroups/cgroup_dir_internal.h"
#include "cgroups/cgroups.h"

namespace hull::cgroups::internal {

using Deadline = std::chrono::steady_clock::time_point;

// How often a wait re-reads cgroup.events even without a notification (the
// kernel notifies; this bounds the cost of a missed one, and lets the
// unit tests' plain files work).
inline constexpr std::chrono::milliseconds kRecheckInterval{50};

// A cgroup.events key to wait for, and its wanted value.
struct EventWait {
  std::string_view key;  // "populated" or "frozen"
  bool value = false;
};

Result<CgroupEvents> ReadEvents(const CgroupDir& dir);

// Whether `wait` holds now. Without cgroup.events, "populated" falls back to
// the subtree's cgroup.procs; "frozen" is Unimplemented.
Result<bool> EventHolds(const CgroupDir& dir, const EventWait& wait);

// cgroup.kill "1"; false if the kernel has no cgroup.kill.
Result<bool> WriteKill(const CgroupDir& dir);
// SIGKILL to every process listed in the cgroup.procs of `dir` and below.
Status KillListed(const CgroupDir& dir);

// cgroup.freeze; Unimplemented if the kernel has none.
Status WriteFreeze(const CgroupDir& dir, bool frozen);

// rmdir of `parent`/`name` and every cgroup below it, deepest first. A
// cgroup that still shows as busy right after emptying is retried until
// `deadline`.
Status RemoveTree(const CgroupDir& parent, const std::string& name, Deadline deadline);

// The open cgroup of a v2 Location and, for removal, its parent and name.
struct Opened {
  std::optional<CgroupDir> parent;  // unset for the mount's root
  std::string name;
  CgroupDir dir;
};
Result<Opened> OpenWithParent(const std::filesystem::path& mount_point, std::string_view relative);

}  // namespace hull::cgroups::internal
