#include "bench/shims/host_ops.h"

#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/spawn.h"
#include "base/unique_fd.h"
#include "bench/shims/measure.h"
#include "tests/integration/harness/command.h"

extern char** environ;

namespace hull::bench {

namespace fs = std::filesystem;

namespace {

// Reads `fd` until EOF.
std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      return out;
    }
  }
}

}  // namespace

Result<SyncResult> RunIn(const std::string& cwd, const std::vector<std::string>& argv,
                         const std::vector<std::string>& extra_env, Capture capture) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  UniqueFd read_end, write_end;
  if (capture == Capture::kPipe) {
    HULL_ASSIGN_OR_RETURN(Pipe out, MakePipe());
    read_end = std::move(out.read);
    write_end = std::move(out.write);
  } else {
    write_end = UniqueFd(::memfd_create("bench-output", MFD_CLOEXEC));
    if (!write_end) return ErrnoError("memfd_create");
  }
  SpawnOptions options{.argv = argv,
                       .env = env,
                       .cwd = cwd,
                       .fds = {{1, write_end.get()}, {2, write_end.get()}},
                       .new_process_group = true};
  HULL_ASSIGN_OR_RETURN(pid_t pid, Spawn(options));
  SyncResult result;
  if (capture == Capture::kPipe) {
    write_end.reset();
    result.output = ReadAll(read_end.get());
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return ErrnoError("waitpid", argv[0]);
  }
  if (capture == Capture::kMemfd) {
    ::lseek(write_end.get(), 0, SEEK_SET);
    result.output = ReadAll(write_end.get());
  }
  result.exit_status = ExitStatusFromWait(status);
  return result;
}

Status WaitForExit(pid_t pid, std::chrono::milliseconds timeout) {
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (!pidfd) {
    if (errno == ESRCH) return Status::Ok();  // already gone
    return ErrnoError("pidfd_open", std::to_string(pid));
  }
  pollfd p{.fd = pidfd.get(), .events = POLLIN, .revents = 0};
  int n = ::poll(&p, 1, static_cast<int>(timeout.count()));
  if (n < 0) return ErrnoError("poll pidfd", std::to_string(pid));
  if (n == 0) return DeadlineExceededError("process " + std::to_string(pid) + " still running");
  return Status::Ok();
}

namespace {

Result<std::string> TarMember(const std::string& tar, const std::string& member) {
  itest::CommandResult r = itest::RunCommand({"tar", "-xOf", tar, member});
  if (!r.ok()) return InternalError("tar -xOf " + tar + " " + member + ": " + r.Describe());
  return r.out;
}

std::string BlobPath(const std::string& digest) {
  return "blobs/sha256/" + digest.substr(digest.find(':') + 1);
}

}  // namespace

Status ExtractRootfs(const std::string& image_tar, const std::string& rootfs) {
  HULL_ASSIGN_OR_RETURN(std::string index_text, TarMember(image_tar, "index.json"));
  auto index = nlohmann::json::parse(index_text, nullptr, false);
  if (index.is_discarded() || !index["manifests"].is_array() || index["manifests"].empty()) {
    return InvalidArgumentError(image_tar + ": index.json names no manifest");
  }
  std::string manifest_digest = index["manifests"][0].value("digest", "");
  HULL_ASSIGN_OR_RETURN(std::string manifest_text, TarMember(image_tar, BlobPath(manifest_digest)));
  auto manifest = nlohmann::json::parse(manifest_text, nullptr, false);
  if (manifest.is_discarded() || !manifest["layers"].is_array() || manifest["layers"].empty()) {
    return InvalidArgumentError(image_tar + ": the manifest names no layer");
  }
  std::error_code ec;
  fs::create_directories(rootfs, ec);
  if (ec) return InternalError("mkdir " + rootfs + ": " + ec.message());
  for (const auto& layer : manifest["layers"]) {
    std::string blob = BlobPath(layer.value("digest", ""));
    itest::CommandResult r = itest::RunCommand(
        {"sh", "-c", "tar -xOf \"$0\" \"$1\" | tar -xzf - -C \"$2\"", image_tar, blob, rootfs});
    if (!r.ok()) return InternalError("unpack " + blob + ": " + r.Describe());
  }
  return Status::Ok();
}

Result<std::string> MakeOciSpec(const std::string& scratch_dir,
                                const std::vector<std::string>& args, const std::string& rootfs) {
  std::error_code ec;
  fs::create_directories(scratch_dir, ec);
  fs::remove(scratch_dir + "/config.json", ec);
  itest::CommandResult r = itest::RunCommand({"runc", "spec", "--bundle", scratch_dir});
  if (!r.ok()) return InternalError("runc spec: " + r.Describe());
  auto spec = nlohmann::json::parse(ReadWholeFile(scratch_dir + "/config.json"), nullptr, false);
  fs::remove(scratch_dir + "/config.json", ec);
  if (spec.is_discarded()) return InternalError("runc spec wrote no valid JSON");
  spec["process"]["terminal"] = false;
  spec["process"]["args"] = args;
  spec["root"]["path"] = rootfs;
  spec["annotations"] = nlohmann::json::object();
  return spec.dump(2);
}

Result<CpuPin> CpuPin::Start(const std::vector<pid_t>& pids, int cpu) {
  std::vector<pid_t> tids = {0};
  for (pid_t pid : pids) {
    std::error_code ec;
    for (const auto& task : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
      tids.push_back(static_cast<pid_t>(std::stol(task.path().filename().string())));
    }
    if (ec) return InternalError("list threads of " + std::to_string(pid) + ": " + ec.message());
  }
  CpuPin pin;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  for (pid_t tid : tids) {
    cpu_set_t old;
    if (::sched_getaffinity(tid, sizeof old, &old) != 0) {
      return ErrnoError("sched_getaffinity", std::to_string(tid));
    }
    if (::sched_setaffinity(tid, sizeof one, &one) != 0) {
      return ErrnoError("sched_setaffinity", std::to_string(tid));
    }
    pin.saved_.emplace_back(tid, old);
  }
  return pin;
}

CpuPin::~CpuPin() {
  for (const auto& [tid, mask] : saved_) ::sched_setaffinity(tid, sizeof mask, &mask);
}

}  // namespace hull::bench
