// VmBackend's pod-level part: booting QEMU, the agent's Hello and
// CreateSandbox, the power-off, and the cleanup after a crashed shim.
// See vm_backend.h.
#include <fcntl.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/file_util.h"
#include "base/spawn.h"
#include "cgroups/cgroups.h"
#include "shim/backend/vm/pod_network.h"
#include "shim/backend/vm/vm_backend.h"
#include "shim/backend/vm/vm_backend_internal.h"
#include "shim/backend/vm/vm_spawner.h"
#include "shim/mount/mount.h"
#include "shim/mount/spawner_bundle_files.h"
#include "ttrpc/unix_socket_internal.h"

namespace hull::shim::vm {

namespace pb = ::hull::agent::v1;
using namespace std::chrono_literals;

namespace {

constexpr size_t kConsoleLines = 15;
constexpr auto kConnectRetry = 20ms;
constexpr auto kPowerOffWait = 10s;
// Cold boots tried again after a stalled CPU (docs/vm.md, "Stalled boots").
constexpr uint32_t kStalledBootRetries = 1;

// MakeDirs, with `mode` given to the last directory even when it exists
// (one left by an earlier boot attempt).
Status MakeDirsWithMode(const std::string& path, mode_t mode) {
  HULL_RETURN_IF_ERROR(::hull::MakeDirs(path, mode));
  ::chmod(path.c_str(), mode);
  return Status::Ok();
}

// The largest resolv.conf passed to the guest.
constexpr size_t kMaxResolvConf = 64 * 1024;

// The host's clock and random bytes for the guest (HelloRequest): a clone
// must not go on with its template's.
void SetHostState(pb::HelloRequest& hello) {
  hello.set_host_time_unix_nano(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                    std::chrono::system_clock::now().time_since_epoch())
                                    .count());
  std::string entropy(64, '\0');
  if (::getrandom(entropy.data(), entropy.size(), 0) == static_cast<ssize_t>(entropy.size())) {
    hello.set_entropy(std::move(entropy));
  }
}

}  // namespace

VmBackend::VmBackend(EventLoop& loop, Reaper& reaper, RuntimeOptions options, std::string self_exe,
                     Logger log)
    : loop_(loop),
      reaper_(reaper),
      options_(std::move(options)),
      self_exe_(std::move(self_exe)),
      log_(std::move(log)) {}

VmBackend::~VmBackend() {
  *alive_ = false;
  KillTemplate();
  containers_.clear();
  if (agent_) agent_->Close();
  // A VM still running goes with the backend (the server is exiting).
  if (qemu_pid_ > 0) {
    log_.Info("pod {}: the server is exiting: QEMU pid {} killed", sandbox_id_, qemu_pid_);
    ::kill(qemu_pid_, SIGKILL);
    reaper_.Discard(qemu_pid_);
    int status;
    while (::waitpid(qemu_pid_, &status, 0) < 0 && errno == EINTR) {
    }
    qemu_pid_ = 0;
  }
  CleanUp();
}

std::string VmBackend::ConsoleTail() const {
  auto text = ReadFile(run_dir_ + "/" + std::string(kConsoleLogFile));
  std::string tail = text ? LastLines(*text, kConsoleLines) : std::string();
  auto qemu = ReadFile(run_dir_ + "/qemu.log");
  if (qemu && !qemu->empty()) tail += (tail.empty() ? "" : "\n") + LastLines(*qemu, 5);
  return tail.empty() ? "(the console log is empty)" : tail;
}

