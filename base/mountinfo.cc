#include "base/mountinfo.h"

#include <charconv>

#include "base/file_util.h"

namespace hull {
namespace {

// Undoes the kernel's \ooo escapes (seq_file's mangle and seq_escape).
std::string Unescape(std::string_view field) {
  std::string out;
  out.reserve(field.size());
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size()) {
      std::string_view digits = field.substr(i + 1, 3);
      if (digits.find_first_not_of("01234567") == std::string_view::npos && digits[0] <= '3') {
        out.push_back(static_cast<char>(((digits[0] - '0') << 6) | ((digits[1] - '0') << 3) |
                                        (digits[2] - '0')));
        i += 3;
        continue;
      }
    }
    out.push_back(field[i]);
  }
  return out;
}

// Splits on every `sep`: "a  b" is {"a", "", "b"}.
std::vector<std::string_view> SplitEvery(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  while (true) {
    size_t end = s.find(sep);
    out.push_back(s.substr(0, end));
    if (end == std::string_view::npos) return out;
    s.remove_prefix(end + 1);
  }
}

bool ParseId(std::string_view s, int& out) {
  if (s.empty() || s[0] == '-') return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

Result<MountInfo> ParseLine(std::string_view line) {
  // 0 id, 1 parent, 2 major:minor, 3 root, 4 mount point, 5 options,
  // [optional...], "-", fs_type, source, super options.
  std::vector<std::string_view> f = SplitEvery(line, ' ');
  size_t dash = 6;
  while (dash < f.size() && f[dash] != "-") ++dash;
  MountInfo m;
  if (f.size() != dash + 4 || !ParseId(f[0], m.id) || !ParseId(f[1], m.parent_id)) {
    return InvalidArgumentError("mountinfo: malformed line \"" + std::string(line) + "\"");
  }
  m.root = Unescape(f[3]);
  m.mount_point = Unescape(f[4]);
  m.fs_type = Unescape(f[dash + 1]);
  m.source = Unescape(f[dash + 2]);
  for (std::string_view option : SplitEvery(f[dash + 3], ',')) {
    if (!option.empty()) m.super_options.push_back(Unescape(option));
  }
  return m;
}

}  // namespace

Result<std::vector<MountInfo>> ParseMountInfo(std::string_view text) {
  std::vector<MountInfo> mounts;
  for (std::string_view line : SplitEvery(text, '\n')) {
    if (line.empty()) continue;
    HULL_ASSIGN_OR_RETURN(MountInfo m, ParseLine(line));
    mounts.push_back(std::move(m));
  }
  return mounts;
}

Result<std::vector<MountInfo>> ReadMountInfo(const std::string& path) {
  HULL_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  Result<std::vector<MountInfo>> mounts = ParseMountInfo(text);
  if (!mounts) return mounts.error().WithContext(path);
  return mounts;
}

}  // namespace hull
