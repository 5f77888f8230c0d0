// MoveProcess: placing a process in a cgroup on every hierarchy that has it.
#include <string>

#include "cgroups/cgroup_dir_internal.h"
#include "cgroups/cgroups.h"
#include "cgroups/parse_internal.h"

namespace hull::cgroups {

Status MoveProcess(pid_t pid, std::string_view path, const Roots& roots) {
  std::string absolute = path.starts_with('/') ? std::string(path) : "/" + std::string(path);
  HULL_RETURN_IF_ERROR(internal::ValidateCgroupPath(absolute));
  HULL_ASSIGN_OR_RETURN(Host host, DetectHost(roots));
  std::vector<const Hierarchy*> hierarchies;
  for (const Hierarchy& h : host.v1) hierarchies.push_back(&h);
  if (host.unified) hierarchies.push_back(&*host.unified);

  const std::string pid_text = std::to_string(pid);
  bool found = false;
  for (const Hierarchy* h : hierarchies) {
    Result<internal::CgroupDir> dir = internal::CgroupDir::Open(h->mount_point, absolute);
    if (!dir && dir.error().code() == Code::kNotFound) continue;
    if (!dir) return dir.error().WithContext("move process " + pid_text + " to cgroup " + absolute);
    HULL_RETURN_IF_ERROR_CTX(dir->Write("cgroup.procs", pid_text),
                             "move process " + pid_text + " to cgroup " + absolute);
    found = true;
  }
  if (!found) {
    return NotFoundError("cgroup " + absolute + ": in no hierarchy mounted under " +
                         roots.cgroupfs.string());
  }
  return Status::Ok();
}

}  // namespace hull::cgroups
