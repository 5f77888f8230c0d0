// The codec against the bytes in reference/ttrpc-protocol.md.
#include "ttrpc/frame.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/unit/ttrpc/test_util.h"
#include "ttrpc/envelope_internal.h"
#include "ttrpc/frame_decoder.h"

namespace hull::ttrpc {
namespace {

using testing::MakeFrame;

std::string Bytes(std::initializer_list<int> bytes) {
  std::string out;
  for (int b : bytes) out.push_back(static_cast<char>(b));
  return out;
}

TEST(FrameTest, HeaderIsBigEndianLengthIdTypeFlags) {
  auto bytes = EncodeHeader({.length = 0x01020304, .stream_id = 0x0a0b0c0d, .type = 3, .flags = 5});
  std::vector<uint8_t> want = {1, 2, 3, 4, 0x0a, 0x0b, 0x0c, 0x0d, 3, 5};
  EXPECT_EQ(std::vector<uint8_t>(bytes.begin(), bytes.end()), want);
  FrameHeader back = DecodeHeader(bytes.data());
  EXPECT_EQ(back,
            (FrameHeader{.length = 0x01020304, .stream_id = 0x0a0b0c0d, .type = 3, .flags = 5}));
}

TEST(FrameTest, WorkedExampleRequestIsByteExact) {
  // §2: a unary call on stream 1 to service `a.B`, method `M`, empty payload.
  std::string body = internal::EncodeRequest({.service = "a.B", .method = "M"});
  std::string want = Bytes({0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x01, 0x01, 0x00, 0x0A, 0x03,
                            0x61, 0x2E, 0x42, 0x12, 0x01, 0x4D});
  EXPECT_EQ(MakeFrame(1, MessageType::kRequest, 0, body), want);
}

TEST(FrameTest, UnknownServiceReplyIsByteExact) {
  std::string body = internal::EncodeResponse(UnimplementedError("service a.B"), {});
  std::string want = Bytes({0x00, 0x00, 0x00, 0x11, 0x00, 0x00, 0x00, 0x01, 0x02, 0x00, 0x0A, 0x0F,
                            0x08, 0x0C, 0x12, 0x0B}) +
                     "service a.B";
  EXPECT_EQ(MakeFrame(1, MessageType::kResponse, 0, body), want);
}

TEST(FrameTest, OkEmptyReplyIsZeroLengthBody) {
  EXPECT_EQ(internal::EncodeResponse(Status::Ok(), {}), "");
  EXPECT_EQ(MakeFrame(7, MessageType::kResponse, 0, ""), Bytes({0, 0, 0, 0, 0, 0, 0, 7, 2, 0}));
}

TEST(FrameTest, OkReplyCarriesPayloadOnly) {
  EXPECT_EQ(internal::EncodeResponse(Status::Ok(), "hi"), Bytes({0x12, 0x02, 'h', 'i'}));
}

TEST(FrameTest, ResponseDecodingMapsStatus) {
  EXPECT_EQ(*internal::DecodeResponse(""), "");
  // Rust servers send an empty Status (0A 00) on success.
  EXPECT_EQ(*internal::DecodeResponse(Bytes({0x0A, 0x00, 0x12, 0x01, 'x'})), "x");
  Result<std::string> failed =
      internal::DecodeResponse(Bytes({0x0A, 0x0F, 0x08, 0x0C, 0x12, 0x0B}) + "service a.B");
  ASSERT_FALSE(failed.has_value());
  EXPECT_EQ(failed.error(), UnimplementedError("service a.B"));
  EXPECT_EQ(internal::DecodeResponse("\xff\xff").error().code(), Code::kInternal);
}

TEST(FrameTest, RequestRoundTripsWithTimeoutAndMetadata) {
  std::string body = internal::EncodeRequest({.service = "s",
                                              .method = "m",
                                              .payload = std::string("\0p", 2),
                                              .timeout_nano = -5,
                                              .metadata = {{"k", "v"}, {"k", "w"}}});
  Result<internal::RequestEnvelope> back = internal::DecodeRequest(body);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->service, "s");
  EXPECT_EQ(back->method, "m");
  EXPECT_EQ(back->payload, std::string("\0p", 2));
  EXPECT_EQ(back->timeout_nano, -5);
  EXPECT_EQ(back->metadata, (Metadata{{"k", "v"}, {"k", "w"}}));
  EXPECT_EQ(internal::DecodeRequest("\x0a\x05xy").error().code(), Code::kInvalidArgument);
}

TEST(FrameTest, MessageSizeLimitIsInclusive) {
  EXPECT_TRUE(CheckMessageSize(4u << 20).ok());
  Status too_big = CheckMessageSize((4u << 20) + 1);
  EXPECT_EQ(too_big.code(), Code::kResourceExhausted);
  EXPECT_EQ(too_big.message(), "message length 4194305 exceed maximum message size of 4194304");
}

TEST(FrameDecoderTest, DecodesFedOneByteAtATime) {
  std::string wire = MakeFrame(1, MessageType::kRequest, 0, "abc") +
                     MakeFrame(3, MessageType::kData, kFlagRemoteClosed | kFlagNoData, "");
  FrameDecoder decoder;
  std::vector<Frame> frames;
  for (char c : wire) {
    decoder.Append(std::string_view(&c, 1));
    while (auto f = decoder.Next()) frames.push_back(std::move(*f));
  }
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].header, (FrameHeader{.length = 3, .stream_id = 1, .type = 1, .flags = 0}));
  EXPECT_EQ(frames[0].body, "abc");
  EXPECT_EQ(frames[1].header, (FrameHeader{.length = 0, .stream_id = 3, .type = 3, .flags = 5}));
  EXPECT_FALSE(decoder.mid_frame());
}

