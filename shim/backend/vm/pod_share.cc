#include "shim/backend/vm/pod_share.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/unique_fd.h"
#include "oci/spec.h"
#include "shim/backend/vm/qemu_command.h"
#include "shim/backend/vm/vm_spawner.h"

namespace hull::shim::vm {
namespace {

bool IsBind(const nlohmann::ordered_json& mount) {
  if (mount.value("type", "") == "bind") return true;
  auto options = mount.find("options");
  if (options == mount.end() || !options->is_array()) return false;
  for (const auto& o : *options) {
    if (o.is_string() && (o == "bind" || o == "rbind")) return true;
  }
  return false;
}

// A bind target like its source: a directory, or an empty file.
Status MakeTarget(const std::string& source, const std::string& target) {
  struct stat st;
  if (::stat(source.c_str(), &st) != 0) return ErrnoError("stat", source);
  if (S_ISDIR(st.st_mode)) {
    if (::mkdir(target.c_str(), 0755) != 0 && errno != EEXIST) return ErrnoError("mkdir", target);
    return Status::Ok();
  }
  UniqueFd fd(::open(target.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644));
  if (!fd.valid()) return ErrnoError("create", target);
  return Status::Ok();
}

// The propagation a bind mount asks for beyond private: "" when none.
std::string SharedPropagation(const nlohmann::ordered_json& mount) {
  auto options = mount.find("options");
  if (options == mount.end() || !options->is_array()) return "";
  for (const auto& o : *options) {
    if (o.is_string() && (o == "shared" || o == "rshared" || o == "slave" || o == "rslave")) {
      return o.get<std::string>();
    }
  }
  return "";
}

}  // namespace

Result<std::string> HostRootfs(const std::string& bundle, const std::string& host_spec_json) {
  auto spec = nlohmann::ordered_json::parse(host_spec_json, nullptr, false);
  if (spec.is_discarded() || !spec.is_object()) {
    return InvalidArgumentError("config.json is not a JSON object");
  }
  auto root = spec.find("root");
  if (root == spec.end() || !root->is_object() || !root->contains("path") ||
      !(*root)["path"].is_string() || (*root)["path"].get<std::string>().empty()) {
    return InvalidArgumentError("config.json has no root.path");
  }
  const std::string path = (*root)["path"].get<std::string>();
  return path[0] == '/' ? path : bundle + "/" + path;
}

Result<std::string> GuestSpecJson(const std::string& host_spec_json, const std::string& guest_dir,
                                  std::vector<std::string>* binds, const std::set<int>& pod_inits) {
  auto spec = nlohmann::ordered_json::parse(host_spec_json, nullptr, false);
  if (spec.is_discarded() || !spec.is_object()) {
    return InvalidArgumentError("config.json is not a JSON object");
  }
  auto root = spec.find("root");
  if (root == spec.end() || !root->is_object() || !root->contains("path")) {
    return InvalidArgumentError("config.json has no root.path");
  }
  (*root)["path"] = "rootfs";
  if (auto linux = spec.find("linux"); linux != spec.end() && linux->is_object()) {
    auto namespaces = linux->find("namespaces");
    if (namespaces != linux->end() && namespaces->is_array()) {
      for (auto& ns : *namespaces) {
        if (!ns.is_object() || !ns.contains("path")) continue;
        const auto& path = ns["path"];
        std::optional<int> pid;
        if (path.is_string() && ns.value("type", "") != "network") {
          pid = oci::NamespacePathPid(path.get<std::string>(), ns.value("type", ""));
        }
        if (!pid || !pod_inits.contains(*pid)) ns.erase("path");
      }
    }
  }
  auto mounts = spec.find("mounts");
  if (mounts != spec.end() && mounts->is_array()) {
    for (auto& mount : *mounts) {
      if (!mount.is_object() || !IsBind(mount)) continue;
      auto source = mount.find("source");
      if (source == mount.end() || !source->is_string()) continue;
      std::string host = source->get<std::string>();
      if (host.empty() || host[0] != '/') continue;
      if (std::string propagation = SharedPropagation(mount); !propagation.empty()) {
        // docs/vm.md, "Mount propagation": the guest sees host directories
        // through 9p, which carries files, not mount events.
        return InvalidArgumentError(
            "the vm backend cannot propagate mounts between the host and a container: volume " +
            mount.value("destination", host) + " asks for " + propagation +
            " (mountPropagation HostToContainer or Bidirectional); the pod's guest sees host "
            "directories through 9p, which carries no mount events");
      }
      *source = guest_dir + "/mounts/" + std::to_string(binds->size());
      binds->push_back(std::move(host));
    }
  }
  return spec.dump();
}

Result<GuestContainer> PodShare::AddContainer(const std::string& id, const std::string& bundle,
                                              const std::string& host_rootfs,
                                              const std::string& host_spec_json,
                                              const std::set<int>& pod_inits) {
  if (id.empty() || id.find('/') != std::string::npos || id == "." || id == "..") {
    return InvalidArgumentError("container id " + id + " cannot name a directory");
  }
  const std::string dir = dir_ + "/" + id;
  const std::string guest_dir = std::string(kGuestSharePath) + "/" + id;
  std::vector<std::string> binds;
  HULL_ASSIGN_OR_RETURN(std::string spec,
                        GuestSpecJson(host_spec_json, guest_dir, &binds, pod_inits));
  if (::mkdir(dir.c_str(), 0700) != 0) return ErrnoError("mkdir", dir);
  auto undo = [&](Status status) -> Result<GuestContainer> {
    RemoveContainer(id).IgnoreError();
    return status;
  };
  auto bind = [&](const std::string& source, const std::string& target) {
    HULL_RETURN_IF_ERROR(MakeTarget(source, target));
    return BindVia(spawner_, bundle, source, target);
  };
  Status bound = bind(host_rootfs, dir + "/rootfs");
  if (!bound.ok()) return undo(bound.WithContext("the container's rootfs"));
  if (!binds.empty() && ::mkdir((dir + "/mounts").c_str(), 0700) != 0) {
    return undo(ErrnoError("mkdir", dir + "/mounts"));
  }
  for (size_t i = 0; i < binds.size(); ++i) {
    bound = bind(binds[i], dir + "/mounts/" + std::to_string(i));
    if (!bound.ok()) return undo(bound.WithContext("volume " + binds[i]));
  }
  return GuestContainer{.bundle = guest_dir, .spec_json = std::move(spec)};
}

Status PodShare::RemoveContainer(const std::string& id) {
  const std::string dir = dir_ + "/" + id;
  HULL_RETURN_IF_ERROR(UnmountAllVia(spawner_, dir));
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  if (ec) return InternalError("remove " + dir + ": " + ec.message());
  return Status::Ok();
}

Status PodShare::MakeShared() {
  return MakeSharedVia(spawner_, dir_);
}

Status PodShare::RemoveAll() {
  HULL_RETURN_IF_ERROR(UnmountAllVia(spawner_, dir_));
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
  if (ec) return InternalError("remove " + dir_ + ": " + ec.message());
  return Status::Ok();
}

}  // namespace hull::shim::vm
