// Pump: copies bytes from one nonblocking descriptor to another on the event
// loop (container pipe -> FIFO or file, stdin FIFO -> container pipe, pty
// master <-> FIFO). It never blocks: what the sink cannot take yet waits in a
// bounded buffer, and while that buffer is full the pump stops reading, so a
// writer feels backpressure through its own pipe, exactly as if it wrote to
// the FIFO itself, and the shim's memory stays bounded.
// The Pump borrows both descriptors; its owner keeps them open for the Pump's
// whole life. Loop thread only.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "base/event_loop.h"
#include "base/status.h"

namespace hull::shim::stdio {

class Pump {
 public:
  using Done = std::function<void(Status)>;
  // Enough to ride out a reader that is briefly slow, small enough that a pod
  // with many idle streams costs little (the buffer is freed once drained).
  static constexpr size_t kDefaultBufferLimit = 128 * 1024;

  // Starts copying `source` to `sink` (both must be O_NONBLOCK; a regular
  // file is fine as a sink). `name` labels errors ("stdout").
  // `done` runs once, always from a loop callback of the Pump's own (never
  // inside a call into it): when the source reached EOF (or Finish was
  // called) and everything read has been written. It carries OK, or the first
  // read or write error. After a write error the pump keeps reading and
  // discarding until EOF, so the writer is never left blocked on a full pipe.
  // The owner may destroy the Pump inside `done`.
  static std::unique_ptr<Pump> Start(EventLoop& loop, std::string name, int source, int sink,
                                     Done done, size_t buffer_limit = kDefaultBufferLimit);
  ~Pump() = default;
  Pump(const Pump&) = delete;
  Pump& operator=(const Pump&) = delete;

  // Stops reading; what is already buffered is still written, then `done`.
  void Finish();

  // Told about the first read or write error when it happens (a failing sink
  // would otherwise be reported only at the stream's end, if ever), with the
  // errno (0 if none). Runs inside a loop callback of the Pump's: it must not
  // destroy the Pump.
  void OnFirstError(std::function<void(const Status&, int err)> cb) {
    on_first_error_ = std::move(cb);
  }

  // OnFirstError for a container's stream: `on_error` gets "container <id>:
  // <stream>: <error> (errno N); the rest ... is discarded". No-op when
  // `on_error` is empty. Shared by the pipe and terminal cases.
  void ReportFirstErrorTo(const std::function<void(const Status&)>& on_error,
                          const std::string& container_id, const char* stream);

  size_t buffered() const { return pending_.size() - pending_offset_; }

 private:
  Pump(EventLoop& loop, std::string name, int source, int sink, Done done, size_t limit)
      : loop_(loop),
        name_(std::move(name)),
        source_(source),
        sink_(sink),
        done_(std::move(done)),
        limit_(limit) {}

  void WatchSource();
  void OnReadable();
  void OnWritable();
  // Writes `data` after whatever is pending; keeps the rest.
  void Write(const char* data, size_t size);
  // Writes pending bytes until the sink would block or they are gone.
  void Flush();
  void FailSink(int err);
  void RecordError(Status status, int err);
  void MaybeDone();

  EventLoop& loop_;
  const std::string name_;
  const int source_;
  const int sink_;
  Done done_;
  const size_t limit_;

  std::string pending_;  // bytes read but not yet written, from pending_offset_
  size_t pending_offset_ = 0;
  bool source_done_ = false;  // EOF, read error, or Finish
  bool sink_failed_ = false;  // a write failed: discard from now on
  Status error_;
  std::function<void(const Status&, int)> on_first_error_;
  EventHandle read_watch_;
  EventHandle write_watch_;
  EventHandle done_timer_;
};

}  // namespace hull::shim::stdio
