// FramedConnection: one connected byte stream carrying ttrpc frames, on the
// loop. Owns the descriptor, the FrameDecoder and the output buffer; reads and
// writes are nonblocking, so a slow or stuck peer never blocks the loop.
// Shared by the server (one per accepted connection) and the client.
// A socket is driven with recv()/send(); anything else (a character device
// such as a virtio-serial port or a pty, a pipe) with read()/write(), which
// those need. write() has no MSG_NOSIGNAL: a process that talks over a pipe
// ignores SIGPIPE.
//
// Lifetime: held by a shared_ptr (its loop callbacks keep it alive while they
// run, so the owner may drop it from inside a callback). Callbacks run only
// from loop events or posted tasks, never inside Send/Close/CloseAfterFlush,
// and never after Close().
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "base/event_loop.h"
#include "base/status.h"
#include "base/unique_fd.h"
#include "ttrpc/frame.h"
#include "ttrpc/frame_decoder.h"

namespace hull::ttrpc::internal {

class FramedConnection : public std::enable_shared_from_this<FramedConnection> {
 public:
  struct Callbacks {
    // Every decoded frame, in wire order; oversized ones arrive body-less.
    std::function<void(Frame)> on_frame;
    // The connection ended by itself: OK after CloseAfterFlush drained, else
    // why (peer EOF, reset, truncated frame, write error). At most once.
    std::function<void(const Status&)> on_closed;
  };

  // How the bytes move: chosen from the descriptor's type by Create.
  enum class Io { kSocket, kReadWrite };

  // Takes a connected socket or a character device; makes it nonblocking and
  // starts reading. `partial_frame_deadline` (0: none) bounds how long a
  // frame, once its first byte arrived, may take to arrive whole (an
  // oversized body counts until it has been skipped); past it the connection
  // fails with DeadlineExceeded. Time spent not reading (back-pressure) does
  // not count.
  static Result<std::shared_ptr<FramedConnection>> Create(
      EventLoop& loop, UniqueFd fd, Callbacks callbacks,
      std::chrono::nanoseconds partial_frame_deadline);

  static Result<std::shared_ptr<FramedConnection>> Create(EventLoop& loop, UniqueFd fd,
                                                          Callbacks callbacks) {
    return Create(loop, std::move(fd), std::move(callbacks), std::chrono::nanoseconds(0));
  }
  ~FramedConnection();
  FramedConnection(const FramedConnection&) = delete;
  FramedConnection& operator=(const FramedConnection&) = delete;

  // Queues one frame and writes what the socket takes now. Ignored once the
  // connection is closing or closed. The caller keeps `body` within
  // kMaxMessageSize.
  void Send(uint32_t stream_id, MessageType type, uint8_t flags, std::string_view body);
  // Stops reading; closes once queued output is written, then on_closed(OK).
  void CloseAfterFlush();
  // Closes now, dropping unsent output. No callback follows.
  void Close();

  bool open() const { return state_ == State::kOpen; }
  int fd() const { return fd_.get(); }
  size_t pending_output() const { return out_.size() - out_pos_; }

  Io io() const { return io_; }

  // Private, public only for make_shared.
  FramedConnection(EventLoop& loop, UniqueFd fd, Io io, Callbacks callbacks);

 private:
  enum class State { kOpen, kDraining, kClosed };

  void OnReadable();
  void OnWritable();
  // Writes queued output until done or EAGAIN; arms the write watch if needed.
  void Flush();
  void UpdateReadWatch();
  // Closes the socket and reports `why` on a later loop turn.
  void Fail(Status why);
  void FinishDrain();
  ssize_t ReadSome(char* data, size_t size);
  ssize_t WriteSome(const char* data, size_t size);
  // Arms the partial-frame timer when a frame is under way and reading is
  // on; disarms it otherwise.
  void UpdateFrameDeadline();
  void OnFrameDeadline(uint64_t frame_count);

  EventLoop& loop_;
  UniqueFd fd_;
  Io io_;
  Callbacks callbacks_;
  State state_ = State::kOpen;
  FrameDecoder decoder_;
  std::string out_;
  size_t out_pos_ = 0;
  bool corked_ = false;  // inside OnReadable: replies are written once at the end
  bool read_paused_ = false;
  EventHandle read_watch_;
  EventHandle write_watch_;
  std::chrono::nanoseconds partial_frame_deadline_{0};
  EventHandle frame_timer_;
  uint64_t frame_count_ = 0;  // frames delivered; tells the timer which frame it timed
};

}  // namespace hull::ttrpc::internal
