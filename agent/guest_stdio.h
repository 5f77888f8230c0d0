// GuestStdio: the standard streams of one container process in the guest,
// held by the agent for the host to drive (WriteStdin, CloseStdin,
// ReadStdout/ReadStderr, TtyWinResize). Without a terminal each stream the
// host asked for is a pipe (the process gets one end, the agent keeps the
// other); with one, the runtime hands the pty master over a console socket,
// and stdout reads the terminal's output. Reads are long-polls: a caller is
// parked until data or EOF, and data is read from the pipe only for a caller
// still listening, so none is lost to a caller gone. Loop thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "agent/long_poll.h"
#include "base/event_loop.h"
#include "base/unique_fd.h"
#include "hull/agent/v1/agent.pb.h"
#include "runtime/backend.h"

namespace hull::runtime {
class ConsoleSocket;
}

namespace hull::agent {

inline constexpr uint32_t kDefaultReadBytes = 64 * 1024;
inline constexpr uint32_t kMaxReadBytes = 1024 * 1024;

// One output stream (a pipe's read end, or a pty master shared with stdin).
class OutputStream {
 public:
  explicit OutputStream(EventLoop& loop) : loop_(loop), polls_(loop) {}
  // `fd` nonblocking, borrowed; `is_pty`: EIO means EOF (the terminal's
  // last holder closed it). An unset fd is a stream the host did not ask
  // for: EOF. `on_eof` runs once at EOF (the owner closes the descriptor).
  void Attach(int fd, bool is_pty, std::function<void()> on_eof = nullptr);
  void Read(const ttrpc::CallContext& context, uint32_t max_bytes,
            ttrpc::TypedResponder<v1::ReadStreamResponse> responder);
  // Answers every parked reader (the container is removed).
  void FailAll(const Status& status);
  bool eof() const { return eof_; }

 private:
  void Serve();
  void SetEof();

  EventLoop& loop_;
  int fd_ = -1;  // borrowed from GuestStdio
  bool is_pty_ = false;
  bool attached_ = false;
  bool eof_ = false;
  EventHandle watch_;
  LongPolls<v1::ReadStreamResponse> polls_;
  std::function<void()> on_eof_;
};

class GuestStdio {
 public:
  // Makes the pipes (or, with a terminal, the console socket in `dir`).
  static Result<std::unique_ptr<GuestStdio>> Create(EventLoop& loop, const v1::Stdio& request,
                                                    const std::string& dir);
  ~GuestStdio();
  GuestStdio(const GuestStdio&) = delete;
  GuestStdio& operator=(const GuestStdio&) = delete;

  // What the runtime hands the process: the pipes' far ends, or the console
  // socket. Valid until ProcessStarted.
  runtime::ProcessStdio ForRuntime() const;
  // The runtime has run (or failed): the agent's copies of the process's
  // ends close, so the host reads EOF when the process's own go.
  void ProcessStarted();
  // Terminal only: `on_master` runs once the runtime has handed the pty
  // master over (or failed to).
  void ReceiveMaster(std::function<void(Status)> on_master);

  bool terminal() const { return terminal_; }
  // The process has exited: stdin goes (nobody reads it any more). Output
  // descriptors close when their stream reaches EOF, so a finished process
  // holds no descriptor once the host has read everything.
  void ProcessExited();
  // How much of `data` went in (0 when the pipe is full: the host retries).
  Result<uint32_t> WriteStdin(const std::string& data);
  Status CloseStdin();
  Status Resize(uint32_t rows, uint32_t columns);
  OutputStream& stdout_stream() { return *out_; }
  OutputStream& stderr_stream() { return *err_; }
  // Answers every parked reader with `status`.
  void FailAll(const Status& status);

 private:
  explicit GuestStdio(EventLoop& loop);

  EventLoop& loop_;
  bool terminal_ = false;
  bool stdin_wanted_ = false;
  bool stdin_closed_ = false;
  // The agent's ends.
  UniqueFd stdin_w_, stdout_r_, stderr_r_, master_;
  // The process's ends, until ProcessStarted.
  UniqueFd stdin_r_, stdout_w_, stderr_w_;
  std::unique_ptr<runtime::ConsoleSocket> console_;
  std::unique_ptr<OutputStream> out_, err_;
};

}  // namespace hull::agent
