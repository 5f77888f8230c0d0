#include "ttrpc/frame.h"

namespace hull::ttrpc {
namespace {

void PutU32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 24);
  p[1] = static_cast<uint8_t>(v >> 16);
  p[2] = static_cast<uint8_t>(v >> 8);
  p[3] = static_cast<uint8_t>(v);
}

uint32_t GetU32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

}  // namespace

std::array<uint8_t, kFrameHeaderSize> EncodeHeader(const FrameHeader& header) {
  std::array<uint8_t, kFrameHeaderSize> out;
  PutU32(out.data(), header.length);
  PutU32(out.data() + 4, header.stream_id);
  out[8] = header.type;
  out[9] = header.flags;
  return out;
}

FrameHeader DecodeHeader(const uint8_t* bytes) {
  return FrameHeader{
      .length = GetU32(bytes), .stream_id = GetU32(bytes + 4), .type = bytes[8], .flags = bytes[9]};
}

void AppendFrame(std::string* out, uint32_t stream_id, MessageType type, uint8_t flags,
                 std::string_view body) {
  auto header = EncodeHeader(FrameHeader{.length = static_cast<uint32_t>(body.size()),
                                         .stream_id = stream_id,
                                         .type = static_cast<uint8_t>(type),
                                         .flags = flags});
  out->append(reinterpret_cast<const char*>(header.data()), header.size());
  out->append(body);
}

Status CheckMessageSize(uint64_t length) {
  if (length <= kMaxMessageSize) return Status::Ok();
  return ResourceExhaustedError("message length " + std::to_string(length) +
                                " exceed maximum message size of " +
                                std::to_string(kMaxMessageSize));
}

}  // namespace hull::ttrpc