void VmBackend::PrepareSandbox(const SandboxRequest& req, Done done) {
  if (qemu_pid_ > 0 || !sandbox_id_.empty()) {
    return Post(std::move(done), FailedPreconditionError("the pod's VM is running already"));
  }
  auto boot = std::make_shared<Boot>();
  boot->requested = EventLoop::Clock::now();
  boot->done = std::move(done);
  boot->vcpus = req.size && req.size->vcpus > 0 ? req.size->vcpus : 1;
  boot->memory_mib = req.size && req.size->memory_mib > 0 ? req.size->memory_mib : 256;
  // Headroom for in-place resizes: RAM the guest's cgroups keep from the
  // pod's containers until a resize gives it to them (docs/vm.md, "Resize").
  boot->headroom_mib = options_.vm.memory_headroom_mib;
  boot->memory_mib += boot->headroom_mib;
  boot->timeout = std::chrono::milliseconds(options_.vm.agent_timeout_ms);
  const oci::Spec& spec = req.spec;
  PodNetworkSpec net = ReadPodNetworkSpec(spec);
  boot->hostname = spec.Hostname();
  if (net.host_network) {
    // docs/vm.md, "Pod networking": the guest has a network stack of its own.
    return Post(std::move(boot->done),
                InvalidArgumentError("the vm backend cannot run a pod on the host's network "
                                     "(hostNetwork: true, or a spec without a network "
                                     "namespace): the pod's VM has its own network stack"));
  }
  if (Status host = RefuseHostNamespaces(spec); !host.ok()) {
    return Post(std::move(boot->done), host);
  }
  if (Status guest = CheckGuestSpec(spec); !guest.ok()) {
    return Post(std::move(boot->done), guest);
  }

  Result<GuestAssets> assets = ResolveGuestAssets(options_.vm, GuestAssetDirs(self_exe_));
  if (!assets) return Post(std::move(boot->done), assets.error());
  Result<HostCapacity> host = ReadHostCapacity();
  if (!host) return Post(std::move(boot->done), host.error());
  Status fits = CheckFits(boot->vcpus, boot->memory_mib, *host);
  if (!fits.ok()) return Post(std::move(boot->done), fits);

  sandbox_id_ = req.id;
  bundle_ = req.bundle;
  run_dir_ = std::string(kRunRoot) + "/" + req.id;
  if (run_dir_.size() + sizeof("/agent.sock") > 108) {
    Status too_long = InvalidArgumentError("the agent socket path " + run_dir_ +
                                           "/agent.sock is too long (the pod id is)");
    run_dir_.clear();
    return FailBoot(boot, too_long);
  }
  // A run directory left by an earlier shim of this pod goes first.
  if (::access(run_dir_.c_str(), F_OK) == 0) CleanUp();
  boot->assets = std::move(*assets);
  boot->net = std::move(net);
  boot->pod_cgroup = req.pod_cgroup;
  boot->container_memory_mib = req.size ? req.size->container_memory_mib : 0;
  if (options_.vm.templates) return BootFromTemplate(boot);
  StartPodVm(boot, std::nullopt);
}

