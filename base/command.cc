#include "base/command.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>

namespace hull {
namespace {
constexpr size_t kMaxCaptured = 4 << 20;
}

Result<std::unique_ptr<Command>> Command::Start(EventLoop& loop, Reaper& reaper,
                                                SpawnOptions options, std::string stdin_data,
                                                Done done) {
  std::unique_ptr<Command> cmd(new Command(loop));
  cmd->done_ = std::move(done);
  auto mapped = [&](int fd) {
    return std::any_of(options.fds.begin(), options.fds.end(),
                       [fd](const auto& p) { return p.first == fd; });
  };
  // Child ends live only until Spawn has dup'd them.
  UniqueFd child_ends[3];
  if (!mapped(0) && !stdin_data.empty()) {
    HULL_ASSIGN_OR_RETURN(Pipe p, MakePipe());
    child_ends[0] = std::move(p.read);
    cmd->stdin_ = std::move(p.write);
    options.fds.emplace_back(0, child_ends[0].get());
  }
  for (int i = 0; i < 2; ++i) {
    if (mapped(i + 1)) continue;
    HULL_ASSIGN_OR_RETURN(Pipe p, MakePipe());
    child_ends[i + 1] = std::move(p.write);
    cmd->out_[i] = std::move(p.read);
    options.fds.emplace_back(i + 1, child_ends[i + 1].get());
  }
  HULL_ASSIGN_OR_RETURN(pid_t pid, reaper.Spawn(options));
  for (auto& end : child_ends) end.reset();
  cmd->child_ = ChildHandle(reaper, pid);

  Command* self = cmd.get();
  for (int i = 0; i < 2; ++i) {
    if (!cmd->out_[i]) continue;
    HULL_RETURN_IF_ERROR(SetNonBlocking(cmd->out_[i].get()));
    cmd->out_watch_[i] =
        loop.WatchFd(cmd->out_[i].get(), kReadable, [self, i](uint32_t) { self->OnReadable(i); });
  }
  if (cmd->stdin_) {
    cmd->stdin_data_ = std::move(stdin_data);
    HULL_RETURN_IF_ERROR(SetNonBlocking(cmd->stdin_.get()));
    cmd->stdin_watch_ =
        loop.WatchFd(cmd->stdin_.get(), kWritable, [self](uint32_t) { self->OnStdinWritable(); });
  }
  reaper.Watch(pid, [self](int wait_status) {
    self->child_.MarkExited();
    self->exited_ = true;
    self->result_.exit_status = ExitStatusFromWait(wait_status);
    // Drop stdin the child never read.
    self->stdin_watch_.Reset();
    self->stdin_.reset();
    self->MaybeFinish();
  });
  return cmd;
}

Command::~Command() = default;

void Command::OnReadable(int which) {
  std::string& sink = which == 0 ? result_.out : result_.err;
  char buf[16384];
  for (;;) {
    ssize_t n = ::read(out_[which].get(), buf, sizeof buf);
    if (n > 0) {
      size_t room = kMaxCaptured - std::min(kMaxCaptured, sink.size());
      sink.append(buf, std::min(room, static_cast<size_t>(n)));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    // EOF or error: this stream is done.
    out_watch_[which].Reset();
    out_[which].reset();
    MaybeFinish();
    return;
  }
}

void Command::OnStdinWritable() {
  while (stdin_written_ < stdin_data_.size()) {
    ssize_t n = ::write(stdin_.get(), stdin_data_.data() + stdin_written_,
                        stdin_data_.size() - stdin_written_);
    if (n > 0) {
      stdin_written_ += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    break;  // EPIPE: the child stopped reading
  }
  stdin_watch_.Reset();
  stdin_.reset();
}

void Command::MaybeFinish() {
  if (!exited_ || out_[0] || out_[1] || !done_) return;
  // `done` may destroy this Command; nothing touches members after it.
  Done done = std::move(done_);
  done(std::move(result_));
}

}  // namespace hull
