// VmBackend: the Backend that runs a pod's containers in one QEMU micro-VM
// (docs/vm.md). PrepareSandbox boots QEMU (a child of the shim, so in the
// pod cgroup, killed by the parent-death signal if the shim dies, its pid
// recorded in the bundle for the `delete` action), waits for hull-agent's
// Hello and creates the sandbox; every container call then becomes an agent
// call over ttrpc on the virtio-serial port. Guest pids never reach the
// host's reaper: exits come from WaitProcess long-polls. TeardownSandbox
// powers the guest off (DestroySandbox) and answers once QEMU has exited.
// Loop thread only.
#pragma once

#include <sys/types.h>

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/event_loop.h"
#include "base/reaper.h"
#include "shim/backend/make_backend.h"
#include "shim/backend/vm/agent_client.h"
#include "shim/backend/vm/guest_stdio.h"
#include "shim/backend/vm/pod_network.h"
#include "shim/backend/vm/pod_share.h"
#include "shim/backend/vm/qemu_command.h"
#include "shim/backend/vm/vm_resize.h"
#include "shim/backend/vm/vm_template.h"

namespace hull::shim::vm {

// The record of a running VM in the pod's bundle, for the `delete` action.
inline constexpr std::string_view kVmRecordFile = "hull-vm.json";
// The guest console's log in the pod's bundle.
inline constexpr std::string_view kConsoleLogFile = "vm-console.log";
// Where each pod's run directory (agent socket, share) goes.
inline constexpr std::string_view kRunRoot = "/run/hull/vm";

class VmBackend final : public Backend {
 public:
  // `self_exe` locates the default guest assets (GuestAssetDirs).
  VmBackend(EventLoop& loop, Reaper& reaper, RuntimeOptions options, std::string self_exe,
            Logger log = Logger::Null());
  ~VmBackend() override;

  void PrepareSandbox(const SandboxRequest& req, Done done) override;
  void TeardownSandbox(Done done) override;
  // The Sandbox API (containerd 2.x, sandboxer "shim"): the pod's sandbox
  // process is QEMU itself, booted by PrepareSandbox at CreateSandbox.
  // StartSandbox answers its pid; StopSandbox powers the guest off (QEMU
  // killed if it has not exited after kPowerOffWait), and QEMU's exit
  // reaches StartSandbox's `on_exit` (0 for a power-off, 128 + signal).
  bool RunsSandboxProcess() const override { return true; }
  void StartSandbox(std::function<void(int exit_status)> on_exit,
                    std::function<void(Result<pid_t>)> done) override;
  void StopSandbox(Done done) override;
  void Release(const std::string& id) override;
  void Create(const CreateRequest& req, Done done) override;
  void Start(const std::string& id, Done done) override;
  void Exec(const ExecRequest& req, Done done) override;
  void Kill(const std::string& id, int signal, bool all, Done done) override;
  void Delete(const std::string& id, bool force, Done done) override;
  void Pause(const std::string& id, Done done) override;
  void Resume(const std::string& id, Done done) override;
  void Update(const std::string& id, const std::string& resources_json, Done done) override;
  void Ps(const std::string& id, std::function<void(Result<std::vector<pid_t>>)> done) override;
  // Unimplemented: see docs/backends.md.
  void Checkpoint(const CheckpointRequest& req, Done done) override;
  void Stats(const std::string& id, pid_t init_pid,
             std::function<void(Result<google::protobuf::Any>)> done) override;
  Result<EventHandle> WatchOom(const std::string& id, pid_t init_pid,
                               std::function<void()> on_oom) override;
  Result<uint64_t> OomKillCount(const std::string& id) override;
  void WatchInitExit(const std::string& id, pid_t pid,
                     std::function<void(int exit_status)> on_exit) override;
  void WatchExecExit(const std::string& id, const std::string& exec_id, pid_t pid,
                     std::function<void(int exit_status)> on_exit) override;
  void ForgetExit(const std::string& id, const std::string& exec_id, pid_t pid) override;
  void SignalExec(const std::string& id, const std::string& exec_id, pid_t pid, int signal,
                  Done done) override;
  void ResizeTerminal(const std::string& id, const std::string& exec_id, uint32_t width,
                      uint32_t height) override;
  std::string name() const override { return "vm"; }

 private:
  struct Boot;
  struct Container {
    std::map<std::string, std::unique_ptr<GuestStdio>> stdio;  // by exec id ("" init)
    std::map<std::string, uint64_t> waits;  // exit watches by exec id: their generation
    uint64_t oom_kills = 0;
    std::function<void()> on_oom;
    int64_t memory_limit = 0;  // bytes, 0: none (PodMemoryMax's input)
    pid_t init_pid = 0;        // in the guest, once created
  };

