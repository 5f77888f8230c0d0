// Freeze, thaw, remove and wait-until-empty on the event loop: the same steps
// as the synchronous calls, with the wait on cgroup.events done by inotify
// (the kernel reports a change of the file as IN_MODIFY) plus a periodic
// re-check, and a deadline timer. Nothing here blocks the loop.
#include <sys/inotify.h>
#include <unistd.h>

#include <string>

#include "cgroups/cgroup_dir_internal.h"
#include "cgroups/cgroups.h"
#include "cgroups/v2_internal.h"

namespace hull::cgroups {

using internal::CgroupDir;

// One operation. Owned by its AsyncOp; every loop callback holds a weak_ptr
// only, so dropping the AsyncOp ends the operation and its registrations.
struct AsyncOp::State : std::enable_shared_from_this<AsyncOp::State> {
  State(EventLoop& loop, std::string context, Manager::Done done)
      : loop(loop), context(std::move(context)), done(std::move(done)) {}

  // Watches `dir` until `wait` holds, then (with `parent`) removes it.
  void Start(CgroupDir watched, internal::EventWait w, std::chrono::milliseconds timeout) {
    dir.emplace(std::move(watched));
    wait = w;
    deadline = std::chrono::steady_clock::now() + timeout;
    std::weak_ptr<State> weak = weak_from_this();
    auto call = [weak](void (State::*method)()) {
      if (auto self = weak.lock()) ((*self).*method)();
    };
    UniqueFd ifd(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
    if (ifd) {
      // inotify takes a path: through our descriptor of the directory, so
      // the lookup stays fd-relative. Without it the re-check still works.
      std::string via_fd = "/proc/self/fd/" + std::to_string(dir->fd()) + "/cgroup.events";
      if (::inotify_add_watch(ifd.get(), via_fd.c_str(), IN_MODIFY) >= 0) {
        inotify = std::move(ifd);
        watch =
            loop.WatchFd(inotify.get(), kReadable, [call](uint32_t) { call(&State::OnNotify); });
      }
    }
    recheck = loop.AddRepeatingTimer(internal::kRecheckInterval, [call] { call(&State::Check); });
    expire = loop.AddTimer(timeout, [call] { call(&State::OnDeadline); });
    loop.Post([call] { call(&State::Check); });
  }

  // Completes with `status` on a later turn of the loop.
  void FinishLater(Status status) {
    loop.Post([weak = weak_from_this(), status = std::move(status)] {
      if (auto self = weak.lock()) self->Finish(status);
    });
  }

  void OnNotify() {
    alignas(inotify_event) char buf[4096];
    while (::read(inotify.get(), buf, sizeof buf) > 0) {
    }
    Check();
  }

  void Check() {
    if (finished) return;
    Result<bool> holds = internal::EventHolds(*dir, wait);
    if (!holds) return Finish(holds.error().WithContext(context));
    if (!*holds) {
      if (rekill) {
        Status s = internal::KillListed(*dir);
        if (!s.ok()) return Finish(s.WithContext(context));
      }
      return;
    }
    if (!parent) return Finish(Status::Ok());
    // No retries inside the call (they would sleep): a cgroup that is still
    // busy for a moment is tried again on the next check.
    Status removed = internal::RemoveTree(*parent, name, std::chrono::steady_clock::now());
    if (removed.ok() || removed.code() != Code::kFailedPrecondition ||
        std::chrono::steady_clock::now() >= deadline) {
      Finish(removed.ok() ? removed : removed.WithContext(context));
    }
  }

  void OnDeadline() {
    if (finished) return;
    Finish(DeadlineExceededError(context + ": " + dir->path().string() + " still " +
                                 std::string(wait.value ? "not " : "") + std::string(wait.key) +
                                 " at the deadline"));
  }

  // `done` is the last thing touched: it may drop the AsyncOp.
  void Finish(Status status) {
    if (finished) return;
    finished = true;
    watch.Reset();
    recheck.Reset();
    expire.Reset();
    Manager::Done d = std::move(done);
    d(std::move(status));
  }

  EventLoop& loop;
  std::string context;
  Manager::Done done;
  std::optional<CgroupDir> dir;
  std::optional<CgroupDir> parent;  // set: remove `name` from it at the end
  std::string name;
  internal::EventWait wait;
  bool rekill = false;
  internal::Deadline deadline;
  UniqueFd inotify;
  EventHandle watch;
  EventHandle recheck;
  EventHandle expire;
  bool finished = false;
};

Result<AsyncOp> Manager::FreezeAsyncImpl(EventLoop& loop, bool freeze,
                                         std::chrono::milliseconds timeout, Done done) const {
  HULL_ASSIGN_OR_RETURN(Location loc,
                        UnifiedLocation(freeze ? "freeze a cgroup" : "thaw a cgroup"));
  const std::string context = std::string(freeze ? "freeze" : "thaw") + " cgroup " + path_;
  Result<CgroupDir> dir = CgroupDir::Open(loc.mount_point, loc.relative);
  if (!dir) return dir.error().WithContext(context);
  HULL_RETURN_IF_ERROR_CTX(internal::WriteFreeze(*dir, freeze), context);
  auto state = std::make_shared<AsyncOp::State>(loop, context, std::move(done));
  state->Start(std::move(*dir), {"frozen", freeze}, timeout);
  return AsyncOp(std::move(state));
}

Result<AsyncOp> Manager::FreezeAsync(EventLoop& loop, std::chrono::milliseconds timeout,
                                     Done done) const {
  return FreezeAsyncImpl(loop, true, timeout, std::move(done));
}

Result<AsyncOp> Manager::ThawAsync(EventLoop& loop, std::chrono::milliseconds timeout,
                                   Done done) const {
  return FreezeAsyncImpl(loop, false, timeout, std::move(done));
}

Result<AsyncOp> Manager::RemoveAsync(EventLoop& loop, std::chrono::milliseconds timeout,
                                     Done done) const {
  HULL_ASSIGN_OR_RETURN(Location loc, UnifiedLocation("remove a cgroup"));
  const std::string context = "remove cgroup " + path_;
  auto state = std::make_shared<AsyncOp::State>(loop, context, std::move(done));
  Result<internal::Opened> opened = internal::OpenWithParent(loc.mount_point, loc.relative);
  if (!opened) {
    if (opened.error().code() != Code::kNotFound) return opened.error().WithContext(context);
    state->FinishLater(Status::Ok());  // nothing to remove
    return AsyncOp(std::move(state));
  }
  if (!opened->parent) return InvalidArgumentError(context + ": it is the root of the mount");
  Result<bool> killed = internal::WriteKill(opened->dir);
  if (!killed) return killed.error().WithContext(context);
  if (!*killed) {
    state->rekill = true;
    HULL_RETURN_IF_ERROR_CTX(internal::KillListed(opened->dir), context);
  }
  state->parent.emplace(std::move(*opened->parent));
  state->name = opened->name;
  state->Start(std::move(opened->dir), {"populated", false}, timeout);
  return AsyncOp(std::move(state));
}

Result<AsyncOp> Manager::WaitEmptyAsync(EventLoop& loop, std::chrono::milliseconds timeout,
                                        Done done) const {
  HULL_ASSIGN_OR_RETURN(Location loc, ProcessesLocation());
  const std::string context = "wait for cgroup " + path_ + " to empty";
  auto state = std::make_shared<AsyncOp::State>(loop, context, std::move(done));
  Result<CgroupDir> dir = CgroupDir::Open(loc.mount_point, loc.relative);
  if (!dir) {
    if (dir.error().code() != Code::kNotFound) return dir.error().WithContext(context);
    state->FinishLater(Status::Ok());  // removed already: nothing is in it
    return AsyncOp(std::move(state));
  }
  // A v1 directory has no cgroup.events: the checks then read the subtree's
  // cgroup.procs (EventHolds), on the re-check timer alone.
  state->Start(std::move(*dir), {"populated", false}, timeout);
  return AsyncOp(std::move(state));
}

}  // namespace hull::cgroups
