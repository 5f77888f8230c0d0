#include "shim/backend/vm/vm_template.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

#include "base/file_util.h"

namespace hull::shim::vm {
namespace {

namespace fs = std::filesystem;

constexpr char kMetaFile[] = "template.json";

uint64_t Fnv1a(std::string_view data) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : data) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string Hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016" PRIx64, v);
  return buf;
}

// "path:size:mtime" of a file, so that a replaced one is a new shape.
std::string FileId(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return path + ":missing";
  return path + ":" + std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec);
}

// Bytes a file really holds (tmpfs allocates pages as they are written).
uint64_t Allocated(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_blocks) * 512 : 0;
}

Result<std::string> StateHash(const std::string& path) {
  HULL_ASSIGN_OR_RETURN(std::string state, ReadFile(path));
  return Hex(Fnv1a(state));
}

}  // namespace

std::string TemplateKey(const GuestAssets& assets, const VmOptions& options, uint32_t vcpus,
                        uint64_t memory_mib, bool nic) {
  nlohmann::json key = {
      {"qemu", FileId(assets.qemu)},
      {"kernel", FileId(assets.kernel)},
      {"initramfs", FileId(assets.initramfs)},
      {"machine", options.machine},
      {"accel", options.accel},
      {"tcg_tb_size_mib", options.tcg_tb_size_mib},
      {"kernel_args", options.kernel_args},
      {"vcpus", vcpus},
      {"memory_mib", memory_mib},
      {"nic", nic},
  };
  return key.dump();
}

TemplateCache::TemplateCache(std::string root, uint64_t limit_mib)
    : root_(std::move(root)), limit_bytes_(limit_mib * 1024 * 1024) {}

std::string TemplateCache::DirOf(const std::string& key) const {
  return root_ + "/" + Hex(Fnv1a(key));
}

Result<std::optional<Template>> TemplateCache::Find(const std::string& key) {
  const std::string dir = DirOf(key);
  auto text = ReadFile(dir + "/" + kMetaFile);
  if (!text) {
    if (text.error().code() == Code::kNotFound && ::access(dir.c_str(), F_OK) != 0) {
      return std::optional<Template>();
    }
    Remove(key);
    return FailedPreconditionError("template " + dir + ": " + text.error().ToString());
  }
  auto meta = nlohmann::json::parse(*text, nullptr, false);
  if (!meta.is_object() || meta.value("key", "") != key) {
    Remove(key);
    return FailedPreconditionError("template " + dir + ": " + kMetaFile + " is not this shape's");
  }
  Template t{.dir = dir,
             .ram = dir + "/ram",
             .state = dir + "/state",
             .tsc_khz = meta.value("tsc_khz", ""),
             .mac = meta.value("mac", "")};
  struct stat st;
  const uint64_t ram_size = meta.value("ram_bytes", uint64_t{0});
  if (::stat(t.ram.c_str(), &st) != 0 || static_cast<uint64_t>(st.st_size) != ram_size) {
    Remove(key);
    return FailedPreconditionError("template " + dir +
                                   ": its RAM file is missing or of the wrong size");
  }
  Result<std::string> hash = StateHash(t.state);
  if (!hash || *hash != meta.value("state_hash", "")) {
    Remove(key);
    return FailedPreconditionError("template " + dir +
                                   ": its device state is missing or corrupted");
  }
  // The last use, for eviction.
  ::utimensat(AT_FDCWD, (dir + "/" + kMetaFile).c_str(), nullptr, 0);
  return std::optional<Template>(std::move(t));
}

Result<std::optional<TemplateBuild>> TemplateCache::Begin(const std::string& key) {
  std::error_code ec;
  fs::create_directories(root_, ec);
  if (ec) return InternalError("mkdir " + root_ + ": " + ec.message());
  // Searchable: a jailed clone's QEMU (not root) opens its template's RAM.
  ::chmod(root_.c_str(), 0711);
  struct statfs sfs;
  if (::statfs(root_.c_str(), &sfs) != 0) return ErrnoError("statfs", root_);
  if (sfs.f_type != TMPFS_MAGIC) {
    return FailedPreconditionError("the template cache " + root_ +
                                   " is not on tmpfs: clones would page their RAM from disk");
  }
  TemplateBuild build{.key = key, .dir = DirOf(key) + ".build", .lock = {}};
  build.lock = UniqueFd(::open((DirOf(key) + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!build.lock) return ErrnoError("open", DirOf(key) + ".lock");
  if (::flock(build.lock.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) return std::optional<TemplateBuild>();
    return ErrnoError("flock", DirOf(key) + ".lock");
  }
  // What a crashed builder left.
  fs::remove_all(build.dir, ec);
  fs::create_directories(build.share_dir(), ec);
  if (ec) return InternalError("mkdir " + build.share_dir() + ": " + ec.message());
  ::chmod(build.dir.c_str(), 0711);
  return std::optional<TemplateBuild>(std::move(build));
}

Result<Template> TemplateCache::Commit(TemplateBuild build, const std::string& tsc_khz,
                                       const std::string& mac) {
  struct stat st;
  if (::stat(build.ram().c_str(), &st) != 0) return ErrnoError("stat", build.ram());
  HULL_ASSIGN_OR_RETURN(std::string hash, StateHash(build.state()));
  nlohmann::json meta = {{"key", build.key},
                         {"ram_bytes", static_cast<uint64_t>(st.st_size)},
                         {"state_hash", hash},
                         {"tsc_khz", tsc_khz},
                         {"mac", mac}};
  // Only what clones need stays.
  std::error_code ec;
  for (const char* name : {"qmp.sock", "agent.sock", "share", "jail"}) {
    fs::remove_all(build.dir + "/" + name, ec);
  }
  HULL_RETURN_IF_ERROR(WriteFileAtomic(build.dir + "/" + kMetaFile, meta.dump(), 0600));
  const std::string dir = DirOf(build.key);
  fs::remove_all(dir, ec);
  if (::rename(build.dir.c_str(), dir.c_str()) != 0) return ErrnoError("rename", build.dir);
  Template t{
      .dir = dir, .ram = dir + "/ram", .state = dir + "/state", .tsc_khz = tsc_khz, .mac = mac};
  Evict();
  return t;
}

void TemplateCache::Remove(const std::string& key) {
  std::error_code ec;
  fs::remove_all(DirOf(key), ec);
}

void TemplateCache::Evict() {
  struct Entry {
    std::string dir;
    fs::file_time_type used;
    uint64_t bytes;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root_, ec)) {
    if (!e.is_directory(ec) || e.path().extension() == ".build") continue;
    const std::string dir = e.path().string();
    uint64_t bytes = Allocated(dir + "/ram") + Allocated(dir + "/state");
    auto used = fs::last_write_time(dir + "/" + kMetaFile, ec);
    if (ec) used = fs::file_time_type::min();
    entries.push_back({dir, used, bytes});
    total += bytes;
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.used < b.used; });
  for (const Entry& e : entries) {
    if (total <= limit_bytes_) break;
    fs::remove_all(e.dir, ec);
    total -= e.bytes;
  }
}

}  // namespace hull::shim::vm
