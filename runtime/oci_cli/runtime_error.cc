#include "runtime/oci_cli/runtime_error.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

#include "base/text.h"
#include "base/unique_fd.h"

namespace hull::runtime::oci_cli {
namespace {

constexpr off_t kMaxLogTail = 64 << 10;

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// `pattern` with every "{state}" replaced by `state_dir`, lower-cased.
std::string Expand(std::string_view pattern, std::string_view state_dir) {
  constexpr std::string_view kState = "{state}";
  std::string out;
  for (;;) {
    size_t at = pattern.find(kState);
    out += pattern.substr(0, at);
    if (at == std::string_view::npos) break;
    out += state_dir;
    pattern.remove_prefix(at + kState.size());
  }
  return Lower(out);
}

// Removes the next `{...}` (braces inside JSON strings do not count) from the
// front of `text`, skipping what comes before it, and returns it. A line
// that is not JSON ends at its newline. Empty when no object is left.
std::string_view NextJsonObject(std::string_view& text) {
  size_t start = text.find('{');
  if (start == std::string_view::npos) {
    text = {};
    return {};
  }
  int depth = 0;
  bool in_string = false;
  for (size_t i = start; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{') {
      ++depth;
    } else if (c == '}' && --depth == 0) {
      std::string_view object = text.substr(start, i + 1 - start);
      text.remove_prefix(i + 1);
      return object;
    } else if (c == '\n' && depth <= 1) {
      break;  // not JSON after all (or cut short): resync on the next line
    }
  }
  // Unbalanced: drop through the end of the line and try again from there.
  size_t nl = text.find('\n', start);
  std::string_view broken =
      text.substr(start, nl == std::string_view::npos ? text.npos : nl - start);
  text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
  return broken;
}

}  // namespace

std::string LastLoggedError(std::string_view json_lines) {
  std::string last;
  while (!json_lines.empty()) {
    // One top-level object: runc and crun end each with a newline, runsc
    // writes them back to back, so split on the braces, not on lines.
    std::string_view entry_text = NextJsonObject(json_lines);
    if (entry_text.empty()) break;
    auto entry = nlohmann::json::parse(entry_text, nullptr, /*allow_exceptions=*/false);
    if (!entry.is_object()) continue;
    auto level = entry.find("level");
    auto msg = entry.find("msg");
    if (level == entry.end() || msg == entry.end() || !level->is_string() || !msg->is_string()) {
      continue;
    }
    const auto& lv = level->get_ref<const std::string&>();
    if (lv == "error" || lv == "fatal") last = TrimSpace(msg->get_ref<const std::string&>());
  }
  return last;
}

std::string FailureMessage(std::string_view log_tail, std::string_view stderr_text,
                           int exit_status) {
  std::string logged = LastLoggedError(log_tail);
  if (!logged.empty()) return logged;
  std::string_view err = TrimSpace(stderr_text);
  if (!err.empty()) {
    size_t nl = err.rfind('\n');
    return std::string(TrimSpace(nl == std::string_view::npos ? err : err.substr(nl + 1)));
  }
  return "exit status " + std::to_string(exit_status);
}

Status ClassifyFailure(const Flavour& flavour, std::string_view state_dir, std::string message) {
  std::string lower = Lower(message);
  for (const ErrorPattern& p : flavour.errors) {
    if (lower.find(Expand(p.text, state_dir)) != std::string::npos) {
      return Status(p.code, std::move(message));
    }
  }
  return UnknownError(std::move(message));
}

bool IsProcessGone(const Flavour& flavour, std::string_view message) {
  std::string lower = Lower(message);
  return std::any_of(flavour.process_gone.begin(), flavour.process_gone.end(),
                     [&](std::string_view p) { return lower.find(p) != std::string::npos; });
}

LogCursor LogCursor::At(std::string path) {
  LogCursor cursor;
  cursor.path_ = std::move(path);
  struct stat st;
  if (!cursor.path_.empty() && ::stat(cursor.path_.c_str(), &st) == 0) cursor.offset_ = st.st_size;
  return cursor;
}

std::string LogCursor::ReadNew() const {
  if (path_.empty()) return {};
  UniqueFd fd(::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  struct stat st;
  if (!fd || ::fstat(fd.get(), &st) != 0) return {};
  // A log that shrank was replaced: read it from the start.
  off_t from = st.st_size >= offset_ ? offset_ : 0;
  from = std::max(from, st.st_size - kMaxLogTail);
  std::string out(static_cast<size_t>(st.st_size - from), '\0');
  size_t got = 0;
  while (got < out.size()) {
    ssize_t n =
        ::pread(fd.get(), out.data() + got, out.size() - got, from + static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  out.resize(got);
  return out;
}

}  // namespace hull::runtime::oci_cli
