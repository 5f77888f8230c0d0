// Pump: see pump_internal.h.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "shim/stdio/pump_internal.h"

namespace hull::shim::stdio {
namespace {
constexpr size_t kChunk = 16 * 1024;
// Reads per readiness callback: a busy stream yields to the others after this.
constexpr int kReadsPerTurn = 8;
}  // namespace

std::unique_ptr<Pump> Pump::Start(EventLoop& loop, std::string name, int source, int sink,
                                  Done done, size_t buffer_limit) {
  std::unique_ptr<Pump> pump(
      new Pump(loop, std::move(name), source, sink, std::move(done), buffer_limit));
  pump->WatchSource();
  return pump;
}

void Pump::Finish() {
  source_done_ = true;
  read_watch_.Reset();
  MaybeDone();
}

void Pump::WatchSource() {
  read_watch_ = loop_.WatchFd(source_, kReadable, [this](uint32_t) { OnReadable(); });
}

void Pump::OnReadable() {
  char chunk[kChunk];
  for (int i = 0; i < kReadsPerTurn; ++i) {
    size_t room = limit_ - std::min(limit_, buffered());
    if (room == 0) {
      // The sink is behind: leave the rest in the writer's pipe until Flush
      // has made room.
      read_watch_.Reset();
      return;
    }
    ssize_t n = ::read(source_, chunk, std::min(sizeof chunk, room));
    if (n > 0) {
      Write(chunk, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    // A pty master reads EIO once the last slave descriptor is closed: that
    // is its EOF, not an error.
    if (n < 0 && errno != EIO) RecordError(ErrnoError("read", name_), errno);
    source_done_ = true;
    read_watch_.Reset();
    MaybeDone();
    return;
  }
}

void Pump::OnWritable() {
  Flush();
}

void Pump::Write(const char* data, size_t size) {
  if (sink_failed_) return;
  if (buffered() == 0) {
    while (size > 0) {
      ssize_t n = ::write(sink_, data, size);
      if (n > 0) {
        data += n;
        size -= static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n == 0 || errno == EAGAIN || errno == EWOULDBLOCK) break;
      FailSink(errno);
      return;
    }
    if (size == 0) return;
  }
  if (pending_offset_ > 0) {
    pending_.erase(0, pending_offset_);
    pending_offset_ = 0;
  }
  pending_.append(data, size);
  if (!write_watch_.active()) {
    write_watch_ = loop_.WatchFd(sink_, kWritable, [this](uint32_t) { OnWritable(); });
  }
}

void Pump::Flush() {
  while (buffered() > 0) {
    ssize_t n = ::write(sink_, pending_.data() + pending_offset_, buffered());
    if (n > 0) {
      pending_offset_ += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n == 0 || errno == EAGAIN || errno == EWOULDBLOCK) return;  // the write watch stays
    FailSink(errno);
    return;
  }
  // Give the memory back: most of the time a stream needs no buffer at all.
  std::string().swap(pending_);
  pending_offset_ = 0;
  write_watch_.Reset();
  if (!source_done_ && !read_watch_.active()) WatchSource();
  MaybeDone();
}

void Pump::ReportFirstErrorTo(const std::function<void(const Status&)>& on_error,
                              const std::string& container_id, const char* stream) {
  if (!on_error) return;
  OnFirstError([on_error, container_id, stream](const Status& error, int err) {
    on_error(Status(error.code(), "container " + container_id + ": " + stream + ": " +
                                      error.message() + " (errno " + std::to_string(err) +
                                      "); the rest of this stream's output is discarded"));
  });
}

void Pump::RecordError(Status status, int err) {
  if (!error_.ok()) return;
  error_ = std::move(status);
  if (on_first_error_) on_first_error_(error_, err);
}

void Pump::FailSink(int err) {
  RecordError(ErrnoError(err, "write", name_), err);
  sink_failed_ = true;
  std::string().swap(pending_);
  pending_offset_ = 0;
  write_watch_.Reset();
  if (!source_done_ && !read_watch_.active()) WatchSource();
  MaybeDone();
}

void Pump::MaybeDone() {
  if (!source_done_ || buffered() > 0 || !done_ || done_timer_.active()) return;
  // Deferred to a callback of our own, so Finish() never calls back into its
  // caller and the owner may destroy the Pump inside `done`.
  done_timer_ = loop_.AddTimer(std::chrono::nanoseconds(0), [this] {
    Done done = std::exchange(done_, nullptr);
    done(error_);  // the argument is copied before the owner can destroy us
  });
}

}  // namespace hull::shim::stdio
