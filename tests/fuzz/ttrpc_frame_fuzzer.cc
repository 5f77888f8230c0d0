// The ttrpc frame decoder and request envelope: bytes as a peer sends them,
// fed in pieces whose sizes the input chooses; every frame's body is
// decoded as a Request and the reply encoded and decoded back.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ttrpc/envelope_internal.h"
#include "ttrpc/frame_decoder.h"

using hull::InvalidArgumentError;
using hull::Result;
using hull::Status;
using namespace hull::ttrpc;
using hull::ttrpc::internal::RequestEnvelope;
namespace envelope = hull::ttrpc::internal;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // The first byte picks the read size, as nonblocking reads would cut.
  size_t chunk = 1 + data[0] % 64;
  std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  FrameDecoder decoder;
  for (size_t off = 0; off < bytes.size(); off += chunk) {
    decoder.Append(bytes.substr(off, chunk));
    while (std::optional<Frame> frame = decoder.Next()) {
      if (frame->oversized()) continue;
      Result<RequestEnvelope> request = envelope::DecodeRequest(frame->body);
      if (!request) continue;
      std::string encoded = envelope::EncodeRequest(*request);
      Result<RequestEnvelope> again = envelope::DecodeRequest(encoded);
      if (!again || again->service != request->service || again->payload != request->payload) {
        __builtin_trap();  // a Request must survive its own round trip
      }
      std::string reply = envelope::EncodeResponse(
          request->method.empty() ? Status::Ok() : InvalidArgumentError(request->method),
          request->payload);
      (void)envelope::DecodeResponse(reply);
    }
  }
  (void)decoder.mid_frame();
  return 0;
}
