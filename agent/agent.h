// hull-agent: the guest side of hull's vm backend. As PID 1 of the pod's
// micro-VM it sets the guest up (guest_init.h), finds the virtio-serial port
// `hull.agent`, and serves hull.agent.v1.Agent on it with hull's ttrpc
// library until DestroySandbox powers the guest off. It reaps every orphan
// (PID 1, or a child subreaper when run as an ordinary process for tests).
// One thread, one loop.
#pragma once

#include <chrono>
#include <string>

namespace hull::agent {

struct AgentOptions {
  // The device to serve on; empty: the virtio-serial port named `port_name`.
  std::string port_path;
  std::string port_name = "hull.agent";
  std::chrono::milliseconds port_wait{30000};
  // Set up the guest (mounts, modules, console). Default: when PID 1.
  bool init = false;
  std::string modules_list = "/etc/hull-agent.modules";
  // Power off on DestroySandbox (and on a fatal error) instead of exiting.
  // Default: when PID 1.
  bool power_off = false;
  // The OCI runtime in the guest and where the agent keeps its state
  // (ContainerOptions; the defaults are the guest image's).
  std::string runtime = "/usr/bin/crun";
  std::string runtime_root = "/run/hull/crun";
  std::string state_dir = "/run/hull/containers";
};

// Runs the agent; returns the process's exit code (it does not return after
// powering off).
int RunAgent(const AgentOptions& options);

}  // namespace hull::agent
