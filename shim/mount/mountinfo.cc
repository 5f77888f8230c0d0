#include "shim/mount/mountinfo.h"

#include <charconv>

#include "base/file_util.h"

namespace hull::shim {
namespace {

// Undoes the kernel's escaping of ' ', '\t', '\n' and '\\' as \ooo.
std::string Unescape(std::string_view field) {
  std::string out;
  out.reserve(field.size());
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size()) {
      int value = 0;
      bool octal = true;
      for (size_t j = 1; j <= 3; ++j) {
        char c = field[i + j];
        if (c < '0' || c > '7') octal = false;
        value = value * 8 + (c - '0');
      }
      if (octal && value < 256) {
        out.push_back(static_cast<char>(value));
        i += 3;
        continue;
      }
    }
    out.push_back(field[i]);
  }
  return out;
}

// Fields are separated by exactly one space; a field may be empty (a mount
// whose source is "").
std::vector<std::string_view> SplitFields(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t pos = 0;
  while (true) {
    size_t end = line.find(' ', pos);
    if (end == std::string_view::npos) {
      fields.push_back(line.substr(pos));
      return fields;
    }
    fields.push_back(line.substr(pos, end - pos));
    pos = end + 1;
  }
}

bool ParseInt(std::string_view s, int& out) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

}  // namespace

Result<std::vector<MountInfo>> ParseMountInfo(std::string_view text) {
  std::vector<MountInfo> mounts;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty()) continue;

    // id parent major:minor root mount_point options [optional...] - type source super
    std::vector<std::string_view> f = SplitFields(line);
    size_t dash = 6;
    while (dash < f.size() && f[dash] != "-") ++dash;
    MountInfo m;
    if (dash + 2 >= f.size() || !ParseInt(f[0], m.id) || !ParseInt(f[1], m.parent_id)) {
      return InvalidArgumentError("mountinfo: malformed line \"" + std::string(line) + "\"");
    }
    m.root = Unescape(f[3]);
    m.mount_point = Unescape(f[4]);
    m.fs_type = Unescape(f[dash + 1]);
    m.source = Unescape(f[dash + 2]);
    if (dash + 3 < f.size()) m.super_options = Unescape(f[dash + 3]);
    mounts.push_back(std::move(m));
  }
  return mounts;
}

Result<std::vector<MountInfo>> ReadMountInfo(const std::string& path) {
  HULL_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseMountInfo(text);
}

}  // namespace hull::shim
