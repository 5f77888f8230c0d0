#include "base/reaper.h"

#include <signal.h>
#include <sys/wait.h>

#include <utility>

namespace hull {
namespace {
// Exits nobody claims (a container's stray grandchildren) are kept this long
// at most, oldest dropped first.
constexpr size_t kMaxUnclaimed = 4096;
}  // namespace

Result<std::unique_ptr<Reaper>> Reaper::Create(EventLoop& loop) {
  std::unique_ptr<Reaper> reaper(new Reaper(loop));
  Reaper* self = reaper.get();
  HULL_ASSIGN_OR_RETURN(reaper->sigchld_, loop.WatchSignal(SIGCHLD, [self] { self->ReapNow(); }));
  // A child may have exited before SIGCHLD was blocked.
  loop.Post([self] { self->ReapNow(); });
  return reaper;
}

Result<std::unique_ptr<Reaper>> Reaper::CreateWithSpawner(
    EventLoop& loop, SpawnerClient& spawner, std::function<void(Status)> on_spawner_lost) {
  HULL_ASSIGN_OR_RETURN(std::unique_ptr<Reaper> reaper, Create(loop));
  Reaper* self = reaper.get();
  reaper->spawner_ = &spawner;
  reaper->on_spawner_lost_ = std::move(on_spawner_lost);
  reaper->spawner_exits_ =
      loop.WatchFd(spawner.exits_fd(), kReadable, [self](uint32_t) { self->ReadSpawnerExits(); });
  return reaper;
}

Result<pid_t> Reaper::Spawn(const SpawnOptions& options) {
  if (spawner_ != nullptr) return spawner_->Spawn(options);
  return hull::Spawn(options);
}

void Reaper::ReadSpawnerExits() {
  std::vector<SpawnerExit> exits;
  Status read = spawner_->ReadExits(exits);
  for (const SpawnerExit& e : exits) Deliver(e.pid, e.wait_status);
  if (read.ok()) return;
  spawner_exits_.Reset();
  if (auto lost = std::exchange(on_spawner_lost_, nullptr)) lost(read);
}

void Reaper::Watch(pid_t pid, ExitHandler on_exit) {
  discard_.erase(pid);
  if (auto status = TakeExit(pid)) {
    loop_.Post([on_exit = std::move(on_exit), s = *status] { on_exit(s); });
    return;
  }
  handlers_[pid] = std::move(on_exit);
}

void Reaper::Discard(pid_t pid) {
  handlers_.erase(pid);
  if (!TakeExit(pid)) discard_[pid] = true;
}

std::optional<int> Reaper::TakeExit(pid_t pid) {
  auto it = unclaimed_.find(pid);
  if (it == unclaimed_.end()) return std::nullopt;
  int status = it->second;
  unclaimed_.erase(it);
  std::erase(unclaimed_order_, pid);
  return status;
}

void Reaper::ReapNow() {
  for (;;) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0) break;
    Deliver(pid, status);
  }
}

void Reaper::Deliver(pid_t pid, int status) {
  if (discard_.erase(pid) > 0) return;
  auto it = handlers_.find(pid);
  if (it != handlers_.end()) {
    ExitHandler handler = std::move(it->second);
    handlers_.erase(it);
    handler(status);
    return;
  }
  unclaimed_[pid] = status;
  unclaimed_order_.push_back(pid);
  while (unclaimed_order_.size() > kMaxUnclaimed) {
    unclaimed_.erase(unclaimed_order_.front());
    unclaimed_order_.pop_front();
  }
}

ChildHandle::ChildHandle(ChildHandle&& other) noexcept
    : reaper_(other.reaper_), pid_(std::exchange(other.pid_, 0)) {}

ChildHandle& ChildHandle::operator=(ChildHandle&& other) noexcept {
  if (this != &other) {
    Reset();
    reaper_ = other.reaper_;
    pid_ = std::exchange(other.pid_, 0);
  }
  return *this;
}

void ChildHandle::Reset() {
  pid_t pid = std::exchange(pid_, 0);
  if (pid <= 0 || reaper_ == nullptr) return;
  ::kill(pid, SIGKILL);
  reaper_->Discard(pid);
}

}  // namespace hull
