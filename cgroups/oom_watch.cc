// OOM detection: the oom_kill counter, and a loop watch that reports each
// increase of it. v1 is told of an OOM by an eventfd registered through
// cgroup.event_control; v2 by inotify on memory.events (the kernel notifies
// the file when its counters change).
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <memory>
#include <string>

#include "cgroups/cgroup_dir_internal.h"
#include "cgroups/cgroups.h"
#include "cgroups/parse_internal.h"

namespace hull::cgroups {

using internal::CgroupDir;

namespace {

constexpr std::string_view kV1OomControl = "memory.oom_control";
constexpr std::string_view kV2Events = "memory.events";

// v1 signals the eventfd before the OOM killer has picked its victim, so a
// notification whose counter has not moved yet is re-read a few times:
// 10 ms, then doubling, about 1.3 s in all. A notification that never shows
// a kill (oom_kill_disable, or the charge succeeded after all) is dropped.
constexpr std::chrono::milliseconds kFirstRecheck{10};
constexpr int kRechecks = 7;

// The oom_kill counter of `file`; nullopt if the kernel has no such line.
Result<std::optional<uint64_t>> ReadOomKill(const CgroupDir& dir, std::string_view file) {
  HULL_ASSIGN_OR_RETURN(std::string text, dir.Read(file));
  return internal::Lookup(internal::ParseFlatKeyed(text), "oom_kill");
}

// The state of one watch. Owned by the loop registration of its notify fd
// (through the callback's shared_ptr): dropping the EventHandle destroys it,
// closing the notify fd (which also unregisters a v1 eventfd in the kernel)
// and the directory. The recheck timer holds only a weak_ptr.
class OomWatch : public std::enable_shared_from_this<OomWatch> {
 public:
  OomWatch(EventLoop& loop, CgroupDir dir, std::string_view counter_file, UniqueFd notify_fd,
           bool recheck, std::optional<uint64_t> last, std::function<void()> on_oom)
      : loop_(loop),
        dir_(std::move(dir)),
        counter_file_(counter_file),
        notify_fd_(std::move(notify_fd)),
        recheck_(recheck),
        last_(last),
        on_oom_(std::move(on_oom)) {}

  int notify_fd() const { return notify_fd_.get(); }

  void OnNotify() {
    Drain();
    if (gone_) return;
    rechecks_left_ = recheck_ ? kRechecks : 0;
    next_delay_ = kFirstRecheck;
    Check();
  }

 private:
  void Drain() {
    // Big enough for an eventfd's 8 bytes or a batch of inotify events.
    alignas(inotify_event) char buf[4096];
    while (::read(notify_fd_.get(), buf, sizeof buf) > 0) {
    }
  }

  // Calls on_oom_ if the counter went up; on_oom_ is the last thing touched,
  // since it may drop the handle that owns this watch.
  void Check() {
    Result<std::optional<uint64_t>> count = ReadOomKill(dir_, counter_file_);
    if (!count) {
      // The cgroup is gone (v1 signals its eventfd on rmdir; inotify reports
      // IN_IGNORED): nothing will be reported any more.
      if (count.error().code() == Code::kNotFound) {
        gone_ = true;
        timer_.Reset();
      }
      return;
    }
    if (!count->has_value()) {
      // No counter on this kernel: every notification is an OOM.
      on_oom_();
      return;
    }
    uint64_t now = **count;
    bool killed = !last_ || now > *last_;
    last_ = now;
    if (killed) {
      timer_.Reset();
      on_oom_();
      return;
    }
    if (rechecks_left_ > 0 && !timer_.active()) {
      --rechecks_left_;
      timer_ = loop_.AddTimer(next_delay_, [weak = weak_from_this()] {
        if (auto self = weak.lock()) self->OnRecheck();
      });
      next_delay_ *= 2;
    }
  }

  void OnRecheck() {
    timer_.Reset();
    Check();
  }

