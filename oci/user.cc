#include "oci/user.h"

#include <fcntl.h>
#include <unistd.h>

#include <charconv>
#include <optional>
#include <vector>

#include "base/file_util.h"
#include "base/unique_fd.h"

namespace hull::oci {
namespace {

// runc's limit, which containerd 2.x enforces too.
constexpr int64_t kMaxId = 2147483647;

std::optional<int64_t> ParseId(std::string_view text) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

Result<uint32_t> CheckedId(int64_t value, std::string_view what) {
  if (value < 0 || value > kMaxId) {
    return InvalidArgumentError(std::string(what) + " " + std::to_string(value) +
                                " out of range 0.." + std::to_string(kMaxId));
  }
  return static_cast<uint32_t>(value);
}

// <rootfs>/etc/<name>, opened without following a symlink at either step.
// NotFound when a component is missing.
Result<std::string> ReadEtcFile(const std::string& rootfs, const char* name) {
  UniqueFd root(::open(rootfs.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root) return ErrnoError("open", rootfs);
  UniqueFd etc(::openat(root.get(), "etc", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!etc) return ErrnoError("open", rootfs + "/etc");
  const std::string path = rootfs + "/etc/" + name;
  UniqueFd fd(::openat(etc.get(), name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return ErrnoError("open", path);
  return ReadAll(fd.get(), path);
}

std::vector<std::string_view> Split(std::string_view text, char separator) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (;;) {
    size_t end = text.find(separator, start);
    out.push_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return out;
}

// An /etc/passwd or /etc/group entry: name, id, and (passwd) the group id.
struct Entry {
  std::string_view name;
  int64_t id = 0;
  int64_t gid = 0;
};

// Entries of a colon-separated database, skipping comments and lines whose
// ids do not parse. `gid_field` is the index of the passwd gid, or 0.
std::vector<Entry> ParseDatabase(std::string_view text, size_t gid_field) {
  std::vector<Entry> out;
  for (std::string_view line : Split(text, '\n')) {
    if (line.empty() || line.front() == '#') continue;
    std::vector<std::string_view> fields = Split(line, ':');
    if (fields.size() < 3 || (gid_field != 0 && fields.size() <= gid_field)) continue;
    std::optional<int64_t> id = ParseId(fields[2]);
    std::optional<int64_t> gid = gid_field != 0 ? ParseId(fields[gid_field]) : id;
    if (!id || !gid) continue;
    out.push_back({fields[0], *id, *gid});
  }
  return out;
}

enum class Database { kPasswd, kGroup };

// Finds the entry matching `match` in the rootfs's passwd or group file.
// NotFound when the file or the entry is missing.
template <typename Match>
Result<Entry> Lookup(const std::string& rootfs, Database db, Match match) {
  const char* file = db == Database::kPasswd ? "passwd" : "group";
  HULL_ASSIGN_OR_RETURN(std::string text, ReadEtcFile(rootfs, file));
  for (const Entry& entry : ParseDatabase(text, db == Database::kPasswd ? 3 : 0)) {
    if (match(entry)) return entry;
  }
  return NotFoundError(std::string("no matching entry in ") + rootfs + "/etc/" + file);
}

Status NeedRootfs(std::string_view name) {
  return FailedPreconditionError("cannot resolve user or group name \"" + std::string(name) +
                                 "\" without the image rootfs");
}

Result<Entry> PasswdByName(std::string_view name, const std::string& rootfs) {
  if (rootfs.empty()) return NeedRootfs(name);
  return Lookup(rootfs, Database::kPasswd, [&](const Entry& e) { return e.name == name; });
}

// The group part of "user:group": a number, or a name from /etc/group.
Result<uint32_t> GroupId(std::string_view group, const std::string& rootfs) {
  if (std::optional<int64_t> gid = ParseId(group)) return CheckedId(*gid, "gid");
  if (rootfs.empty()) return NeedRootfs(group);
  HULL_ASSIGN_OR_RETURN(Entry entry, Lookup(rootfs, Database::kGroup,
                                            [&](const Entry& e) { return e.name == group; }));
  return CheckedId(entry.id, "gid");
}

}  // namespace

Result<ProcessUser> ResolveUser(std::string_view user, const std::string& rootfs) {
  std::vector<std::string_view> parts = Split(user, ':');
  if (parts.size() > 2) {
    return InvalidArgumentError("invalid USER value \"" + std::string(user) + "\"");
  }
  ProcessUser out;
  std::optional<int64_t> uid = ParseId(parts[0]);
  if (uid) {
    HULL_ASSIGN_OR_RETURN(out.uid, CheckedId(*uid, "uid"));
  } else {
    HULL_ASSIGN_OR_RETURN(Entry entry, PasswdByName(parts[0], rootfs));
    HULL_ASSIGN_OR_RETURN(out.uid, CheckedId(entry.id, "uid"));
    if (parts.size() == 1) {
      HULL_ASSIGN_OR_RETURN(out.gid, CheckedId(entry.gid, "gid"));
    }
  }
  if (parts.size() == 2) {
    HULL_ASSIGN_OR_RETURN(out.gid, GroupId(parts[1], rootfs));
    return out;
  }
  // A bare uid takes its primary group from passwd; gid 0 when it is not
  // listed (or there is no rootfs to look in).
  if (uid && !rootfs.empty()) {
    Result<Entry> entry =
        Lookup(rootfs, Database::kPasswd, [&](const Entry& e) { return e.id == *uid; });
    if (entry.has_value()) {
      HULL_ASSIGN_OR_RETURN(out.gid, CheckedId(entry->gid, "gid"));
    } else if (entry.error().code() != Code::kNotFound) {
      return entry.error();
    }
  }
  return out;
}

}  // namespace hull::oci
