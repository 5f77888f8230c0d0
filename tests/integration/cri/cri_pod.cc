#include "tests/integration/cri/cri_pod.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "tests/integration/cri/cri_client.h"
#include "tests/integration/harness/containerd.h"
#include "tests/integration/harness/host.h"

namespace hull::itest {

namespace fs = std::filesystem;

PodNamespaceViews RunPodNamespaceContainers(const CriClient& cri, const std::string& pod,
                                            const nlohmann::json& pod_config,
                                            const std::string& image, std::string* error) {
  PodNamespaceViews views;
  auto run = [&](const std::string& name, const std::string& pid_mode,
                 const std::vector<std::string>& command) -> std::string {
    nlohmann::json config = {
        {"metadata", {{"name", name}}},
        {"image", {{"image", image}}},
        {"command", command},
        {"linux", {{"security_context", {{"namespace_options", {{"pid", pid_mode}}}}}}}};
    CriReply created = cri.RunContainer(pod, pod_config, config);
    if (!created.ok) *error += name + ": " + created.error + "\n";
    return created.ok ? created.body.value("container_id", "") : "";
  };
  // echo $(...): one line each, also for a file without a newline at its
  // end (gVisor's msgmax) or one that is not there.
  const std::string script =
      "for s in shm_rmid_forced msgmax; do echo $(cat /proc/sys/kernel/$s); done; "
      "tr '\\0' ' ' </proc/1/cmdline; echo; "
      "for n in ipc uts pid; do echo $(readlink /proc/self/ns/$n); done";
  auto look = [&](const std::string& id) {
    CriReply r = cri.Call("ExecSync",
                          {{"container_id", id}, {"cmd", {"sh", "-c", script}}, {"timeout", 120}},
                          std::chrono::seconds(180));
    if (!r.ok || r.body.value("exit_code", -1) != 0) {
      *error += "exec in " + id + ": " + r.error + DecodeBase64(r.body.value("stderr", "")) + "\n";
    }
    std::vector<std::string> lines;
    std::istringstream out(DecodeBase64(r.body.value("stdout", "")));
    for (std::string line; std::getline(out, line);) lines.push_back(line);
    lines.resize(6);
    return lines;
  };
  views.shared =
      run("shared", "POD", {"sh", "-c", "for i in 1 2; do sleep 300 & done; exec sleep 3600"});
  views.own = run("own", "CONTAINER", {"sleep", "3600"});
  if (views.shared.empty() || views.own.empty()) return views;
  views.in_shared = look(views.shared);
  views.in_own = look(views.own);
  return views;
}

nlohmann::json PodSandboxConfigJson(const std::string& name, const std::string& cgroup_parent,
                                    const std::string& log_directory, bool host_network) {
  nlohmann::json namespaces = {
      {"network", host_network ? "NODE" : "POD"}, {"pid", "CONTAINER"}, {"ipc", "POD"}};
  return {
      {"metadata", {{"name", name}, {"uid", name + "-uid"}, {"namespace", "hull-test"}}},
      {"hostname", host_network ? "" : name},
      {"log_directory", log_directory},
      {"labels", {{"app", name}}},
      {"annotations", {{"hull.test/pod", name}}},
      {"linux",
       {{"cgroup_parent", cgroup_parent},
        {"security_context", {{"namespace_options", namespaces}}},
        {"resources",
         {{"cpu_period", 100000},
          {"cpu_quota", 150000},
          {"cpu_shares", 1536},
          {"memory_limit_in_bytes", 256 << 20}}}}},
  };
}

std::string TestCgroupParent(const std::string& prefix, const std::string& test_name) {
  std::string name = "/" + prefix + "-" + std::to_string(::getpid()) + "-" + test_name;
  for (size_t i = 1; i < name.size(); ++i) {
    if (name[i] == '/') name[i] = '-';
  }
  return name;
}

bool WaitForCriImage(CriClient& cri, const std::string& image) {
  using namespace std::chrono_literals;
  return WaitUntil(
      [&] {
        CriReply r = cri.Call("ImageStatus", {{"image", {{"image", image}}}});
        return r.ok && r.body.contains("image") && !r.body["image"].is_null() &&
               !r.body["image"].value("id", "").empty();
      },
      30s);
}

std::string RestartAndWaitForReadyPod(PrivateContainerd& containerd, CriClient& cri,
                                      const std::string& pod, std::chrono::milliseconds timeout) {
  std::string error;
  if (!containerd.Restart(&error)) return "restart: " + error;
  CriReply status;
  if (WaitUntil(
          [&] {
            status = cri.Call("PodSandboxStatus", {{"pod_sandbox_id", pod}});
            return status.ok && status.body["status"].value("state", "") == "SANDBOX_READY";
          },
          timeout)) {
    return "";
  }
  return "not ready after the restart: " + status.error + status.body.dump() + "\n" +
         containerd.LogTail(200);
}

void OpenForRunsc(const std::vector<std::string>& dirs) {
  for (const std::string& dir : dirs) {
    std::error_code ec;
    fs::permissions(dir, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec, ec);
  }
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Cmdline(pid_t pid) {
  std::string s = ReadText("/proc/" + std::to_string(pid) + "/cmdline");
  for (char& c : s) {
    if (c == '\0') c = ' ';
  }
  return s;
}

std::vector<pid_t> HullServers(const std::string& address) {
  std::vector<pid_t> servers;
  for (pid_t pid : ProcessesMatching(address)) {
    if (Cmdline(pid).find("containerd-shim-hull-v2") == std::string::npos) continue;
    if (ReadText("/proc/" + std::to_string(pid) + "/comm") != "hull-spawner\n") {
      servers.push_back(pid);
    }
  }
  return servers;
}

std::string DescribeProcesses(const std::vector<pid_t>& pids) {
  std::string out;
  for (pid_t pid : pids) {
    out += "\n  " + ReadText("/proc/" + std::to_string(pid) + "/stat").substr(0, 60) +
           " cmd=" + Cmdline(pid);
  }
  return out;
}

pid_t ParentShim(pid_t pid) {
  pid_t parent = ParentPid(pid);
  if (ReadText("/proc/" + std::to_string(parent) + "/comm") == "hull-spawner\n") {
    return ParentPid(parent);
  }
  return parent;
}

std::vector<std::string> CgroupHierarchies() {
  std::vector<std::string> roots;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/sys/fs/cgroup", ec)) {
    if (entry.is_directory() && !entry.is_symlink()) roots.push_back(entry.path());
  }
  if (fs::exists("/sys/fs/cgroup/cgroup.controllers")) roots = {"/sys/fs/cgroup"};
  return roots;
}

std::vector<std::string> CgroupsUnder(const std::string& parent) {
  std::vector<std::string> found;
  for (const std::string& root : CgroupHierarchies()) {
    const std::string dir = root + parent;
    std::error_code ec;
    if (!fs::exists(dir, ec)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(dir, ec)) {
      if (entry.is_directory()) found.push_back(entry.path());
    }
  }
  return found;
}

bool RemoveCgroupParent(const std::string& parent) {
  bool ok = true;
  for (const std::string& root : CgroupHierarchies()) {
    const std::string dir = root + parent;
    if (!fs::exists(dir)) continue;
    if (::rmdir(dir.c_str()) != 0) ok = false;
  }
  return ok;
}

}  // namespace hull::itest
