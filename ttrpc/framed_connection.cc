#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <utility>

#include "ttrpc/framed_connection_internal.h"

namespace hull::ttrpc::internal {
namespace {

// Minimum room offered to each read; the decoder's buffer grows past it for
// large frames.
constexpr size_t kReadChunk = 16 * 1024;
// Bound on reads per readiness event, so one busy peer cannot starve
// the others on the loop.
constexpr int kMaxReadsPerEvent = 16;
// A peer that sends requests but does not read the replies stops being read
// once this much output waits for it; reading resumes when it has drained.
constexpr size_t kPauseReadingAt = 8u << 20;
// Compaction thresholds of the output buffer.
constexpr size_t kCompactOutputAt = 64 * 1024;

}  // namespace

Result<std::shared_ptr<FramedConnection>> FramedConnection::Create(
    EventLoop& loop, UniqueFd fd, Callbacks callbacks,
    std::chrono::nanoseconds partial_frame_deadline) {
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return ErrnoError("ttrpc: fstat connection");
  Io io = S_ISSOCK(st.st_mode) ? Io::kSocket : Io::kReadWrite;
  HULL_RETURN_IF_ERROR(SetNonBlocking(fd.get()));
  auto conn = std::make_shared<FramedConnection>(loop, std::move(fd), io, std::move(callbacks));
  conn->partial_frame_deadline_ = partial_frame_deadline;
  conn->UpdateReadWatch();
  return conn;
}

FramedConnection::FramedConnection(EventLoop& loop, UniqueFd fd, Io io, Callbacks callbacks)
    : loop_(loop), fd_(std::move(fd)), io_(io), callbacks_(std::move(callbacks)) {}

ssize_t FramedConnection::ReadSome(char* data, size_t size) {
  if (io_ == Io::kSocket) return ::recv(fd_.get(), data, size, MSG_DONTWAIT);
  return ::read(fd_.get(), data, size);
}

ssize_t FramedConnection::WriteSome(const char* data, size_t size) {
  if (io_ == Io::kSocket) return ::send(fd_.get(), data, size, MSG_DONTWAIT | MSG_NOSIGNAL);
  return ::write(fd_.get(), data, size);
}

FramedConnection::~FramedConnection() = default;

void FramedConnection::UpdateReadWatch() {
  bool want = state_ == State::kOpen && !read_paused_;
  if (want && !read_watch_.active()) {
    // The watch holds a raw pointer: it is dropped with (or before) this object.
    read_watch_ = loop_.WatchFd(fd_.get(), kReadable, [this](uint32_t) { OnReadable(); });
  } else if (!want) {
    read_watch_.Reset();
  }
}

void FramedConnection::OnReadable() {
  auto self = shared_from_this();  // on_frame may drop the owner's reference
  corked_ = true;
  for (int i = 0; i < kMaxReadsPerEvent && state_ == State::kOpen && !read_paused_; ++i) {
    std::span<char> room = decoder_.PrepareAppend(kReadChunk);
    ssize_t n = ReadSome(room.data(), room.size());
    // A pty's master reads EIO once the other side is closed: that is EOF.
    if (n < 0 && errno == EIO && io_ == Io::kReadWrite) n = 0;
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      Fail(ErrnoError("ttrpc: read"));
      break;
    }
    if (n == 0) {
      Fail(decoder_.mid_frame()
               ? UnavailableError("ttrpc: connection closed in the middle of a frame")
               : UnavailableError("ttrpc: closed"));
      break;
    }
    decoder_.CommitAppend(static_cast<size_t>(n));
    while (state_ == State::kOpen) {
      std::optional<Frame> frame = decoder_.Next();
      if (!frame) break;
      ++frame_count_;
      frame_timer_.Reset();  // the next frame gets a deadline of its own
      callbacks_.on_frame(std::move(*frame));
    }
    if (static_cast<size_t>(n) < room.size()) break;  // drained the socket
  }
  corked_ = false;
  UpdateFrameDeadline();
  if (state_ != State::kClosed && pending_output() > 0) Flush();
}

void FramedConnection::Send(uint32_t stream_id, MessageType type, uint8_t flags,
                            std::string_view body) {
  if (state_ != State::kOpen) return;
  AppendFrame(&out_, stream_id, type, flags, body);
  if (!corked_ && !write_watch_.active()) Flush();
  if (state_ == State::kOpen && !read_paused_ && pending_output() > kPauseReadingAt) {
    read_paused_ = true;
    UpdateReadWatch();
    UpdateFrameDeadline();
  }
}