  struct TemplateBuilder;
  // Boot steps (PrepareSandbox).
  // Starts the pod's QEMU: a cold boot, or a clone of `clone_of`.
  void StartPodVm(std::shared_ptr<Boot> boot, std::optional<Template> clone_of);
  // Template clones (vm_clone.cc, docs/vm.md "Template clones"): the pod
  // starts as a clone of its shape's template, which the first pod of the
  // shape builds. Anything wrong with a template ends in a cold boot.
  void BootFromTemplate(std::shared_ptr<Boot> boot);
  void SpawnTemplate(std::shared_ptr<Boot> boot);
  void ConnectTemplate(std::shared_ptr<Boot> boot);
  void SaveTemplate(std::shared_ptr<Boot> boot);
  void WaitTemplateSaved(std::shared_ptr<Boot> boot);
  void TemplateFailed(std::shared_ptr<Boot> boot, const Status& status);
  void KillTemplate();
  void RestoreClone(std::shared_ptr<Boot> boot);
  void WaitCloneRestored(std::shared_ptr<Boot> boot);
  void CloneFailed(std::shared_ptr<Boot> boot, const Status& status);
  void Connect(std::shared_ptr<Boot> boot);
  // Whether the guest's console reports a stalled CPU before its agent
  // answered; if so the boot is handled: a clone falls back to a cold boot,
  // a cold boot is tried again once, then fails.
  bool HandleStalledBoot(std::shared_ptr<Boot> boot);
  void JoinPodCgroupV1(const std::optional<std::string>& pod);
  void SayHello(std::shared_ptr<Boot> boot);
  void FailBoot(std::shared_ptr<Boot> boot, Status status);
  // The tap and redirection in the pod's namespace (pod_network.h), and
  // the guest's network into `boot`; none for a pod without a namespace
  // path or without eth0.
  Result<std::optional<PodNic>> WireNetwork(const PodNetworkSpec& net, Boot* boot);
  void OnQemuExit(int wait_status);
  // Kills QEMU, then cleans the run directory and the record; `then` once
  // QEMU is reaped.
  void StopVm(std::function<void()> then);
  // Asks the agent to power the guest off (DestroySandbox); QEMU is killed
  // if it has not exited after kPowerOffWait. `then` once QEMU is reaped.
  // Precondition: QEMU runs and the agent is connected.
  void PowerOff(std::function<void()> then);
  void CleanUp();
  std::string ConsoleTail() const;

  // The memory limits of the pod's containers, the pause container left
  // out (PodMemoryMax's input).
  std::map<std::string, int64_t> ContainerLimits() const;

  void PollOom();
  void Wait(const std::string& id, const std::string& exec_id, uint64_t generation,
            std::function<void(int)> on_exit);
  Status StartStdio(const std::string& id, const std::string& exec_id, const ProcessStdio& stdio,
                    bool terminal);
  // Answers `done` on a later loop turn.
  void Post(Done done, Status status);
  // For a QEMU with a user of its own ([vm] share_helper): starts the share
  // helper on `paths.share_dir` (its output into `log_fd`) and hands QEMU
  // descriptors instead of paths (docs/security.md, "QEMU's jail"): the
  // helper's socket, the agent socket and `ram`'s QMP socket listening, the
  // console log open. `held` keeps hull's copies until QEMU is spawned.
  Status HandQemuItsFiles(const GuestAssets& assets, int log_fd, VmPaths& paths, GuestRam& ram,
                          SpawnOptions& spawn, std::vector<UniqueFd>& held);
  // For a QEMU with a user of its own: its root, `<dir>/jail` (made here),
  // holding only its files (RootQemuJail), `ram_file` among them.
  Status RootQemu(SpawnOptions& spawn, const GuestAssets& assets, const std::string& dir,
                  const std::string& ram_file);
  // The pid a jailed QEMU's uid is made from: the process that spawns it.
  pid_t QemuStarter() const;
  // Maps an agent answer to the call's Status ("<what> <id>: ...").
  template <typename Resp>
  std::function<void(Result<Resp>)> Answer(std::string what, Done done);

  EventLoop& loop_;
  Reaper& reaper_;
  RuntimeOptions options_;
  std::string self_exe_;
  Logger log_;

  std::string sandbox_id_;
  std::string bundle_;   // the pod's (pause container's) bundle
  std::string run_dir_;  // <kRunRoot>/<sandbox id>
  std::unique_ptr<PodShare> share_;
  std::string netns_path_;  // the wired pod network namespace, if any
  pid_t qemu_pid_ = 0;
  pid_t template_pid_ = 0;         // a template VM being built for this pod's shape
  std::set<pid_t> share_helpers_;  // running, not yet reaped
  VmCapacity capacity_;            // what the VM booted with: Update's bound
  std::vector<std::function<void()>> on_qemu_exit_;
  std::function<void(int)> on_sandbox_exit_;  // StartSandbox's
  std::shared_ptr<AgentClient> agent_;
  EventHandle oom_poll_;
  bool tearing_down_ = false;
  bool stopping_ = false;  // StopSandbox's power-off under way
  uint64_t next_wait_ = 0;
  std::map<std::string, Container> containers_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

// The `delete` action after a shim died: kills the QEMU the record in
// `bundle` names (if it is still that QEMU) and removes its run directory.
// Blocking; best effort. The record is in the bundle, which a confined
// server can write: a run directory other than `id`'s (<kRunRoot>/<id>) is
// refused, so a forged record reaches no other pod's QEMU or files.
Status CleanUpAfterShim(const std::string& bundle, const std::string& id);

// The features document `-info` prints for the vm backend.
std::string VmFeaturesJson(const RuntimeOptions& options);

}  // namespace hull::shim::vm
