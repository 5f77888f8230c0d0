// What VmBackend's boot steps (vm_boot.cc, vm_clone.cc) share: the state of
// one PrepareSandbox from its start to CreateSandbox's answer. Private to
// the vm backend.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "hull/agent/v1/agent.pb.h"
#include "shim/backend/vm/qemu_command.h"
#include "shim/backend/vm/qmp_client.h"
#include "shim/backend/vm/vm_backend.h"
#include "shim/backend/vm/vm_template.h"

namespace hull::shim::vm {

// How long a clone has from QEMU's start to the agent's answer before hull
// gives up on its template and cold-boots the pod (a clone answers in a
// fraction of a second; the agent timeout still bounds it).
inline constexpr std::chrono::milliseconds kCloneTimeout{20'000};

// A clone's QEMU reads the template's device state from this descriptor
// (3 is the tap's); the template's QEMU writes it to the one it was given
// over QMP under this name.
inline constexpr int kCloneStateFd = 4;
inline constexpr char kStateFdName[] = "template-state";

// The first pod of a shape boots the template VM (its RAM in the build's
// file, share=on), waits for its agent's Hello (nothing of any pod is in
// the guest yet), stops it and saves its device state, then clones it.
struct VmBackend::TemplateBuilder {
  TemplateBuild build;
  pid_t pid = 0;
  std::string tsc_khz;
  std::string mac;  // the template NIC's; empty: none
  std::shared_ptr<AgentClient> agent;
  std::unique_ptr<QmpClient> qmp;
  EventHandle timer;
  Status last_error;
  ConsoleStallWatch stall_watch;
};

struct VmBackend::Boot {
  Done done;
  uint32_t vcpus = 0;
  uint64_t memory_mib = 0;
  std::string hostname;
  GuestAssets assets;
  PodNetworkSpec net;
  // The pod cgroup QEMU joins on a v1 host (SandboxRequest's).
  std::optional<std::string> pod_cgroup;
  uint64_t container_memory_mib = 0;  // the pod's containers' sum, for Update's bound
  uint64_t headroom_mib = 0;          // [vm] memory_headroom_mib, in memory_mib
  // What the guest's eth0 gets (CreateSandbox); interfaces empty: no NIC.
  ::hull::agent::v1::Network network;
  EventLoop::Clock::time_point requested;  // PrepareSandbox called
  EventLoop::Clock::time_point started;    // the pod's QEMU spawned
  EventLoop::Clock::time_point deadline;
  int64_t network_setup_us = 0;  // WireNetwork's cost on the start path
  std::chrono::milliseconds timeout{0};
  EventHandle retry;
  EventHandle retry_qmp;  // a clone's restore polls
  Status last_error;
  bool finished = false;
  // Each QEMU started for the pod (a failed clone, then a cold boot) is an
  // attempt: callbacks of an earlier one are ignored.
  uint32_t attempt = 0;
  uint32_t stalled_boots = 0;     // cold boots given up for a stalled CPU
  ConsoleStallWatch stall_watch;  // the pod VM's console
  // The pod's VM is a clone of this template (until it answers).
  std::optional<Template> clone_of;
  std::string template_key;
  std::unique_ptr<QmpClient> qmp;
  // How the pod's VM started: "cold", "clone", or "template+clone" (the
  // first pod of a shape), for the record and the logs.
  std::string how = "cold";
  std::unique_ptr<TemplateBuilder> builder;
};

}  // namespace hull::shim::vm