void FramedConnection::Flush() {
  while (pending_output() > 0) {
    ssize_t n = WriteSome(out_.data() + out_pos_, pending_output());
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      Fail(ErrnoError("ttrpc: write"));
      return;
    }
    out_pos_ += static_cast<size_t>(n);
  }
  if (pending_output() == 0) {
    out_.clear();
    out_pos_ = 0;
    if (out_.capacity() > kCompactOutputAt) out_.shrink_to_fit();
    write_watch_.Reset();
    if (read_paused_) {
      read_paused_ = false;
      UpdateReadWatch();
      UpdateFrameDeadline();
    }
    if (state_ == State::kDraining) FinishDrain();
    return;
  }
  if (out_pos_ > kCompactOutputAt && out_pos_ > out_.size() / 2) {
    out_.erase(0, out_pos_);
    out_pos_ = 0;
  }
  if (!write_watch_.active()) {
    write_watch_ = loop_.WatchFd(fd_.get(), kWritable, [this](uint32_t) { OnWritable(); });
  }
}

void FramedConnection::OnWritable() {
  auto self = shared_from_this();
  Flush();
}

void FramedConnection::CloseAfterFlush() {
  if (state_ != State::kOpen) return;
  state_ = State::kDraining;
  UpdateReadWatch();
  if (pending_output() == 0) FinishDrain();
}

void FramedConnection::UpdateFrameDeadline() {
  bool want = partial_frame_deadline_.count() > 0 && state_ == State::kOpen && !read_paused_ &&
              decoder_.mid_frame();
  if (!want) {
    frame_timer_.Reset();
    return;
  }
  if (frame_timer_.active()) return;
  // The timer holds a raw pointer: it is dropped with (or before) this object.
  frame_timer_ = loop_.AddTimer(partial_frame_deadline_,
                                [this, count = frame_count_] { OnFrameDeadline(count); });
}

void FramedConnection::OnFrameDeadline(uint64_t frame_count) {
  auto self = shared_from_this();
  frame_timer_.Reset();
  // Bytes may be waiting behind a busy loop turn: read them before judging.
  OnReadable();
  if (state_ != State::kOpen || frame_count_ != frame_count || !decoder_.mid_frame()) return;
  Fail(DeadlineExceededError(
      "ttrpc: partial frame not completed within " +
      std::to_string(
          std::chrono::duration_cast<std::chrono::milliseconds>(partial_frame_deadline_).count()) +
      " ms"));
}

void FramedConnection::FinishDrain() {
  // Every reply is written. Closing a unix socket that still has unread
  // input resets the peer (ECONNRESET), which can cost it replies it has not
  // read yet (containerd then fails a ShutdownSandbox with "ttrpc: closed"):
  // say we are done writing, then drop what the peer sent meanwhile.
  if (io_ == Io::kSocket && fd_) {
    ::shutdown(fd_.get(), SHUT_WR);
    char discard[4096];
    for (int i = 0; i < 256 && ReadSome(discard, sizeof discard) > 0; ++i) {
    }
  }
  Fail(Status::Ok());
}

void FramedConnection::Close() {
  state_ = State::kClosed;
  callbacks_.on_closed = nullptr;
  read_watch_.Reset();
  write_watch_.Reset();
  frame_timer_.Reset();
  fd_.reset();
}

void FramedConnection::Fail(Status why) {
  if (state_ == State::kClosed) return;
  state_ = State::kClosed;
  read_watch_.Reset();
  write_watch_.Reset();
  frame_timer_.Reset();
  fd_.reset();
  out_.clear();
  out_.shrink_to_fit();
  out_pos_ = 0;
  // Reported on a later turn so that no owner method is re-entered.
  loop_.Post([weak = weak_from_this(), why = std::move(why)] {
    auto self = weak.lock();
    if (self == nullptr || self->callbacks_.on_closed == nullptr) return;
    auto on_closed = std::move(self->callbacks_.on_closed);
    self->callbacks_.on_closed = nullptr;
    on_closed(why);
  });
}

}  // namespace hull::ttrpc::internal
