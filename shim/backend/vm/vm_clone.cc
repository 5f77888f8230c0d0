// VmBackend's template clones (docs/vm.md, "Template clones"): find the
// pod's shape in the template cache, build the template when the pod is
// the first of its shape, start the pod's QEMU as a copy-on-write clone and
// restore the template's device state into it over QMP. A template that is
// missing, stale, corrupted or fails in any step is logged and the pod
// cold-boots: templates never fail a pod. See vm_backend.h.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "base/file_util.h"
#include "base/spawn.h"
#include "shim/backend/vm/vm_backend.h"
#include "shim/backend/vm/vm_backend_internal.h"

namespace hull::shim::vm {

namespace pb = ::hull::agent::v1;
using namespace std::chrono_literals;

namespace {

constexpr auto kRetry = 20ms;
constexpr auto kMigrationPoll = 5ms;
// The template's NIC (a locally administered address): clones rename it to
// the pod's eth0 MAC (NetworkInterface.guest_mac).
constexpr char kTemplateMac[] = "02:68:75:6c:6c:01";

// migrate-set-capabilities' arguments: the RAM is not in the stream (it is
// the template's file), only the device state.
nlohmann::json IgnoreShared() {
  nlohmann::json capability = {{"capability", "x-ignore-shared"}, {"state", true}};
  nlohmann::json args = nlohmann::json::object();
  args["capabilities"] = nlohmann::json::array({capability});
  return args;
}

}  // namespace

void VmBackend::BootFromTemplate(std::shared_ptr<Boot> boot) {
  TemplateCache cache{std::string(kTemplateRoot), options_.vm.template_cache_mib};
  const bool nic = !boot->net.netns_path.empty();
  boot->template_key = TemplateKey(boot->assets, options_.vm, boot->vcpus, boot->memory_mib, nic);
  Result<std::optional<Template>> found = cache.Find(boot->template_key);
  if (!found) {
    log_.Warn("pod {}: {}: building it anew", sandbox_id_, found.error().ToString());
  } else if (*found) {
    boot->how = "clone";
    return StartPodVm(boot, std::move(**found));
  }
  if (options_.vm.template_cache_mib < boot->memory_mib) {
    log_.Info("pod {}: a template of {} MiB is over [vm] template_cache_mib: cold boot",
              sandbox_id_, boot->memory_mib);
    return StartPodVm(boot, std::nullopt);
  }
  Result<std::optional<TemplateBuild>> build = cache.Begin(boot->template_key);
  if (!build || !*build) {
    log_.Info("pod {}: cold boot: {}", sandbox_id_,
              build ? "another shim is building this shape's template" : build.error().ToString());
    return StartPodVm(boot, std::nullopt);
  }
  // Another shim may have built it between the lookup and the lock.
  if (Result<std::optional<Template>> again = cache.Find(boot->template_key); again && *again) {
    boot->how = "clone";
    return StartPodVm(boot, std::move(**again));
  }
  boot->builder = std::make_unique<TemplateBuilder>();
  boot->builder->build = std::move(**build);
  boot->builder->tsc_khz = HostTscKhz();
  if (nic) boot->builder->mac = kTemplateMac;
  SpawnTemplate(boot);
}

void VmBackend::SpawnTemplate(std::shared_ptr<Boot> boot) {
  TemplateBuilder& b = *boot->builder;
  const TemplateBuild& build = b.build;
  UniqueFd log(
      ::open((build.dir + "/qemu.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!log) return TemplateFailed(boot, ErrnoError("open", build.dir + "/qemu.log"));
  std::optional<GuestNic> nic;
  if (!b.mac.empty()) nic = GuestNic{.fd = -1, .mac = b.mac};
  VmPaths paths{.agent_socket = build.agent_socket(),
                .console_log = build.console_log(),
                .share_dir = build.share_dir()};
  GuestRam ram{
      .file = build.ram(), .share = true, .incoming = false, .qmp_socket = build.qmp_socket()};
  SpawnOptions spawn{
      .fds = {{1, log.get()}, {2, log.get()}},
      .parent_death_signal = SIGKILL,
      .jail = QemuJail(options_.vm,
                       {boot->assets.qemu, boot->assets.kernel, boot->assets.initramfs, build.dir},
                       QemuStarter())};
  std::vector<UniqueFd> held;
  if (spawn.jail && spawn.jail->uid != 0) {
    // QEMU writes the RAM file, its clones (other users, the same group)
    // open it: it is the jail group's, made here.
    UniqueFd file(
        ::open(ram.file.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0660));
    if (!file || ::fchown(file.get(), 0, spawn.jail->gid) != 0 || ::fchmod(file.get(), 0660) != 0) {
      return TemplateFailed(boot, ErrnoError("make", ram.file));
    }
  }
  Status rooted = RootQemu(spawn, boot->assets, build.dir, ram.file);
  if (!rooted.ok()) return TemplateFailed(boot, rooted);
  Status handed = HandQemuItsFiles(boot->assets, log.get(), paths, ram, spawn, held);
  if (!handed.ok()) return TemplateFailed(boot, handed);
  spawn.argv = QemuArgv(boot->assets, options_.vm, boot->vcpus, boot->memory_mib, paths, b.tsc_khz,
                        nic, ram);
  Result<pid_t> pid = reaper_.Spawn(spawn);
  held.clear();
  if (!pid) return TemplateFailed(boot, pid.error().WithContext("start the template's QEMU"));
  b.pid = template_pid_ = *pid;
  log_.Info("pod {}: the first pod of its shape: template QEMU pid {} in {}", sandbox_id_, b.pid,
            build.dir);
  std::weak_ptr<bool> alive = alive_;
  reaper_.Watch(b.pid, [this, alive, boot](int) {
    if (alive.expired()) return;
    if (boot->builder && boot->builder->pid > 0) {
      template_pid_ = 0;
      boot->builder->pid = 0;
      TemplateFailed(boot, UnavailableError("the template's QEMU exited"));
    }
  });
  boot->started = EventLoop::Clock::now();
  boot->deadline = boot->started + boot->timeout;
  ConnectTemplate(boot);
}

void VmBackend::ConnectTemplate(std::shared_ptr<Boot> boot) {
  TemplateBuilder& b = *boot->builder;
  if (EventLoop::Clock::now() >= boot->deadline) {
    return TemplateFailed(boot, DeadlineExceededError("the template's agent did not answer: " +
                                                      b.last_error.ToString()));
  }
  if (b.stall_watch.Stalled(b.build.console_log())) {
    return TemplateFailed(boot, UnavailableError("template: " + b.stall_watch.reason()));
  }
  std::weak_ptr<bool> alive = alive_;
  auto retry = [this, alive, boot] {
    if (!alive.expired() && boot->builder) ConnectTemplate(boot);
  };
  auto client = ttrpc::Client::Connect(loop_, b.build.agent_socket());
  if (!client) {
    b.last_error = client.error();
    b.timer = loop_.AddTimer(kRetry, retry);
    return;
  }
  b.agent = std::make_shared<AgentClient>(std::move(*client));
  pb::HelloRequest hello;  // no clock or entropy: the clones get theirs
  hello.set_host_version("hull");
  b.agent->Call<pb::HelloResponse>(
      "Hello", hello,
      [this, alive, boot, retry](Result<pb::HelloResponse> r) {
        if (alive.expired() || !boot->builder) return;
        TemplateBuilder& b = *boot->builder;
        if (!r) {
          b.last_error = r.error();
          b.agent->Close();
          b.agent.reset();
          return retry();
        }
        SaveTemplate(boot);
      },
      5s);
}

// QMP: stop the guest, then migrate its device state only (x-ignore-shared:
// the RAM is the template's file) into `state`.
void VmBackend::SaveTemplate(std::shared_ptr<Boot> boot) {
  TemplateBuilder& b = *boot->builder;
  auto qmp = QmpClient::Connect(loop_, b.build.qmp_socket());
  if (!qmp) return TemplateFailed(boot, qmp.error().WithContext("the template's QMP"));
  b.qmp = std::move(*qmp);
  std::weak_ptr<bool> alive = alive_;
  auto failed = [this, alive, boot](const Status& s) {
    if (!alive.expired() && boot->builder) TemplateFailed(boot, s);
  };
  b.qmp->Execute("stop", nlohmann::json::object(), [failed](Result<nlohmann::json> r) {
    if (!r) failed(r.error().WithContext("stop"));
  });
  b.qmp->Execute("migrate-set-capabilities", IgnoreShared(), [failed](Result<nlohmann::json> r) {
    if (!r) failed(r.error().WithContext("migrate-set-capabilities"));
  });
  // The state goes to a descriptor of hull's (QMP getfd): a jailed QEMU
  // can neither spawn `cat` nor open the file itself.
  UniqueFd state(
      ::open(b.build.state().c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!state) return TemplateFailed(boot, ErrnoError("open", b.build.state()));
  b.qmp->Execute(
      "getfd", {{"fdname", kStateFdName}},
      [failed](Result<nlohmann::json> r) {
        if (!r) failed(r.error().WithContext("getfd"));
      },
      state.get());
  nlohmann::json uri = nlohmann::json::object();
  uri["uri"] = std::string("fd:") + kStateFdName;
  b.qmp->Execute("migrate", uri, [this, alive, boot, failed](Result<nlohmann::json> r) {
    if (alive.expired() || !boot->builder) return;
    if (!r) return failed(r.error().WithContext("migrate"));
    WaitTemplateSaved(boot);
  });
}

void VmBackend::WaitTemplateSaved(std::shared_ptr<Boot> boot) {
  std::weak_ptr<bool> alive = alive_;
  boot->builder->qmp->Execute(
      "query-migrate", nlohmann::json::object(), [this, alive, boot](Result<nlohmann::json> r) {
        if (alive.expired() || !boot->builder) return;
        TemplateBuilder& b = *boot->builder;
        if (!r) return TemplateFailed(boot, r.error().WithContext("query-migrate"));
        std::string status = r->is_object() ? r->value("status", "") : "";
        if (status == "failed" || status == "cancelled") {
          return TemplateFailed(boot, InternalError("saving the template's state: " + status));
        }
        if (status != "completed") {
          b.timer = loop_.AddTimer(kMigrationPoll, [this, alive, boot] {
            if (!alive.expired() && boot->builder) WaitTemplateSaved(boot);
          });
          return;
        }
        // The guest is stopped and its RAM is in the file: QEMU can go.
        KillTemplate();
        std::unique_ptr<TemplateBuilder> builder = std::move(boot->builder);
        auto built = (TemplateCache{std::string(kTemplateRoot), options_.vm.template_cache_mib})
                         .Commit(std::move(builder->build), builder->tsc_khz, builder->mac);
        if (!built) {
          log_.Warn("pod {}: the template: {}: cold boot", sandbox_id_, built.error().ToString());
          return StartPodVm(boot, std::nullopt);
        }
        auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(EventLoop::Clock::now() -
                                                                        boot->started);
        log_.Info("pod {}: template {} ready after {} ms", sandbox_id_, built->dir, ms.count());
        boot->how = "template+clone";
        StartPodVm(boot, std::move(*built));
      });
}

void VmBackend::KillTemplate() {
  if (template_pid_ <= 0) return;
  ::kill(template_pid_, SIGKILL);
  reaper_.Discard(template_pid_);
  template_pid_ = 0;
}

void VmBackend::TemplateFailed(std::shared_ptr<Boot> boot, const Status& status) {
  if (!boot->builder) return;
  std::unique_ptr<TemplateBuilder> builder = std::move(boot->builder);
  builder->timer.Reset();
  if (builder->agent) builder->agent->Close();
  builder->qmp.reset();
  KillTemplate();
  std::error_code ec;
  std::filesystem::remove_all(builder->build.dir, ec);
  log_.Warn("pod {}: building the template failed ({}): cold boot", sandbox_id_, status.ToString());
  if (boot->finished) return;
  boot->how = "cold";
  StartPodVm(boot, std::nullopt);
}

// QMP on the clone (started with -incoming defer): x-ignore-shared, as the
// template was saved, then the template's device state; QEMU runs the guest
// once it is loaded, and the agent is already listening.
void VmBackend::RestoreClone(std::shared_ptr<Boot> boot) {
  if (EventLoop::Clock::now() >= boot->deadline) {
    return CloneFailed(boot, DeadlineExceededError("the clone's QMP socket did not appear"));
  }
  std::weak_ptr<bool> alive = alive_;
  auto qmp = QmpClient::Connect(loop_, run_dir_ + "/qmp.sock");
  if (!qmp) {
    boot->retry = loop_.AddTimer(kRetry, [this, alive, boot, attempt = boot->attempt] {
      if (!alive.expired() && boot->attempt == attempt) RestoreClone(boot);
    });
    return;
  }
  boot->qmp = std::move(*qmp);
  auto failed = [this, alive, boot, attempt = boot->attempt](const Status& s) {
    if (!alive.expired() && !boot->finished && boot->attempt == attempt) CloneFailed(boot, s);
  };
  boot->qmp->Execute("migrate-set-capabilities", IgnoreShared(),
                     [failed](Result<nlohmann::json> r) {
                       if (!r) failed(r.error().WithContext("migrate-set-capabilities"));
                     });
  // QEMU reads the state from the descriptor StartPodVm gave it.
  nlohmann::json uri = nlohmann::json::object();
  uri["uri"] = "fd:" + std::to_string(kCloneStateFd);
  boot->qmp->Execute(
      "migrate-incoming", uri,
      [this, alive, boot, failed, attempt = boot->attempt](Result<nlohmann::json> r) {
        if (!r) return failed(r.error().WithContext("migrate-incoming"));
        if (!alive.expired() && boot->attempt == attempt) WaitCloneRestored(boot);
      });
  // The agent's socket is QEMU's: connect (and ask Hello) while the state
  // loads; the guest answers once it runs.
  Connect(boot);
}

// The template was saved stopped, so its clone stays paused once the state
// is in: `cont` when the incoming migration has completed.
void VmBackend::WaitCloneRestored(std::shared_ptr<Boot> boot) {
  if (!boot->qmp) return;
  std::weak_ptr<bool> alive = alive_;
  boot->qmp->Execute(
      "query-migrate", nlohmann::json::object(),
      [this, alive, boot, attempt = boot->attempt](Result<nlohmann::json> r) {
        if (alive.expired() || boot->finished || boot->attempt != attempt) return;
        if (!r) return CloneFailed(boot, r.error().WithContext("query-migrate"));
        std::string status = r->is_object() ? r->value("status", "") : "";
        if (status == "failed" || status == "cancelled") {
          return CloneFailed(boot, InternalError("restoring the template's state: " + status));
        }
        if (status != "completed") {
          boot->retry_qmp = loop_.AddTimer(kMigrationPoll, [this, alive, boot, attempt] {
            if (!alive.expired() && boot->attempt == attempt) WaitCloneRestored(boot);
          });
          return;
        }
        boot->qmp->Execute("cont", nlohmann::json::object(),
                           [this, alive, boot, attempt](Result<nlohmann::json> c) {
                             if (alive.expired() || boot->finished || boot->attempt != attempt) {
                               return;
                             }
                             if (!c) CloneFailed(boot, c.error().WithContext("cont"));
                           });
      });
}

void VmBackend::CloneFailed(std::shared_ptr<Boot> boot, const Status& status) {
  if (boot->finished || !boot->clone_of) return;
  log_.Warn("pod {}: the clone of {} failed ({}); the template is removed: cold boot", sandbox_id_,
            boot->clone_of->dir, status.ToString());
  TemplateCache{std::string(kTemplateRoot), options_.vm.template_cache_mib}.Remove(
      boot->template_key);
  ++boot->attempt;  // what the clone's steps still have in flight is stale
  boot->clone_of.reset();
  boot->qmp.reset();
  boot->retry.Reset();
  boot->retry_qmp.Reset();
  boot->how = "cold";
  std::weak_ptr<bool> alive = alive_;
  StopVm([this, alive, boot] {
    if (alive.expired() || boot->finished) return;
    StartPodVm(boot, std::nullopt);
  });
}

}  // namespace hull::shim::vm
