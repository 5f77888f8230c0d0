// The ttrpc frame: a 10-byte header (u32 body length, u32 stream id, u8 type,
// u8 flags, all big-endian) followed by the body. Pure functions and plain
// values; no I/O, no loop. See docs/ttrpc.md for the wire format.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace hull::ttrpc {

inline constexpr size_t kFrameHeaderSize = 10;
// Largest body a peer may send or receive: "length > max" is oversized, so a
// body of exactly 4 MiB is legal.
inline constexpr uint32_t kMaxMessageSize = 4u << 20;

enum class MessageType : uint8_t {
  kRequest = 1,
  kResponse = 2,
  kData = 3,  // protocol 1.2 streaming
};

// Flag bits; their meaning depends on the message type.
inline constexpr uint8_t kFlagRemoteClosed = 0x01;  // Request, Data
inline constexpr uint8_t kFlagRemoteOpen = 0x02;    // Request
inline constexpr uint8_t kFlagNoData = 0x04;        // Data

struct FrameHeader {
  uint32_t length = 0;  // body length as declared on the wire
  uint32_t stream_id = 0;
  uint8_t type = 0;  // a MessageType, or an unknown value a peer may send
  uint8_t flags = 0;

  friend bool operator==(const FrameHeader&, const FrameHeader&) = default;
};

// A decoded frame. An oversized frame (header.length > kMaxMessageSize) comes
// out of the decoder with its body already skipped and `body` empty.
struct Frame {
  FrameHeader header;
  std::string body;

  bool oversized() const { return header.length > kMaxMessageSize; }
};

std::array<uint8_t, kFrameHeaderSize> EncodeHeader(const FrameHeader& header);
// `bytes` must hold at least kFrameHeaderSize bytes.
FrameHeader DecodeHeader(const uint8_t* bytes);

// Appends header + body to `out`; the header's length is body.size(). The
// caller keeps bodies within kMaxMessageSize (see CheckMessageSize).
void AppendFrame(std::string* out, uint32_t stream_id, MessageType type, uint8_t flags,
                 std::string_view body);

// ResourceExhausted "message length N exceed maximum message size of 4194304"
// when `length` is too big for a frame body, OK otherwise. The text is Go's.
Status CheckMessageSize(uint64_t length);

}  // namespace hull::ttrpc
