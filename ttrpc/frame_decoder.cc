#include "ttrpc/frame_decoder.h"

#include <algorithm>
#include <cstring>

namespace hull::ttrpc {
namespace {

// An idle connection should not keep a 4 MiB buffer from its largest message.
constexpr size_t kKeepCapacity = 64 * 1024;

}  // namespace

std::span<char> FrameDecoder::PrepareAppend(size_t min_size) {
  if (begin_ == end_) {
    begin_ = end_ = 0;
    if (buf_.size() > kKeepCapacity && min_size <= kKeepCapacity) {
      std::vector<char>(kKeepCapacity).swap(buf_);
    }
  }
  if (buf_.size() - end_ < min_size && begin_ > 0) {
    std::memmove(buf_.data(), buf_.data() + begin_, available());
    end_ -= begin_;
    begin_ = 0;
  }
  if (buf_.size() - end_ < min_size) buf_.resize(std::max(buf_.size() * 2, end_ + min_size));
  return std::span<char>(buf_.data() + end_, buf_.size() - end_);
}

void FrameDecoder::CommitAppend(size_t n) {
  end_ += std::min(n, buf_.size() - end_);
}

void FrameDecoder::Append(std::string_view bytes) {
  std::span<char> room = PrepareAppend(bytes.size());
  std::memcpy(room.data(), bytes.data(), bytes.size());
  CommitAppend(bytes.size());
}

std::optional<Frame> FrameDecoder::Next() {
  for (;;) {
    if (skipping_) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(skip_left_, available()));
      begin_ += n;
      skip_left_ -= n;
      if (skip_left_ > 0) return std::nullopt;
      skipping_ = false;
      return Frame{.header = skip_header_, .body = {}};
    }
    if (available() < kFrameHeaderSize) return std::nullopt;
    FrameHeader header = DecodeHeader(reinterpret_cast<const uint8_t*>(buf_.data() + begin_));
    if (header.length > kMaxMessageSize) {
      begin_ += kFrameHeaderSize;
      skipping_ = true;
      skip_left_ = header.length;
      skip_header_ = header;
      continue;
    }
    if (available() < kFrameHeaderSize + header.length) return std::nullopt;
    const char* body = buf_.data() + begin_ + kFrameHeaderSize;
    Frame frame{.header = header, .body = std::string(body, header.length)};
    begin_ += kFrameHeaderSize + header.length;
    return frame;
  }
}

}  // namespace hull::ttrpc
