#include "agent/guest_spec.h"

#include <nlohmann/json.hpp>

#include "oci/spec.h"

namespace hull::agent {
namespace {

using nlohmann::json;

void DropProcessLabels(json& process) {
  process.erase("apparmorProfile");
  process.erase("selinuxLabel");
}

}  // namespace

std::string GuestCgroupPath(const std::string& id) {
  return "/hull/" + id;
}

Result<std::string> GuestSpec(const std::string& spec_json, const std::string& id,
                              const std::string& bundle, const std::set<int>& pod_pids) {
  json spec = json::parse(spec_json, nullptr, /*allow_exceptions=*/false);
  if (!spec.is_object()) return InvalidArgumentError("spec is not a JSON object");
  auto root = spec.find("root");
  if (root == spec.end() || !root->is_object() || !root->contains("path") ||
      !(*root)["path"].is_string() || (*root)["path"].get_ref<const std::string&>().empty()) {
    return InvalidArgumentError("spec has no root.path");
  }
  std::string path = (*root)["path"];
  if (path[0] != '/') {
    if (bundle.empty() || bundle[0] != '/') {
      return InvalidArgumentError("root.path " + path +
                                  " is relative and the bundle is not absolute");
    }
    (*root)["path"] = bundle + "/" + path;
  }
  if (auto process = spec.find("process"); process != spec.end() && process->is_object()) {
    DropProcessLabels(*process);
  }
  spec.erase("hooks");
  json& linux = spec["linux"];
  if (!linux.is_object()) linux = json::object();
  linux["cgroupsPath"] = GuestCgroupPath(id);
  linux.erase("mountLabel");
  if (auto ns = linux.find("namespaces"); ns != linux.end() && ns->is_array()) {
    json kept = json::array();
    bool cgroup = false;
    for (json& entry : *ns) {
      if (!entry.is_object()) return InvalidArgumentError("linux.namespaces holds a non-object");
      const std::string type = entry.value("type", "");
      if (type == "network") continue;
      cgroup = cgroup || type == "cgroup";
      auto path = entry.find("path");
      if (path != entry.end() &&
          !(path->is_string() &&
            pod_pids.contains(oci::NamespacePathPid(path->get<std::string>(), type).value_or(0)))) {
        entry.erase("path");
      }
      kept.push_back(std::move(entry));
    }
    // The container's own cgroup (its limits) at /sys/fs/cgroup, as runc's
    // on a cgroup v2 host, not the guest's whole tree.
    if (!cgroup) kept.push_back({{"type", "cgroup"}});
    *ns = std::move(kept);
  }
  // The network sysctls went with the network namespace: crun refuses them
  // without a new one. The guest's network is the pod's, and the host sends
  // the pod's net.* sysctls in CreateSandbox, where the agent applies them
  // once for the whole guest (guest_network.h); e.g. containerd 2.x's
  // net.ipv4.ip_unprivileged_port_start.
  if (auto sysctl = linux.find("sysctl"); sysctl != linux.end() && sysctl->is_object()) {
    for (auto it = sysctl->begin(); it != sysctl->end();) {
      it = it.key().starts_with("net.") ? sysctl->erase(it) : std::next(it);
    }
  }
  return spec.dump();
}

Result<std::string> GuestProcess(const std::string& process_json) {
  json process = json::parse(process_json, nullptr, /*allow_exceptions=*/false);
  if (!process.is_object()) return InvalidArgumentError("process is not a JSON object");
  auto args = process.find("args");
  if (args == process.end() || !args->is_array() || args->empty()) {
    return InvalidArgumentError("process has no args");
  }
  DropProcessLabels(process);
  return process.dump();
}

Status CheckId(const std::string& what, const std::string& id) {
  if (id.empty()) return InvalidArgumentError(what + " is empty");
  if (id.size() > 128) return InvalidArgumentError(what + " is longer than 128 characters");
  if (id[0] == '.') return InvalidArgumentError(what + " " + id + " starts with '.'");
  for (char c : id) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.';
    if (!ok)
      return InvalidArgumentError(what + " " + id + " has a character other than [A-Za-z0-9_.-]");
  }
  return Status::Ok();
}

}  // namespace hull::agent
