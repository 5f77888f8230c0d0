// The spawner's wire format (base/spawner.h): messages on SOCK_SEQPACKET
// sockets, one request or reply per message, descriptors as SCM_RIGHTS.
// Integers are host-order (both ends are the same binary on the same host);
// every read is bounds-checked, since the spawner must not trust the server.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/fd_passing.h"
#include "base/spawn.h"
#include "base/status.h"
#include "base/unique_fd.h"

namespace hull::spawner_wire {

inline constexpr size_t kMaxMessage = 128 * 1024;
inline constexpr size_t kMaxFds = kMaxPassedFds;

enum RequestKind : uint8_t { kSpawn = 1, kEntry = 2, kCall = 3 };

class Writer {
 public:
  void U8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void U32(uint32_t v) { out_.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void I32(int32_t v) { out_.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void Str(std::string_view s) {
    U32(static_cast<uint32_t>(s.size()));
    out_.append(s);
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

// Reads fields off a message; any field past the end fails the whole read.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool U8(uint8_t& v);
  bool U32(uint32_t& v);
  bool I32(int32_t& v);
  bool Str(std::string& v);
  bool done() const { return in_.empty(); }

 private:
  std::string_view in_;
};

// SpawnOptions without the parent descriptors, which go as SCM_RIGHTS in the
// order of `options.fds`.
std::string EncodeSpawn(const SpawnOptions& options);
// The inverse; `fds` are the received descriptors, mapped in order.
Result<SpawnOptions> DecodeSpawn(Reader& reader, const std::vector<UniqueFd>& fds);

std::string EncodeReply(const Result<int32_t>& result);
Result<int32_t> DecodeReply(std::string_view message);
// A kCall reply: the entry's data (its descriptors travel as SCM_RIGHTS), or
// its error.
std::string EncodeCallReply(const Result<std::string>& result);
Result<std::string> DecodeCallReply(std::string_view message);

// One message with `fds` attached. Blocking unless the socket is not.
Status SendMessage(int sock, std::string_view message, const std::vector<int>& fds);
// One message and its descriptors (O_CLOEXEC). An empty message with no
// error is EOF; on a non-blocking socket with nothing to read, would_block.
struct Received {
  std::string message;
  std::vector<UniqueFd> fds;
  bool eof = false;
  bool would_block = false;
};
Result<Received> ReceiveMessage(int sock);

}  // namespace hull::spawner_wire
