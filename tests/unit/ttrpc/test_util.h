// Helpers for the ttrpc tests: a raw peer that speaks frames byte by byte on
// one end of a socket (so the tests see exactly what hull writes), frame
// builders, and an fd-leak check for fixtures. Loop thread only.
#pragma once

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>
#include <utility>

#include "base/event_loop.h"
#include "base/unique_fd.h"
#include "google/rpc/status.pb.h"
#include "tests/unit/base/fd_count.h"
#include "ttrpc/frame.h"
#include "ttrpc/frame_decoder.h"
#include "ttrpc/metadata.h"
#include "ttrpc/request.pb.h"

namespace hull::ttrpc::testing {

inline constexpr std::chrono::seconds kWait(5);
// The service the tests register and call.
inline constexpr char kEchoService[] = "test.Echo";

// Fails the test if the fixture (everything destroyed after this base) leaves
// a descriptor open. Derive from it first.
class FdLeakCheck {
 public:
  FdLeakCheck() : before_(hull::testing::CountOpenFds()) {}
  ~FdLeakCheck() { EXPECT_EQ(hull::testing::CountOpenFds(), before_) << "descriptor leaked"; }

 private:
  int before_;
};

struct SocketPair {
  UniqueFd a;
  UniqueFd b;
};

inline SocketPair MakeSocketPair() {
  int fds[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  return SocketPair{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

inline std::string MakeFrame(uint32_t id, MessageType type, uint8_t flags, std::string_view body) {
  std::string out;
  AppendFrame(&out, id, type, flags, body);
  return out;
}

inline std::string RequestBody(const std::string& service, const std::string& method,
                               const std::string& payload = {}, int64_t timeout_nano = 0,
                               const Metadata& metadata = {}) {
  ::ttrpc::Request req;
  req.set_service(service);
  req.set_method(method);
  req.set_payload(payload);
  req.set_timeout_nano(timeout_nano);
  for (const auto& [k, v] : metadata) {
    auto* kv = req.add_metadata();
    kv->set_key(k);
    kv->set_value(v);
  }
  return req.SerializeAsString();
}

inline std::string RequestFrame(uint32_t id, const std::string& service, const std::string& method,
                                const std::string& payload = {}, int64_t timeout_nano = 0,
                                const Metadata& metadata = {}, uint8_t flags = 0) {
  return MakeFrame(id, MessageType::kRequest, flags,
                   RequestBody(service, method, payload, timeout_nano, metadata));
}

struct DecodedResponse {
  Code code = Code::kOk;
  std::string message;
  std::string payload;
  bool has_status = false;
};

inline DecodedResponse ParseResponse(const std::string& body) {
  ::ttrpc::Response resp;
  EXPECT_TRUE(resp.ParseFromString(body));
  return DecodedResponse{.code = static_cast<Code>(resp.status().code()),
                         .message = resp.status().message(),
                         .payload = resp.payload(),
                         .has_status = resp.has_status()};
}

inline std::string ResponseBody(int32_t code, const std::string& message,
                                const std::string& payload) {
  ::ttrpc::Response resp;
  if (code != 0 || !message.empty()) {
    resp.mutable_status()->set_code(code);
    resp.mutable_status()->set_message(message);
  }
  resp.set_payload(payload);
  return resp.SerializeAsString();
}

// One raw end of a connection, driven by the test through the loop.
class RawPeer {
 public:
  RawPeer(EventLoop& loop, UniqueFd fd) : loop_(loop), fd_(std::move(fd)) {
    EXPECT_TRUE(SetNonBlocking(fd_.get()).ok());
  }

  int fd() const { return fd_.get(); }

  // Writes all of `bytes`, running the loop while the socket is full.
  bool Send(std::string_view bytes) {
    size_t off = 0;
    auto write_some = [&] {
      while (off < bytes.size()) {
        ssize_t n =
            ::send(fd_.get(), bytes.data() + off, bytes.size() - off, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n <= 0) return;
        off += static_cast<size_t>(n);
      }
    };
    write_some();
    if (off == bytes.size()) return true;
    EventHandle watch = loop_.WatchFd(fd_.get(), kWritable, [&](uint32_t) { write_some(); });
    return loop_.RunUntil([&] { return off == bytes.size(); }, kWait);
  }

  // The next frame from the other side, running the loop until it arrives;
  // nullopt on EOF or timeout.
  std::optional<Frame> Read() {
    std::optional<Frame> frame = decoder_.Next();
    if (frame) return frame;
    EventHandle watch = loop_.WatchFd(fd_.get(), kReadable, [&](uint32_t) { Pump(); });
    loop_.RunUntil(
        [&] {
          if (!frame) frame = decoder_.Next();
          return frame.has_value() || eof_;
        },
        kWait);
    return frame;
  }

  // Runs the loop until the other side closes; true if it did. Frames that
  // arrive first are discarded.
  bool WaitForEof() {
    EventHandle watch = loop_.WatchFd(fd_.get(), kReadable, [&](uint32_t) { Pump(); });
    return loop_.RunUntil([&] { return eof_; }, kWait);
  }

  // Reads whatever the socket holds right now, raw, without the loop.
  std::string ReadRawNow() {
    std::string out;
    char buf[4096];
    for (;;) {
      ssize_t n = ::recv(fd_.get(), buf, sizeof buf, MSG_DONTWAIT);
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
    return out;
  }

  // Runs the loop until `n` raw bytes have arrived.
  std::string ReadRaw(size_t n) {
    std::string out;
    EventHandle watch = loop_.WatchFd(fd_.get(), kReadable, [&](uint32_t) {
      char buf[4096];
      ssize_t got = ::recv(fd_.get(), buf, sizeof buf, MSG_DONTWAIT);
      if (got > 0) out.append(buf, static_cast<size_t>(got));
      if (got == 0) eof_ = true;
    });
    loop_.RunUntil([&] { return out.size() >= n || eof_; }, kWait);
    return out;
  }

  void Close() { fd_.reset(); }

 private:
  void Pump() {
    char buf[64 * 1024];
    ssize_t n = ::recv(fd_.get(), buf, sizeof buf, MSG_DONTWAIT);
    if (n == 0) eof_ = true;
    if (n > 0) decoder_.Append(std::string_view(buf, static_cast<size_t>(n)));
  }

  EventLoop& loop_;
  UniqueFd fd_;
  FrameDecoder decoder_;
  bool eof_ = false;
};

inline std::unique_ptr<EventLoop> NewLoop() {
  auto loop = EventLoop::Create();
  EXPECT_TRUE(loop.has_value());
  return std::move(*loop);
}

}  // namespace hull::ttrpc::testing
