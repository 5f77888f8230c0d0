#include "agent/agent_service.h"

#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <utility>

#include "agent/guest_network.h"
#include "agent/system_info.h"
#include "base/file_util.h"
#include "hull/agent/v1/agent.pb.h"

namespace hull::agent {
namespace {

namespace pb = ::hull::agent::v1;

Status MountShare(const std::string& tag, const std::string& path) {
  HULL_RETURN_IF_ERROR(MakeDirs(path, 0755));
  // msize as large as virtio takes; cache=mmap keeps shared writable
  // mappings working without caching anything stale.
  const char* options = "trans=virtio,version=9p2000.L,msize=512000,cache=mmap";
  if (::mount(tag.c_str(), path.c_str(), "9p", MS_NOSUID | MS_NODEV, options) != 0) {
    return ErrnoError("mount 9p " + tag, path);
  }
  return Status::Ok();
}

Status SetHostname(const std::string& hostname) {
  if (::sethostname(hostname.data(), hostname.size()) != 0) {
    return ErrnoError("sethostname", hostname);
  }
  return Status::Ok();
}

}  // namespace

AgentService::AgentService(EventLoop& loop, AgentHooks hooks)
    : loop_(loop), hooks_(std::move(hooks)) {
  if (!hooks_.mount_share) hooks_.mount_share = MountShare;
  if (!hooks_.set_hostname) hooks_.set_hostname = SetHostname;
  if (!hooks_.configure_network) {
    hooks_.configure_network = [](const pb::Network& n) { return ConfigureGuestNetwork(n); };
  }
}

void AgentService::Register(ttrpc::Server& server) {
  server.RegisterUnary<pb::HelloRequest, pb::HelloResponse>(
      kAgentService, "Hello",
      [this](const ttrpc::CallContext&, pb::HelloRequest req,
             ttrpc::TypedResponder<pb::HelloResponse> r) {
        if (hooks_.refresh_from_host &&
            (req.host_time_unix_nano() != 0 || !req.entropy().empty())) {
          Status s = hooks_.refresh_from_host(req.host_time_unix_nano(), req.entropy());
          if (!s.ok()) return r.Fail(s.WithContext("hello"));
        }
        Result<SystemInfo> info = ReadSystemInfo();
        if (!info) return r.Fail(info.error().WithContext("hello"));
        pb::HelloResponse resp;
        resp.set_version(kAgentVersion);
        resp.set_vcpus(info->vcpus);
        resp.set_memory_bytes(info->memory_bytes);
        resp.set_memory_available_bytes(info->memory_available_bytes);
        resp.set_kernel_release(info->kernel_release);
        resp.set_pid(static_cast<uint32_t>(::getpid()));
        if (sandbox_id_) resp.set_sandbox_id(*sandbox_id_);
        resp.set_hostname(hostname_);
        r.Reply(resp);
      });

  server.RegisterUnary<pb::CreateSandboxRequest, pb::CreateSandboxResponse>(
      kAgentService, "CreateSandbox",
      [this](const ttrpc::CallContext&, pb::CreateSandboxRequest req,
             ttrpc::TypedResponder<pb::CreateSandboxResponse> r) {
        if (req.sandbox_id().empty()) {
          return r.Fail(InvalidArgumentError("create sandbox: sandbox_id is empty"));
        }
        if (sandbox_id_) {
          // A host that reconnected may ask again: the same pod is fine.
          if (*sandbox_id_ == req.sandbox_id()) return r.Reply({});
          return r.Fail(AlreadyExistsError("create sandbox " + req.sandbox_id() +
                                           ": this guest already runs sandbox " + *sandbox_id_));
        }
        if (req.share_tag().empty() != req.share_path().empty()) {
          return r.Fail(
              InvalidArgumentError("create sandbox: share_tag and share_path go together"));
        }
        if (!req.share_path().empty() && req.share_path()[0] != '/') {
          return r.Fail(InvalidArgumentError("create sandbox: share_path must be absolute"));
        }
        if (req.pod_memory_max_bytes() > 0) {
          Status s = hooks_.set_pod_memory_max
                         ? hooks_.set_pod_memory_max(req.pod_memory_max_bytes())
                         : FailedPreconditionError("this agent sets no pod memory limit");
          if (!s.ok()) {
            return r.Fail(s.WithContext("create sandbox " + req.sandbox_id() + ": pod memory"));
          }
        }
        if (!req.hostname().empty()) {
          Status s = hooks_.set_hostname(req.hostname());
          if (!s.ok()) return r.Fail(s.WithContext("create sandbox " + req.sandbox_id()));
        }
        if (req.has_network()) {
          Status s = hooks_.configure_network(req.network());
          if (!s.ok())
            return r.Fail(s.WithContext("create sandbox " + req.sandbox_id() + ": network"));
        }
        if (!req.share_tag().empty()) {
          Status s = hooks_.mount_share(req.share_tag(), req.share_path());
          if (!s.ok()) return r.Fail(s.WithContext("create sandbox " + req.sandbox_id()));
        }
        sandbox_id_ = req.sandbox_id();
        hostname_ = req.hostname();
        r.Reply({});
      });

  server.RegisterUnary<pb::DestroySandboxRequest, pb::DestroySandboxResponse>(
      kAgentService, "DestroySandbox",
      [this](const ttrpc::CallContext&, pb::DestroySandboxRequest req,
             ttrpc::TypedResponder<pb::DestroySandboxResponse> r) {
        // Without a sandbox (CreateSandbox never came, or failed) the host
        // may still want the guest gone: any id powers off then.
        if (sandbox_id_ && *sandbox_id_ != req.sandbox_id()) {
          return r.Fail(NotFoundError("destroy sandbox " + req.sandbox_id() +
                                      ": this guest runs sandbox " + *sandbox_id_));
        }
        r.Reply({});
        if (powering_off_) return;
        powering_off_ = true;
        // After this turn, when the reply has been written to the port.
        loop_.Post([this] {
          if (hooks_.power_off) hooks_.power_off();
        });
      });
}

}  // namespace hull::agent
