// AgentService: the hull.agent.v1.Agent methods, registered on a
// ttrpc::Server. Owns the sandbox state (one sandbox per guest). What powers
// the machine off is a constructor parameter, so tests on the host pass a
// recorder instead. Loop thread only.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "base/event_loop.h"
#include "base/status.h"
#include "hull/agent/v1/agent.pb.h"
#include "ttrpc/server.h"

namespace hull::agent {

inline constexpr char kAgentService[] = "hull.agent.v1.Agent";
inline constexpr char kAgentVersion[] = "0.1.0";

struct AgentHooks {
  // Called on a later loop turn after DestroySandbox has been answered
  // (the agent syncs and powers the guest off).
  std::function<void()> power_off;
  // Mounts the per-pod 9p share; default: mount(2) with trans=virtio.
  std::function<Status(const std::string& tag, const std::string& path)> mount_share;
  // Sets the hostname; default: sethostname(2).
  std::function<Status(const std::string& hostname)> set_hostname;
  // Configures the guest's network (CreateSandbox's `network`); default:
  // ConfigureGuestNetwork (guest_network.h).
  std::function<Status(const ::hull::agent::v1::Network& network)> configure_network;
  // Hello's host clock (ns since the epoch) and entropy (docs/vm.md,
  // "Template clones"); unset: ignored (tests and fuzzers never touch the
  // machine's clock). hull-agent sets RefreshFromHost (guest_init.h).
  std::function<Status(int64_t host_time_unix_nano, const std::string& entropy)> refresh_from_host;
  // CreateSandbox's pod_memory_max_bytes (SetPodMemoryMax, guest_init.h);
  // unset: a request that carries one is refused (tests and fuzzers never
  // write the machine's cgroups).
  std::function<Status(uint64_t bytes)> set_pod_memory_max;
};

class AgentService {
 public:
  AgentService(EventLoop& loop, AgentHooks hooks);
  AgentService(const AgentService&) = delete;
  AgentService& operator=(const AgentService&) = delete;

  // Registers the sandbox methods (Hello, CreateSandbox, DestroySandbox) on
  // `server`; the container methods are ContainerService's.
  void Register(ttrpc::Server& server);

  const std::optional<std::string>& sandbox_id() const { return sandbox_id_; }

 private:
  EventLoop& loop_;
  AgentHooks hooks_;
  std::optional<std::string> sandbox_id_;
  std::string hostname_;
  bool powering_off_ = false;
};

}  // namespace hull::agent
