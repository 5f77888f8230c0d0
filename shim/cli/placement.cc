#include "shim/cli/placement.h"

#include <sys/prctl.h>

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

Status CreateSchedCoreCookie() {
  if (::prctl(PR_SCHED_CORE, PR_SCHED_CORE_CREATE, 0, PR_SCHED_CORE_SCOPE_PROCESS_GROUP, 0) == 0) {
    return Status::Ok();
  }
  if (errno == EINVAL || errno == ENODEV) return Status::Ok();
  return ErrnoError("prctl PR_SCHED_CORE_CREATE for", "the shim's process group");
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
