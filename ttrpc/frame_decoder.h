// FrameDecoder: turns a byte stream, fed in whatever pieces nonblocking reads
// return, into ttrpc frames. It owns its input buffer; a reader writes
// straight into it (PrepareAppend/CommitAppend) to save a copy. Oversized
// bodies are skipped, never buffered. Plain value, no I/O, any one thread.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "ttrpc/frame.h"

namespace hull::ttrpc {

class FrameDecoder {
 public:
  // Writable room for at least `min_size` more bytes; valid until the next
  // call on the decoder. Follow with CommitAppend(bytes actually written).
  std::span<char> PrepareAppend(size_t min_size);
  void CommitAppend(size_t n);
  // Copies `bytes` in. For tests and callers that already hold the bytes.
  void Append(std::string_view bytes);

  // The next complete frame, or nullopt until more bytes arrive. An oversized
  // frame (header.length > kMaxMessageSize) is returned, with an empty body,
  // only once all `length` body bytes have been skipped, so the stream stays
  // in sync and the caller can fail just that stream.
  std::optional<Frame> Next();

  // True when part of a frame has arrived (or is still being skipped): the
  // peer closing now would cut a frame short.
  bool mid_frame() const { return skipping_ || end_ > begin_; }

 private:
  size_t available() const { return end_ - begin_; }

  std::vector<char> buf_;  // unread bytes are [begin_, end_)
  size_t begin_ = 0;
  size_t end_ = 0;
  bool skipping_ = false;  // discarding the body of `skip_header_`
  uint64_t skip_left_ = 0;
  FrameHeader skip_header_;
};

}  // namespace hull::ttrpc
