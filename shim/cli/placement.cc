#include "shim/cli/placement.h"

#include <sys/prctl.h>
#include <sys/stat.h>

#include <algorithm>
#include <charconv>

#include "base/file_util.h"
#include "shim/cli/fd_io.h"

#ifndef PR_SCHED_CORE
#define PR_SCHED_CORE 62
#define PR_SCHED_CORE_CREATE 1
#endif
#ifndef PR_SCHED_CORE_SCOPE_PROCESS_GROUP
#define PR_SCHED_CORE_SCOPE_PROCESS_GROUP 2
#endif

namespace hull::shim {
namespace {

bool IsDirectory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool HasDotDot(std::string_view path) {
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t end = path.find('/', pos);
    if (end == std::string_view::npos) end = path.size();
    if (path.substr(pos, end - pos) == "..") return true;
    pos = end + 1;
  }
  return false;
}

}  // namespace

Status CreateSchedCoreCookie() {
  if (::prctl(PR_SCHED_CORE, PR_SCHED_CORE_CREATE, 0, PR_SCHED_CORE_SCOPE_PROCESS_GROUP, 0) == 0) {
    return Status::Ok();
  }
  if (errno == EINVAL || errno == ENODEV) return Status::Ok();
  return ErrnoError("prctl PR_SCHED_CORE_CREATE for", "the shim's process group");
}

Status MoveToCgroup(pid_t pid, const std::string& cgroup, std::span<const MountInfo> mounts) {
  if (HasDotDot(cgroup)) return InvalidArgumentError("shim_cgroup " + cgroup + ": contains \"..\"");
  std::string relative = cgroup;
  relative.erase(0, relative.find_first_not_of('/'));
  const std::string pid_text = std::to_string(pid);
  bool found = false;
  for (const MountInfo& m : mounts) {
    if (m.fs_type != "cgroup" && m.fs_type != "cgroup2") continue;
    std::string dir = relative.empty() ? m.mount_point : m.mount_point + "/" + relative;
    if (!IsDirectory(dir)) continue;
    HULL_RETURN_IF_ERROR_CTX(WriteExistingFile(dir + "/cgroup.procs", pid_text),
                             "move shim to cgroup " + cgroup);
    found = true;
  }
  if (!found) return NotFoundError("shim_cgroup " + cgroup + ": not found in any cgroup hierarchy");
  return Status::Ok();
}

Status AdjustOomScore(pid_t child, pid_t parent, const std::string& proc) {
  std::string parent_path = proc + "/" + std::to_string(parent) + "/oom_score_adj";
  HULL_ASSIGN_OR_RETURN(std::string text, ReadFile(parent_path));
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  int score = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), score);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return InternalError(parent_path + ": not a number: \"" + text + "\"");
  }
  score = std::clamp(score + 1, -1000, 1000);
  Status status = WriteExistingFile(proc + "/" + std::to_string(child) + "/oom_score_adj",
                                    std::to_string(score));
  if (status.code() == Code::kPermissionDenied) return Status::Ok();
  return status;
}

}  // namespace hull::shim
