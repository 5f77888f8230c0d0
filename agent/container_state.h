// The life of a container in the guest as one state and one transition
// table: which call may run in which state. A call in the wrong state is
// FailedPrecondition naming both. Pure; any thread.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace hull::agent {

enum class ContainerState {
  kCreating,  // crun create running
  kCreated,   // init waiting for start
  kStarting,  // crun start running
  kRunning,
  kPaused,
  kStopped,   // the init has exited
  kRemoving,  // crun delete running
};

enum class ContainerOp { kStart, kExec, kSignal, kPause, kResume, kUpdate, kStats, kList, kRemove };

std::string_view StateName(ContainerState state);
std::string_view OpName(ContainerOp op);

// OK when `op` may run on container `id` in `state`; FailedPrecondition
// otherwise (kSignal on a stopped container: NotFound "process already
// finished", what containerd expects of Kill).
Status CheckOp(const std::string& id, ContainerState state, ContainerOp op);

}  // namespace hull::agent
