// A backend that runs nothing: every call succeeds on a later loop turn, and
// the calls are counted, for the Sandbox API tests (the sandbox's own copy, so
// these tests do not depend on other fakes in tests/unit/).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "google/protobuf/any.pb.h"
#include "shim/backend/backend.h"

namespace hull::shim::testing {

class FakeBackend : public Backend {
 public:
  explicit FakeBackend(EventLoop& loop, std::map<std::string, int>& calls)
      : loop_(loop), calls_(calls) {}

  void PrepareSandbox(const SandboxRequest& req, Done done) override {
    last_sandbox_ = req;
    Ok("PrepareSandbox", std::move(done));
  }
  void TeardownSandbox(Done done) override { Ok("TeardownSandbox", std::move(done)); }
  void Release(const std::string&) override { ++calls_["Release"]; }
  void Create(const CreateRequest&, Done done) override { Ok("Create", std::move(done)); }
  void Start(const std::string&, Done done) override { Ok("Start", std::move(done)); }
  void Exec(const ExecRequest&, Done done) override { Ok("Exec", std::move(done)); }
  void Kill(const std::string&, int, bool, Done done) override { Ok("Kill", std::move(done)); }
  void Delete(const std::string&, bool, Done done) override { Ok("Delete", std::move(done)); }
  void Pause(const std::string&, Done done) override { Ok("Pause", std::move(done)); }
  void Resume(const std::string&, Done done) override { Ok("Resume", std::move(done)); }
  void Update(const std::string&, const std::string&, Done done) override {
    Ok("Update", std::move(done));
  }
  void Ps(const std::string&, std::function<void(Result<std::vector<pid_t>>)> done) override {
    ++calls_["Ps"];
    loop_.Post([done = std::move(done)] { done(std::vector<pid_t>{}); });
  }
  void Checkpoint(const CheckpointRequest&, Done done) override {
    Ok("Checkpoint", std::move(done));
  }
  void Stats(const std::string& id, pid_t,
             std::function<void(Result<google::protobuf::Any>)> done) override {
    ++calls_["Stats"];
    loop_.Post([id, done = std::move(done)] {
      google::protobuf::Any any;
      any.set_type_url("fake.Metrics");
      any.set_value(id);
      done(std::move(any));
    });
  }
  Result<EventHandle> WatchOom(const std::string&, pid_t, std::function<void()>) override {
    return EventHandle();
  }
  Result<uint64_t> OomKillCount(const std::string&) override { return uint64_t{0}; }
  void WatchInitExit(const std::string&, pid_t, std::function<void(int)>) override {}
  // With `runs_sandbox`, the pod's sandbox is the backend's own process
  // (as runsc's): StartSandbox answers pid 777, StopSandbox ends it (137).
  bool RunsSandboxProcess() const override { return runs_sandbox; }
  void StartSandbox(std::function<void(int)> on_exit,
                    std::function<void(Result<pid_t>)> done) override {
    ++calls_["StartSandbox"];
    sandbox_exit_ = std::move(on_exit);
    loop_.Post([done = std::move(done)] { done(pid_t{777}); });
  }
  void StopSandbox(Done done) override {
    ++calls_["StopSandbox"];
    if (auto on_exit = std::exchange(sandbox_exit_, nullptr)) {
      loop_.Post([on_exit] { on_exit(137); });
    }
    loop_.Post([done = std::move(done)] { done(Status::Ok()); });
  }
  void WatchExecExit(const std::string&, const std::string&, pid_t,
                     std::function<void(int)>) override {}
  void ForgetExit(const std::string&, const std::string&, pid_t) override {}
  void SignalExec(const std::string&, const std::string&, pid_t, int, Done done) override {
    Ok("SignalExec", std::move(done));
  }
  void ResizeTerminal(const std::string&, const std::string&, uint32_t, uint32_t) override {}
  bool Serves(const RuntimeOptions&) const override { return true; }
  std::string name() const override { return "fake"; }

  const SandboxRequest& last_sandbox() const { return last_sandbox_; }

 private:
  void Ok(const char* what, Done done) {
    ++calls_[what];
    loop_.Post([done = std::move(done)] { done(Status::Ok()); });
  }

  EventLoop& loop_;
  std::map<std::string, int>& calls_;
  SandboxRequest last_sandbox_;
  std::function<void(int)> sandbox_exit_;

 public:
  bool runs_sandbox = false;
};

}  // namespace hull::shim::testing
