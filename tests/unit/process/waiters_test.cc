// shim::Process's Wait calls: parked through a real ttrpc server, freed when
// their connection goes, answered at the exit.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "containerd/task/v2/shim.pb.h"
#include "shim/process.h"
#include "tests/unit/ttrpc/test_util.h"
#include "ttrpc/server.h"

namespace hull::shim {
namespace {

using containerd::task::v2::WaitRequest;
using containerd::task::v2::WaitResponse;
namespace tt = hull::ttrpc::testing;

constexpr char kService[] = "containerd.task.v2.Task";

// Resident set size of this process, in KiB.
long RssKib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

class WaitersTest : public ::testing::Test {
 protected:
  WaitersTest() : loop_(tt::NewLoop()), process_("c1", "", StdioConfig{}) {
    server_ = std::make_unique<ttrpc::Server>(*loop_);
    server_->RegisterUnary<WaitRequest, WaitResponse>(
        kService, "Wait",
        [this](const ttrpc::CallContext&, WaitRequest, ttrpc::TypedResponder<WaitResponse> r) {
          ++waits_;
          process_.AddWaiter(std::move(r));
        });
  }

  // `n` connections each park a Wait and hang up.
  void AbandonWaits(int n) {
    std::vector<UniqueFd> peers;
    int parked_before = waits_;
    for (int i = 0; i < n; ++i) {
      tt::SocketPair pair = tt::MakeSocketPair();
      ASSERT_TRUE(server_->ServeConnection(std::move(pair.a)).ok());
      std::string frame = tt::RequestFrame(1, kService, "Wait", WaitRequest().SerializeAsString());
      ASSERT_EQ(::send(pair.b.get(), frame.data(), frame.size(), MSG_NOSIGNAL),
                static_cast<ssize_t>(frame.size()));
      peers.push_back(std::move(pair.b));
    }
    ASSERT_TRUE(loop_->RunUntil([&] { return waits_ == parked_before + n; }, tt::kWait));
    peers.clear();
    ASSERT_TRUE(loop_->RunUntil([&] { return server_->connection_count() == 0; }, tt::kWait));
  }

  std::unique_ptr<EventLoop> loop_;
  Process process_;
  std::unique_ptr<ttrpc::Server> server_;
  int waits_ = 0;
};

TEST_F(WaitersTest, HundredThousandAbandonedWaitsLeaveRssWithinOneMib) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "ASan's quarantine keeps freed memory resident: RSS says nothing here";
#endif
  constexpr int kBatch = 200;
  for (int i = 0; i < 10'000 / kBatch; ++i) AbandonWaits(kBatch);  // warm up the allocator
  long before = RssKib();
  for (int i = 0; i < 100'000 / kBatch; ++i) AbandonWaits(kBatch);
  long after = RssKib();
  ASSERT_EQ(waits_, 110'000);
  EXPECT_LT(after - before, 1024) << "RSS " << before << " KiB -> " << after << " KiB";
}

TEST_F(WaitersTest, LiveWaitIsAnsweredAtTheExitAfterOthersWereAbandoned) {
  AbandonWaits(50);
  tt::SocketPair pair = tt::MakeSocketPair();
  ASSERT_TRUE(server_->ServeConnection(std::move(pair.a)).ok());
  tt::RawPeer peer(*loop_, std::move(pair.b));
  ASSERT_TRUE(peer.Send(tt::RequestFrame(1, kService, "Wait", WaitRequest().SerializeAsString())));
  ASSERT_TRUE(loop_->RunUntil([&] { return waits_ == 51; }, tt::kWait));

  process_.RecordExit(7);
  process_.AnswerWaiters();
  std::optional<ttrpc::Frame> reply = peer.Read();
  ASSERT_TRUE(reply.has_value());
  WaitResponse response;
  ASSERT_TRUE(response.ParseFromString(tt::ParseResponse(reply->body).payload));
  EXPECT_EQ(response.exit_status(), 7u);
}

}  // namespace
}  // namespace hull::shim
