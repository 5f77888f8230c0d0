// Process: one process of a container, the init or an exec, with its state
// machine, exit record, stdio and the Wait calls parked on it. Owned by its
// Container. Loop thread only.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "containerd/task/v2/shim.pb.h"
#include "google/protobuf/timestamp.pb.h"
#include "shim/stdio/process_io.h"
#include "ttrpc/call.h"

namespace hull::shim {

enum class ProcessState { kCreated, kRunning, kPausing, kPaused, kStopped, kDeleted };

std::string_view ProcessStateName(ProcessState state);

// The one transition table: FailedPrecondition, naming both states, for a
// move it does not allow.
Status CheckTransition(ProcessState from, ProcessState to);

// Go's zero time, which containerd expects in exited_at for a live process.
google::protobuf::Timestamp ZeroTime();
google::protobuf::Timestamp NowTime();

class Process {
 public:
  Process(std::string container_id, std::string exec_id, StdioConfig stdio)
      : container_id_(std::move(container_id)),
        exec_id_(std::move(exec_id)),
        stdio_(std::move(stdio)) {}

  bool is_init() const { return exec_id_.empty(); }
  const std::string& container_id() const { return container_id_; }
  const std::string& exec_id() const { return exec_id_; }
  // The id containerd uses in events: the exec id, or the container id.
  const std::string& event_id() const { return is_init() ? container_id_ : exec_id_; }
  const StdioConfig& stdio() const { return stdio_; }

  ProcessState state() const { return state_; }
  Status TransitionTo(ProcessState next);
  bool exited() const {
    return state_ == ProcessState::kStopped || state_ == ProcessState::kDeleted;
  }
  // Running as far as its container is concerned: started and not exited.
  bool live() const {
    return state_ == ProcessState::kRunning || state_ == ProcessState::kPausing ||
           state_ == ProcessState::kPaused;
  }

  pid_t pid() const { return pid_; }
  void set_pid(pid_t pid) { pid_ = pid; }
  uint32_t exit_status() const { return exit_status_; }
  const google::protobuf::Timestamp& exited_at() const { return exited_at_; }

  // Records the exit: state Stopped, status, time.
  void RecordExit(int exit_status);

  // Parks a Wait call; answered by AnswerWaiters() once the exit is published.
  void AddWaiter(ttrpc::TypedResponder<containerd::task::v2::WaitResponse> waiter);
  void AnswerWaiters();

  ProcessIo* io() const { return io_.get(); }
  void set_io(std::unique_ptr<ProcessIo> io) { io_ = std::move(io); }
  std::unique_ptr<ProcessIo> take_io() { return std::move(io_); }

  // Exit ordering: an exit reaped before the start event was queued waits
  // here until it has been.
  bool start_published = false;
  // A Start under way. An exec's (stdio, then the runtime): the init's exit
  // waits for it like for a live exec (runsc starts the process before
  // `runsc exec --detach` returns). The init's (the runtime's `start`): an
  // exit meanwhile waits for the start event instead of being reported as a
  // kill before start.
  bool start_in_flight = false;
  std::optional<int> exit_before_start;
  // TaskExit has been queued and Wait calls answered.
  bool exit_published = false;
  // An exec's OCI Process JSON, kept from Exec until its Start.
  std::string spec_json;

 private:
  std::string container_id_;
  std::string exec_id_;
  StdioConfig stdio_;
  ProcessState state_ = ProcessState::kCreated;
  pid_t pid_ = 0;
  uint32_t exit_status_ = 0;
  google::protobuf::Timestamp exited_at_ = ZeroTime();
  std::unique_ptr<ProcessIo> io_;
  std::vector<ttrpc::TypedResponder<containerd::task::v2::WaitResponse>> waiters_;
};

}  // namespace hull::shim
