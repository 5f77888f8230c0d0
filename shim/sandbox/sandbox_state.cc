#include "shim/sandbox/sandbox_state.h"

#include <string>

namespace hull::shim {
namespace {

struct Move {
  SandboxState from;
  SandboxState to;
};

constexpr Move kAllowed[] = {
    {SandboxState::kNone, SandboxState::kCreated},
    {SandboxState::kCreated, SandboxState::kReady},
    {SandboxState::kCreated, SandboxState::kStopped},
    {SandboxState::kCreated, SandboxState::kShutdown},
    {SandboxState::kReady, SandboxState::kStopped},
    {SandboxState::kReady, SandboxState::kShutdown},
    {SandboxState::kStopped, SandboxState::kShutdown},
};

}  // namespace

const char* SandboxStateName(SandboxState state) {
  switch (state) {
    case SandboxState::kNone: return "not created";
    case SandboxState::kCreated: return "created";
    case SandboxState::kReady: return "ready";
    case SandboxState::kStopped: return "stopped";
    case SandboxState::kShutdown: return "shut down";
  }
  return "unknown";
}

Status CheckSandboxTransition(SandboxState from, SandboxState to) {
  for (const Move& move : kAllowed) {
    if (move.from == from && move.to == to) return Status::Ok();
  }
  return FailedPreconditionError(std::string("sandbox is ") + SandboxStateName(from) +
                                 ", cannot become " + SandboxStateName(to));
}

}  // namespace hull::shim