  EventLoop& loop_;
  CgroupDir dir_;
  std::string_view counter_file_;  // one of the constants above
  UniqueFd notify_fd_;
  bool recheck_;
  std::optional<uint64_t> last_;
  std::function<void()> on_oom_;
  EventHandle timer_;
  int rechecks_left_ = 0;
  std::chrono::milliseconds next_delay_ = kFirstRecheck;
  bool gone_ = false;
};

EventHandle Start(EventLoop& loop, std::shared_ptr<OomWatch> watch) {
  int fd = watch->notify_fd();
  return loop.WatchFd(fd, kReadable, [watch = std::move(watch)](uint32_t) { watch->OnNotify(); });
}

Result<EventHandle> WatchV1(EventLoop& loop, CgroupDir dir, std::function<void()> on_oom) {
  UniqueFd efd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!efd) return ErrnoError("eventfd", "for " + (dir.path() / kV1OomControl).string());
  HULL_ASSIGN_OR_RETURN(std::optional<uint64_t> last, ReadOomKill(dir, kV1OomControl));
  {
    // "<eventfd> <fd of memory.oom_control>"; the kernel keeps what it needs
    // of the control file, so it is closed again right away.
    HULL_ASSIGN_OR_RETURN(UniqueFd control, dir.OpenFile(kV1OomControl, O_RDONLY));
    HULL_RETURN_IF_ERROR(dir.Write(
        "cgroup.event_control", std::to_string(efd.get()) + " " + std::to_string(control.get())));
  }
  return Start(loop, std::make_shared<OomWatch>(loop, std::move(dir), kV1OomControl, std::move(efd),
                                                /*recheck=*/true, last, std::move(on_oom)));
}

Result<EventHandle> WatchV2(EventLoop& loop, CgroupDir dir, std::function<void()> on_oom) {
  HULL_ASSIGN_OR_RETURN(std::optional<uint64_t> last, ReadOomKill(dir, kV2Events));
  UniqueFd ifd(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  const std::string display = (dir.path() / kV2Events).string();
  if (!ifd) return ErrnoError("inotify_init1", "for " + display);
  // inotify takes a path only; going through our descriptor of the directory
  // keeps the lookup fd-relative.
  std::string via_fd = "/proc/self/fd/" + std::to_string(dir.fd()) + "/" + std::string(kV2Events);
  if (::inotify_add_watch(ifd.get(), via_fd.c_str(), IN_MODIFY) < 0) {
    return ErrnoError("inotify_add_watch", display);
  }
  // The kernel updates the counter before it notifies, so no rechecks.
  return Start(loop, std::make_shared<OomWatch>(loop, std::move(dir), kV2Events, std::move(ifd),
                                                /*recheck=*/false, last, std::move(on_oom)));
}

}  // namespace

Result<uint64_t> Manager::OomKillCount() const {
  HULL_ASSIGN_OR_RETURN(Location loc, Find("memory"));
  HULL_ASSIGN_OR_RETURN(CgroupDir dir, CgroupDir::Open(loc.mount_point, loc.relative));
  std::string_view file = mode_ == Mode::kUnified ? kV2Events : kV1OomControl;
  HULL_ASSIGN_OR_RETURN(std::optional<uint64_t> count, ReadOomKill(dir, file));
  if (!count) {
    return UnimplementedError("no oom_kill counter in " + (dir.path() / file).string());
  }
  return *count;
}

Result<EventHandle> Manager::WatchOom(EventLoop& loop, std::function<void()> on_oom) const {
  HULL_ASSIGN_OR_RETURN(Location loc, Find("memory"));
  HULL_ASSIGN_OR_RETURN(CgroupDir dir, CgroupDir::Open(loc.mount_point, loc.relative));
  Result<EventHandle> watch = mode_ == Mode::kUnified
                                  ? WatchV2(loop, std::move(dir), std::move(on_oom))
                                  : WatchV1(loop, std::move(dir), std::move(on_oom));
  if (!watch) return watch.error().WithContext("watch OOM");
  return watch;
}

}  // namespace hull::cgroups
