// SandboxState: the life of the pod sandbox containerd drives through the
// Sandbox API (containerd.runtime.sandbox.v1.Sandbox), as one enum and one
// transition table. SandboxService asks CheckSandboxTransition before each
// move; an invalid move is a FailedPrecondition, never a crash. Pure.
#pragma once

#include <string_view>

#include "base/status.h"

namespace hull::shim {

enum class SandboxState {
  kNone,      // no CreateSandbox yet
  kCreated,   // CreateSandbox done: sized, cgroup placed, backend prepared
  kReady,     // StartSandbox done: the pause process holds the namespaces
  kStopped,   // StopSandbox done, or the pause process exited
  kShutdown,  // ShutdownSandbox done: the server is ending
};

const char* SandboxStateName(SandboxState state);

// Ok when `to` may follow `from`; FailedPrecondition naming both otherwise.
//   none -> created;  created -> ready | stopped | shutdown;
//   ready -> stopped | shutdown;  stopped -> shutdown.
Status CheckSandboxTransition(SandboxState from, SandboxState to);

}  // namespace hull::shim