void VmBackend::StartPodVm(std::shared_ptr<Boot> boot, std::optional<Template> clone_of) {
  ++boot->attempt;
  boot->clone_of = std::move(clone_of);
  const bool clone = boot->clone_of.has_value();
  VmPaths paths{.agent_socket = run_dir_ + "/agent.sock",
                .console_log = run_dir_ + "/" + std::string(kConsoleLogFile),
                .share_dir = run_dir_ + "/share"};
  Status made = MakeDirsWithMode(paths.share_dir, 0700);
  if (!made.ok()) return FailBoot(boot, made);
  share_ = std::make_unique<PodShare>(paths.share_dir, reaper_.spawner());
  std::vector<std::string> needed = {boot->assets.qemu, boot->assets.kernel, boot->assets.initramfs,
                                     run_dir_, bundle_};
  if (clone) needed.push_back(boot->clone_of->dir);
  std::optional<SpawnJail> jail = QemuJail(options_.vm, needed, QemuStarter());
  if (jail) {
    Status shared = share_->MakeShared();
    if (!shared.ok()) return FailBoot(boot, shared);
  }

  UniqueFd log(
      ::open((run_dir_ + "/qemu.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!log.valid()) return FailBoot(boot, ErrnoError("open", run_dir_ + "/qemu.log"));
  Result<std::optional<PodNic>> nic = WireNetwork(boot->net, boot.get());
  if (!nic) return FailBoot(boot, nic.error());
  std::optional<GuestNic> guest_nic;
  SpawnOptions spawn{.argv = {},
                     .fds = {{1, log.get()}, {2, log.get()}},
                     .parent_death_signal = SIGKILL,
                     .jail = std::move(jail)};
  if (*nic) {
    guest_nic = GuestNic{.fd = 3, .mac = (*nic)->mac};
    spawn.fds.push_back({3, (*nic)->tap.get()});
  } else if (clone && !boot->clone_of->mac.empty()) {
    // The template has a NIC and this pod none: the clone's stays unwired.
    guest_nic = GuestNic{.fd = -1, .mac = boot->clone_of->mac};
  }
  // What an earlier attempt wrote goes: Connect reads the console for a
  // stall before this QEMU has opened (and truncated) it.
  std::error_code no_console;  // none yet: the first attempt
  std::filesystem::resize_file(paths.console_log, 0, no_console);
  GuestRam ram;
  UniqueFd clone_state;
  std::string tsc_khz = HostTscKhz();
  if (clone) {
    ram = GuestRam{.file = boot->clone_of->ram,
                   .share = false,
                   .incoming = true,
                   .qmp_socket = run_dir_ + "/qmp.sock"};
    tsc_khz = boot->clone_of->tsc_khz;
    clone_state = UniqueFd(::open(boot->clone_of->state.c_str(), O_RDONLY | O_CLOEXEC));
    if (!clone_state) return FailBoot(boot, ErrnoError("open", boot->clone_of->state));
    spawn.fds.push_back({kCloneStateFd, clone_state.get()});
    // The guest's NIC has the template's MAC: the agent gives it the pod's.
    for (auto& iface : *boot->network.mutable_interfaces()) {
      iface.set_guest_mac(boot->clone_of->mac);
    }
  }
  Status rooted = RootQemu(spawn, boot->assets, run_dir_, ram.file);
  if (!rooted.ok()) return FailBoot(boot, rooted);
  std::vector<UniqueFd> held;
  Status handed = HandQemuItsFiles(boot->assets, log.get(), paths, ram, spawn, held);
  if (!handed.ok()) return FailBoot(boot, handed);
  // A clone's translation cache has its own size (VmOptions).
  VmOptions qemu_options = options_.vm;
  if (clone) qemu_options.tcg_tb_size_mib = options_.vm.clone_tcg_tb_size_mib;
  spawn.argv = QemuArgv(boot->assets, qemu_options, boot->vcpus, boot->memory_mib, paths, tsc_khz,
                        guest_nic, ram);
  Result<pid_t> pid = reaper_.Spawn(spawn);
  held.clear();
  // QEMU holds the tap now: it goes away with QEMU.
  if (*nic) (*nic)->tap.reset();
  if (!pid) return FailBoot(boot, pid.error().WithContext("start " + boot->assets.qemu));
  qemu_pid_ = *pid;
  capacity_ = VmCapacity{.vcpus = boot->vcpus,
                         .memory_mib = boot->memory_mib,
                         .container_memory_mib = boot->container_memory_mib,
                         .headroom_mib = boot->headroom_mib};
  JoinPodCgroupV1(boot->pod_cgroup);
  log_.Info("pod {}: QEMU pid {}: {} vCPUs, {} MiB, {} {}, {}, run directory {}", sandbox_id_,
            qemu_pid_, boot->vcpus, boot->memory_mib, options_.vm.machine, options_.vm.accel,
            clone ? "a clone of the template " + boot->clone_of->dir : std::string("cold boot"),
            run_dir_);
  std::weak_ptr<bool> alive = alive_;
  reaper_.Watch(qemu_pid_, [this, alive](int wait_status) {
    if (!alive.expired()) OnQemuExit(wait_status);
  });
  nlohmann::json record = {{"qemu_pid", qemu_pid_}, {"run_dir", run_dir_}, {"netns", netns_path_}};
  Status recorded = WriteBundleFileVia(reaper_.spawner(),
                                       bundle_ + "/" + std::string(kVmRecordFile), record.dump());
  if (!recorded.ok()) return FailBoot(boot, recorded);

  boot->started = EventLoop::Clock::now();
  boot->deadline =
      boot->started +
      (clone ? std::min<std::chrono::milliseconds>(boot->timeout, kCloneTimeout) : boot->timeout);
  // QEMU gone before the agent answered: fail with its reason (a clone
  // falls back to a cold boot).
  on_qemu_exit_.push_back([this, alive, boot, attempt = boot->attempt] {
    if (alive.expired() || boot->finished || boot->attempt != attempt) return;
    Status gone =
        UnavailableError("QEMU exited before the agent answered; console:\n" + ConsoleTail());
    if (boot->clone_of) return CloneFailed(boot, gone);
    FailBoot(boot, gone);
  });
  if (clone) return RestoreClone(boot);
  Connect(boot);
}

Result<std::optional<PodNic>> VmBackend::WireNetwork(const PodNetworkSpec& net, Boot* boot) {
  if (!net.resolv_conf_path.empty()) {
    auto text = ReadFile(net.resolv_conf_path);
    if (text && text->size() <= kMaxResolvConf) {
      boot->network.set_resolv_conf(*text);
    } else {
      log_.Warn(
          "pod {}: the guest keeps its own resolv.conf: {}", sandbox_id_,
          text ? "the pod's " + net.resolv_conf_path + " is over 64 KiB" : text.error().ToString());
    }
  }
  boot->network.mutable_sysctls()->insert(net.net_sysctls.begin(), net.net_sysctls.end());
  if (net.netns_path.empty()) return std::optional<PodNic>();  // ctr run: loopback only
  auto start = std::chrono::steady_clock::now();
  netns_path_ = net.netns_path;
  // A tap left by an earlier shim of this pod goes first.
  UnwirePodNetworkVia(reaper_.spawner(), netns_path_).IgnoreError();
  Result<PodNic> nic = WirePodNetworkVia(reaper_.spawner(), netns_path_);
  boot->network_setup_us = std::chrono::duration_cast<std::chrono::microseconds>(
                               std::chrono::steady_clock::now() - start)
                               .count();
  if (!nic && nic.error().code() == Code::kNotFound) {
    // A namespace without eth0 (a CNI that made none): loopback only.
    log_.Info("pod {}: {}: the guest gets loopback only", sandbox_id_, nic.error().ToString());
    netns_path_.clear();
    return std::optional<PodNic>();
  }
  if (!nic) return nic.error();
  *boot->network.mutable_interfaces() = nic->network.interfaces();
  *boot->network.mutable_routes() = nic->network.routes();
  log_.Info("pod {}: {} ({}) wired to {} in {} in {} us", sandbox_id_, kPodInterface, nic->mac,
            kPodTapName, netns_path_, boot->network_setup_us);
  return std::optional<PodNic>(std::move(*nic));
}

// On cgroup v1 (legacy and hybrid hosts) QEMU joins the pod cgroup in every
// hierarchy where it exists (kubelet makes it in each), so the pod's memory,
// cpu and pids cgroups pay for its VM. Not on cgroup v2: the pod cgroup has
// controllers enabled for its children and cannot hold a process; there
// QEMU, the shim's child, is in the pod when [sizing] shim_in_pod_cgroup puts
// the shim in <pod>/hull-shim. Moved right after its exec: what QEMU charged
// before (its first milliseconds) stays where it was.
void VmBackend::JoinPodCgroupV1(const std::optional<std::string>& pod) {
  Result<cgroups::Host> host = cgroups::DetectHost();
  if (!host || host->mode == cgroups::Mode::kUnified) return;
  if (!pod) return;
  Status moved = cgroups::MoveProcess(qemu_pid_, *pod);
  if (moved.ok()) {
    log_.Info("pod {}: QEMU pid {} joined the pod cgroup {} (cgroup v1)", sandbox_id_, qemu_pid_,
              *pod);
  } else {
    log_.Warn("pod {}: QEMU stays in the shim's cgroup: {}", sandbox_id_, moved.ToString());
  }
}

void VmBackend::Connect(std::shared_ptr<Boot> boot) {
  if (boot->finished) return;
  if (EventLoop::Clock::now() >= boot->deadline) {
    if (boot->clone_of) {
      return CloneFailed(boot, DeadlineExceededError("the clone's agent did not answer (last: " +
                                                     boot->last_error.ToString() + ")"));
    }
    return FailBoot(
        boot, DeadlineExceededError("hull-agent did not answer within the agent deadline of " +
                                    std::to_string(boot->timeout.count()) + " ms ([vm] " +
                                    "agent_timeout_ms; last: " + boot->last_error.ToString() +
                                    "); the guest console's last lines:\n" + ConsoleTail()));
  }
  if (HandleStalledBoot(boot)) return;
  auto client = ttrpc::Client::Connect(loop_, run_dir_ + "/agent.sock");
  if (!client) {
    boot->last_error = client.error();
    std::weak_ptr<bool> alive = alive_;
    boot->retry = loop_.AddTimer(kConnectRetry, [this, alive, boot, attempt = boot->attempt] {
      if (!alive.expired() && boot->attempt == attempt) Connect(boot);
    });
    return;
  }
  agent_ = std::make_shared<AgentClient>(std::move(*client));
  SayHello(boot);
}

bool VmBackend::HandleStalledBoot(std::shared_ptr<Boot> boot) {
  if (!boot->stall_watch.Stalled(run_dir_ + "/" + std::string(kConsoleLogFile))) return false;
  Status stalled =
      UnavailableError(boot->stall_watch.reason() +
                       " before hull-agent answered; its last lines:\n" + ConsoleTail());
  if (boot->clone_of) {
    CloneFailed(boot, stalled);
    return true;
  }
  if (boot->stalled_boots >= kStalledBootRetries) {
    FailBoot(boot, stalled.WithContext("cold boot " + std::to_string(boot->stalled_boots + 1) +
                                       " of the pod's VM stalled too"));
    return true;
  }
  ++boot->stalled_boots;
  log_.Warn("pod {}: {}; QEMU pid {} killed, cold boot again", sandbox_id_, stalled.ToString(),
            qemu_pid_);
  ++boot->attempt;  // what this boot still has in flight is stale
  boot->retry.Reset();
  std::weak_ptr<bool> alive = alive_;
  StopVm([this, alive, boot] {
    if (alive.expired() || boot->finished) return;
    StartPodVm(boot, std::nullopt);
  });
  return true;
}

void VmBackend::SayHello(std::shared_ptr<Boot> boot) {
  pb::HelloRequest hello;
  hello.set_host_version("hull");
  SetHostState(hello);
  std::weak_ptr<bool> alive = alive_;
  // Ask again every few seconds until the deadline: a guest still booting
  // holds the call until it serves the port.
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(boot->deadline -
                                                                    EventLoop::Clock::now());
  auto timeout = std::max(std::min<std::chrono::milliseconds>(left, 5s), 1ms);
  agent_->Call<pb::HelloResponse>(
      "Hello", hello,
      [this, alive, boot, attempt = boot->attempt](Result<pb::HelloResponse> r) {
        if (alive.expired() || boot->finished || boot->attempt != attempt) return;
        if (!r) {
          boot->last_error = r.error();
          if (agent_) agent_->Close();
          agent_.reset();
          return Connect(boot);
        }
        // The size the guest really got: exactly the vCPUs, at most -m.
        if (r->vcpus() != boot->vcpus || r->memory_bytes() == 0 ||
            r->memory_bytes() > boot->memory_mib * 1024 * 1024) {
          return FailBoot(
              boot,
              InternalError("malformed agent answer: Hello says " + std::to_string(r->vcpus()) +
                            " vCPUs and " + std::to_string(r->memory_bytes()) +
                            " bytes for a VM of " + std::to_string(boot->vcpus) + " vCPUs and " +
                            std::to_string(boot->memory_mib) + " MiB"));
        }
        // QEMU start to the agent's Hello, in the record (bench/, logs).
        auto ready = std::chrono::duration_cast<std::chrono::milliseconds>(EventLoop::Clock::now() -
                                                                           boot->started);
        nlohmann::json record = {
            {"qemu_pid", qemu_pid_},
            {"run_dir", run_dir_},
            {"netns", netns_path_},
            {"network_setup_us", boot->network_setup_us},
            {"agent_ready_ms", ready.count()},
            {"boot", boot->how},
            {"prepare_ms", std::chrono::duration_cast<std::chrono::milliseconds>(
                               EventLoop::Clock::now() - boot->requested)
                               .count()},
            {"guest_vcpus", r->vcpus()},
            {"guest_memory_bytes", r->memory_bytes()},
            {"guest_kernel", r->kernel_release()}};
        WriteBundleFileVia(reaper_.spawner(), bundle_ + "/" + std::string(kVmRecordFile),
                           record.dump())
            .IgnoreError();
        log_.Info(
            "pod {}: hull-agent {} ready after {} ms ({}): {} vCPUs, MemTotal {} KiB, "
            "kernel {}",
            sandbox_id_, r->version(), ready.count(), boot->how, r->vcpus(),
            r->memory_bytes() / 1024, r->kernel_release());
        pb::CreateSandboxRequest create;
        create.set_sandbox_id(sandbox_id_);
        create.set_hostname(boot->hostname);
        create.set_share_tag(std::string(kShareTag));
        create.set_share_path(std::string(kGuestSharePath));
        *create.mutable_network() = boot->network;
        if (capacity_.headroom_mib > 0) {
          // The pod's containers start held to the pod's size.
          create.set_pod_memory_max_bytes((ContainersCapMib(capacity_) - capacity_.headroom_mib)
                                          << 20);
        }
        agent_->Call<pb::CreateSandboxResponse>(
            "CreateSandbox", create,
            [this, alive, boot, attempt](Result<pb::CreateSandboxResponse> c) {
              if (alive.expired() || boot->finished || boot->attempt != attempt) return;
              if (!c && boot->clone_of) {
                return CloneFailed(boot, c.error().WithContext("agent CreateSandbox"));
              }
              if (!c) return FailBoot(boot, c.error().WithContext("agent CreateSandbox"));
              boot->finished = true;
              boot->retry_qmp.Reset();
              boot->qmp.reset();
              PollOom();
              boot->done(Status::Ok());
            });
      },
      timeout);
}

void VmBackend::FailBoot(std::shared_ptr<Boot> boot, Status status) {
  if (boot->finished) return;
  boot->finished = true;
  boot->retry.Reset();
  boot->retry_qmp.Reset();
  boot->qmp.reset();
  std::weak_ptr<bool> alive = alive_;
  StopVm([this, alive, boot, status = std::move(status)] {
    if (alive.expired()) return boot->done(status);
    sandbox_id_.clear();
    boot->done(status);
  });
}

void VmBackend::OnQemuExit(int wait_status) {
  if (WIFEXITED(wait_status)) {
    log_.Info("pod {}: QEMU exited with status {}{}", sandbox_id_, WEXITSTATUS(wait_status),
              WEXITSTATUS(wait_status) == 0 ? " (the guest powered off)" : "");
  } else {
    log_.Info("pod {}: QEMU killed by signal {}", sandbox_id_, WTERMSIG(wait_status));
  }
  qemu_pid_ = 0;
  if (auto on_exit = std::move(on_sandbox_exit_)) {
    on_sandbox_exit_ = nullptr;
    on_exit(WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128 + WTERMSIG(wait_status));
  }
  // Calls in flight fail (exits are reported as 137); later calls take the
  // no-VM paths: Kill is "already finished", Delete only cleans the share.
  oom_poll_.Reset();
  if (std::shared_ptr<AgentClient> agent = std::move(agent_)) agent->Close();
  std::vector<std::function<void()>> waiting;
  waiting.swap(on_qemu_exit_);
  for (auto& then : waiting) then();
}

void VmBackend::StopVm(std::function<void()> then) {
  oom_poll_.Reset();
  if (agent_) agent_->Close();
  agent_.reset();
  if (qemu_pid_ <= 0) {
    CleanUp();
    return loop_.Post(std::move(then));
  }
  std::weak_ptr<bool> alive = alive_;
  on_qemu_exit_.push_back([this, alive, then = std::move(then)] {
    if (!alive.expired()) CleanUp();
    then();
  });
  ::kill(qemu_pid_, SIGKILL);
}

pid_t VmBackend::QemuStarter() const {
  return reaper_.spawner() != nullptr ? reaper_.spawner()->pid() : ::getpid();
}

Status VmBackend::RootQemu(SpawnOptions& spawn, const GuestAssets& assets, const std::string& dir,
                           const std::string& ram_file) {
  if (!spawn.jail || spawn.jail->uid == 0) return Status::Ok();
  const std::string root = dir + "/jail";
  HULL_RETURN_IF_ERROR(MakeDirsWithMode(root, 0755));
  RootQemuJail(*spawn.jail, root, assets, options_.vm, ram_file);
  return Status::Ok();
}

Status VmBackend::HandQemuItsFiles(const GuestAssets& assets, int log_fd, VmPaths& paths,
                                   GuestRam& ram, SpawnOptions& spawn,
                                   std::vector<UniqueFd>& held) {
  if (assets.share_helper.empty()) return Status::Ok();
  // What can fail without a process to undo comes first.
  auto listen = [](const std::string& path) {
    ::unlink(path.c_str());
    return ttrpc::internal::ListenUnix(path, 4);
  };
  HULL_ASSIGN_OR_RETURN(UniqueFd agent, listen(paths.agent_socket));
  UniqueFd console(::open(paths.console_log.c_str(),
                          O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!console) return ErrnoError("open", paths.console_log);
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
    return ErrnoError("socketpair", "the share helper");
  }
  UniqueFd helper_end(pair[0]);
  UniqueFd qemu_end(pair[1]);
  Result<pid_t> helper = reaper_.Spawn(
      SpawnOptions{.argv = ShareHelperArgv(assets, paths.share_dir),
                   .fds = {{kShareHelperFd, helper_end.get()}, {1, log_fd}, {2, log_fd}},
                   .parent_death_signal = SIGKILL,
                   .jail = ShareHelperJail(options_.vm)});
  if (!helper) return helper.error().WithContext("start the share helper " + assets.share_helper);
  // It ends when QEMU closes its socket.
  share_helpers_.insert(*helper);
  std::weak_ptr<bool> alive = alive_;
  reaper_.Watch(*helper, [this, alive, pid = *helper](int) {
    if (!alive.expired()) share_helpers_.erase(pid);
  });
  spawn.fds.insert(
      spawn.fds.end(),
      {{kShareFd, qemu_end.get()}, {kAgentFd, agent.get()}, {kConsoleFd, console.get()}});
  paths.share_fd = kShareFd;
  paths.agent_fd = kAgentFd;
  paths.console_fd = kConsoleFd;
  held.push_back(std::move(qemu_end));
  held.push_back(std::move(agent));
  held.push_back(std::move(console));
  if (!ram.qmp_socket.empty()) {
    HULL_ASSIGN_OR_RETURN(UniqueFd qmp, listen(ram.qmp_socket));
    spawn.fds.push_back({kQmpFd, qmp.get()});
    ram.qmp_fd = kQmpFd;
    held.push_back(std::move(qmp));
  }
  return Status::Ok();
}

void VmBackend::CleanUp() {
  for (pid_t helper : share_helpers_) ::kill(helper, SIGKILL);
  if (!netns_path_.empty()) {
    Status unwired = UnwirePodNetworkVia(reaper_.spawner(), netns_path_);
    if (!unwired.ok()) log_.Warn("pod {}: {}", sandbox_id_, unwired.ToString());
    netns_path_.clear();
  }
  if (run_dir_.empty()) return;
  if (share_) {
    Status removed = share_->RemoveAll();
    (void)removed;
    share_.reset();
  } else {
    UnmountAllVia(reaper_.spawner(), run_dir_ + "/share").IgnoreError();
  }
  std::error_code ec;
  std::filesystem::remove_all(run_dir_, ec);
  if (!bundle_.empty()) {
    RemoveBundleFileVia(reaper_.spawner(), bundle_ + "/" + std::string(kVmRecordFile))
        .IgnoreError();
  }
}

void VmBackend::TeardownSandbox(Done done) {
  if (tearing_down_) return Post(std::move(done), Status::Ok());
  tearing_down_ = true;
  oom_poll_.Reset();
  std::weak_ptr<bool> alive = alive_;
  auto finish = [this, alive, done = std::move(done)]() mutable {
    if (alive.expired()) return done(NotFoundError("container deleted"));
    sandbox_id_.clear();
    tearing_down_ = false;
    done(Status::Ok());
  };
  if (qemu_pid_ <= 0 || !agent_) {
    return StopVm(std::move(finish));
  }
  if (stopping_) {
    // StopSandbox's power-off is under way: wait for it.
    on_qemu_exit_.push_back([this, alive, finish]() mutable {
      if (!alive.expired()) CleanUp();
      finish();
    });
    return;
  }
  PowerOff([this, alive, finish]() mutable {
    if (!alive.expired()) CleanUp();
    finish();
  });
}

void VmBackend::PowerOff(std::function<void()> then) {
  // The agent answers, syncs and powers the guest off; QEMU exits by
  // itself. If it has not within kPowerOffWait, it is killed.
  std::weak_ptr<bool> alive = alive_;
  auto timer = std::make_shared<EventHandle>();
  on_qemu_exit_.push_back([timer, then = std::move(then)] {
    timer->Reset();
    then();
  });
  *timer = loop_.AddTimer(kPowerOffWait, [this, alive] {
    if (!alive.expired() && qemu_pid_ > 0) ::kill(qemu_pid_, SIGKILL);
  });
  log_.Info("pod {}: powering the VM off", sandbox_id_);
  pb::DestroySandboxRequest req;
  req.set_sandbox_id(sandbox_id_);
  agent_->Call<pb::DestroySandboxResponse>(
      "DestroySandbox", req, [this, alive](Result<pb::DestroySandboxResponse> r) {
        if (alive.expired() || r || qemu_pid_ <= 0) return;
        // The agent closes the port as it powers off, and the reply may be
        // lost with it (Unavailable): QEMU is then exiting anyway, and the
        // timer ends it if not. Any other answer refused the power-off.
        if (r.error().code() == Code::kUnavailable) return;
        log_.Warn("pod {}: DestroySandbox: {}; killing QEMU", sandbox_id_, r.error().ToString());
        ::kill(qemu_pid_, SIGKILL);
      });
}

// ---- the Sandbox API's sandbox process: QEMU ----

void VmBackend::StartSandbox(std::function<void(int)> on_exit,
                             std::function<void(Result<pid_t>)> done) {
  if (qemu_pid_ <= 0 || !agent_) {
    return loop_.Post(
        [done = std::move(done)] { done(FailedPreconditionError("the pod's VM is not running")); });
  }
  on_sandbox_exit_ = std::move(on_exit);
  loop_.Post([pid = qemu_pid_, done = std::move(done)] { done(pid); });
}

void VmBackend::StopSandbox(Done done) {
  if (qemu_pid_ > 0 && !tearing_down_ && !stopping_) {
    stopping_ = true;
    std::weak_ptr<bool> alive = alive_;
    auto stopped = [this, alive] {
      if (!alive.expired()) stopping_ = false;
    };
    if (agent_) {
      oom_poll_.Reset();
      PowerOff(std::move(stopped));
    } else {
      on_qemu_exit_.push_back(std::move(stopped));
      ::kill(qemu_pid_, SIGKILL);
    }
  }
  Post(std::move(done), Status::Ok());
}

// ---- the `delete` action ----

Status CleanUpAfterShim(const std::string& bundle, const std::string& id) {
  const std::string path = bundle + "/" + std::string(kVmRecordFile);
  auto text = ReadFile(path);
  if (!text) return Status::Ok();  // no VM recorded here
  auto record = nlohmann::json::parse(*text, nullptr, false);
  if (!record.is_object()) {
    ::unlink(path.c_str());
    return InternalError(path + ": not a JSON object");
  }
  pid_t pid = record.value("qemu_pid", 0);
  std::string run_dir = record.value("run_dir", "");
  std::string netns = record.value("netns", "");
  // Only this pod's run directory (the record may be forged, vm_backend.h).
  const std::string own_run_dir = std::string(kRunRoot) + "/" + id;
  if (!run_dir.empty() && (run_dir != own_run_dir || id.empty() || id == "." || id == ".." ||
                           id.find('/') != std::string::npos)) {
    ::unlink(path.c_str());
    return InvalidArgumentError(path + ": run_dir " + run_dir + " is not " + id +
                                "'s run directory");
  }
  // Only that QEMU: its command line names the run directory (an exited
  // one, a zombie, has none). containerd runs `delete` as soon as a server's
  // connection closes, also after an orderly Shutdown while the server is
  // still waiting for its guest to power off: give that QEMU time to end by
  // itself before killing it.
  auto running = [&] {
    auto cmdline = ReadFile("/proc/" + std::to_string(pid) + "/cmdline");
    return cmdline && (cmdline->find("hull:" + run_dir + '\0') != std::string::npos ||
                       cmdline->find(run_dir + "/agent.sock") != std::string::npos);
  };
  if (pid > 0 && !run_dir.empty()) {
    for (int i = 0; i < 300 && running(); ++i) ::usleep(10'000);
    if (running()) {
      ::kill(pid, SIGKILL);
      for (int i = 0; i < 100 && running(); ++i) ::usleep(10'000);
    }
  }
  // The tap went with QEMU; eth0's redirection stays until removed.
  UnwirePodNetwork(netns).IgnoreError();
  if (!run_dir.empty()) {
    // Its share directory only, never a tree a symlink there names.
    struct stat st;
    const std::string share = run_dir + "/share";
    if (::lstat(run_dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) &&
        ::lstat(share.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      UnmountAll(share).IgnoreError();
    }
    std::error_code ec;
    std::filesystem::remove_all(run_dir, ec);
  }
  ::unlink(path.c_str());
  return Status::Ok();
}

}  // namespace hull::shim::vm
