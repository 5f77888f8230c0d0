#include "agent/container_state.h"

#include <string>

namespace hull::agent {

std::string_view StateName(ContainerState state) {
  switch (state) {
    case ContainerState::kCreating: return "creating";
    case ContainerState::kCreated: return "created";
    case ContainerState::kStarting: return "starting";
    case ContainerState::kRunning: return "running";
    case ContainerState::kPaused: return "paused";
    case ContainerState::kStopped: return "stopped";
    case ContainerState::kRemoving: return "removing";
  }
  return "unknown";
}

std::string_view OpName(ContainerOp op) {
  switch (op) {
    case ContainerOp::kStart: return "start";
    case ContainerOp::kExec: return "exec in";
    case ContainerOp::kSignal: return "signal";
    case ContainerOp::kPause: return "pause";
    case ContainerOp::kResume: return "resume";
    case ContainerOp::kUpdate: return "update";
    case ContainerOp::kStats: return "read stats of";
    case ContainerOp::kList: return "list processes of";
    case ContainerOp::kRemove: return "remove";
  }
  return "?";
}

namespace {

bool Allowed(ContainerState s, ContainerOp op) {
  using S = ContainerState;
  switch (op) {
    case ContainerOp::kStart: return s == S::kCreated;
    case ContainerOp::kExec: return s == S::kRunning;
    case ContainerOp::kSignal:
      return s == S::kCreated || s == S::kStarting || s == S::kRunning || s == S::kPaused;
    case ContainerOp::kPause: return s == S::kRunning;
    case ContainerOp::kResume: return s == S::kPaused;
    case ContainerOp::kUpdate:
    case ContainerOp::kStats:
      return s == S::kCreated || s == S::kStarting || s == S::kRunning || s == S::kPaused;
    case ContainerOp::kList: return s != S::kCreating && s != S::kRemoving;
    case ContainerOp::kRemove: return s == S::kCreated || s == S::kStopped;
  }
  return false;
}

}  // namespace

Status CheckOp(const std::string& id, ContainerState state, ContainerOp op) {
  if (Allowed(state, op)) return Status::Ok();
  std::string message = "cannot " + std::string(OpName(op)) + " container " + id + ": it is " +
                        std::string(StateName(state));
  if (op == ContainerOp::kSignal && state == ContainerState::kStopped) {
    return NotFoundError("process already finished (" + message + ")");
  }
  return FailedPreconditionError(std::move(message));
}

}  // namespace hull::agent