TEST(FrameDecoderTest, ReportsPartialFrame) {
  FrameDecoder decoder;
  decoder.Append(MakeFrame(1, MessageType::kRequest, 0, "abc").substr(0, 11));
  EXPECT_FALSE(decoder.Next().has_value());
  EXPECT_TRUE(decoder.mid_frame());
}

TEST(FrameDecoderTest, AcceptsBodyOfExactlyMaxSize) {
  std::string body(kMaxMessageSize, 'x');
  FrameDecoder decoder;
  decoder.Append(MakeFrame(5, MessageType::kRequest, 0, body));
  auto frame = decoder.Next();
  ASSERT_TRUE(frame.has_value());
  EXPECT_FALSE(frame->oversized());
  EXPECT_EQ(frame->body.size(), kMaxMessageSize);
}

TEST(FrameDecoderTest, OversizedBodyIsDiscardedExactlyAndStreamStaysInSync) {
  const uint32_t length = kMaxMessageSize + 1;
  auto header = EncodeHeader({.length = length, .stream_id = 9, .type = 1, .flags = 0});
  FrameDecoder decoder;
  decoder.Append(std::string_view(reinterpret_cast<const char*>(header.data()), header.size()));
  // The body arrives in pieces; nothing comes out until all of it is skipped.
  std::string chunk(1 << 20, 'z');
  size_t sent = 0;
  while (sent + chunk.size() < length) {
    decoder.Append(chunk);
    sent += chunk.size();
    EXPECT_FALSE(decoder.Next().has_value());
    EXPECT_TRUE(decoder.mid_frame());
  }
  // The rest of the body and the next frame in one piece.
  decoder.Append(std::string(length - sent, 'z') + MakeFrame(11, MessageType::kRequest, 0, "ok"));
  auto oversized = decoder.Next();
  ASSERT_TRUE(oversized.has_value());
  EXPECT_TRUE(oversized->oversized());
  EXPECT_EQ(oversized->header.stream_id, 9u);
  EXPECT_EQ(oversized->header.length, length);
  EXPECT_TRUE(oversized->body.empty());
  auto next = decoder.Next();
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->header.stream_id, 11u);
  EXPECT_EQ(next->body, "ok");
  EXPECT_FALSE(decoder.mid_frame());
}

TEST(MetadataTest, FindIsCaseInsensitiveAndReturnsFirst) {
  Metadata md = {{"Containerd-Namespace-Ttrpc", "k8s.io"}, {"containerd-namespace-ttrpc", "x"}};
  EXPECT_EQ(FindMetadata(md, "containerd-namespace-ttrpc"), "k8s.io");
  EXPECT_FALSE(FindMetadata(md, "other").has_value());
}

}  // namespace
}  // namespace hull::ttrpc
