#include "shim/process.h"

#include <chrono>

namespace hull::shim {

std::string_view ProcessStateName(ProcessState state) {
  switch (state) {
    case ProcessState::kCreated: return "created";
    case ProcessState::kRunning: return "running";
    case ProcessState::kPausing: return "pausing";
    case ProcessState::kPaused: return "paused";
    case ProcessState::kStopped: return "stopped";
    case ProcessState::kDeleted: return "deleted";
  }
  return "unknown";
}

Status CheckTransition(ProcessState from, ProcessState to) {
  using S = ProcessState;
  bool allowed = false;
  switch (from) {
    case S::kCreated: allowed = to == S::kRunning || to == S::kStopped || to == S::kDeleted; break;
    case S::kRunning: allowed = to == S::kPausing || to == S::kStopped; break;
    case S::kPausing: allowed = to == S::kPaused || to == S::kRunning || to == S::kStopped; break;
    case S::kPaused: allowed = to == S::kRunning || to == S::kStopped; break;
    case S::kStopped: allowed = to == S::kDeleted; break;
    case S::kDeleted: allowed = false; break;
  }
  if (allowed) return Status::Ok();
  return FailedPreconditionError(std::string("process is ") + std::string(ProcessStateName(from)) +
                                 ", cannot become " + std::string(ProcessStateName(to)));
}

google::protobuf::Timestamp ZeroTime() {
  google::protobuf::Timestamp t;
  t.set_seconds(-62135596800);  // 0001-01-01T00:00:00Z
  return t;
}

google::protobuf::Timestamp NowTime() {
  auto now = std::chrono::system_clock::now().time_since_epoch();
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now).count();
  google::protobuf::Timestamp t;
  t.set_seconds(ns / 1000000000);
  t.set_nanos(static_cast<int32_t>(ns % 1000000000));
  return t;
}

Status Process::TransitionTo(ProcessState next) {
  HULL_RETURN_IF_ERROR(CheckTransition(state_, next));
  state_ = next;
  return Status::Ok();
}

void Process::RecordExit(int exit_status) {
  state_ = ProcessState::kStopped;
  exit_status_ = static_cast<uint32_t>(exit_status);
  exited_at_ = NowTime();
}

void Process::AddWaiter(ttrpc::TypedResponder<containerd::task::v2::WaitResponse> waiter) {
  // Waits whose caller is gone (connection closed, deadline passed) are
  // dropped here, so abandoned calls do not pile up until the exit.
  std::erase_if(waiters_, [](const auto& w) { return !w.active(); });
  waiters_.push_back(std::move(waiter));
}

void Process::AnswerWaiters() {
  containerd::task::v2::WaitResponse response;
  response.set_exit_status(exit_status_);
  *response.mutable_exited_at() = exited_at_;
  auto waiters = std::move(waiters_);
  waiters_.clear();
  for (auto& w : waiters) w.Reply(response);
}

}  // namespace hull::shim
