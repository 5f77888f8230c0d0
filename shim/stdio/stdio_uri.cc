// Parsing of containerd's stdio strings. The rules follow what containerd's
// runc shim accepts (Go's url.Parse plus its scheme switch), made strict where
// Go would silently do something surprising (a host in file://host/x, a
// stderr URI that differs from stdout's and would be ignored).
#include <algorithm>
#include <cctype>

#include "shim/stdio/stdio_uri_internal.h"

namespace hull::shim::stdio {
namespace {

std::string Quoted(std::string_view s) {
  return "\"" + std::string(s) + "\"";
}

// RFC 3986: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )
bool ValidScheme(std::string_view s) {
  if (s.empty() || !std::isalpha(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.';
  });
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// `plus_is_space`: form encoding, which query strings use.
Result<std::string> PercentDecode(std::string_view in, bool plus_is_space, std::string_view uri) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '+' && plus_is_space) {
      out.push_back(' ');
    } else if (c == '%') {
      int hi = i + 1 < in.size() ? HexValue(in[i + 1]) : -1;
      int lo = i + 2 < in.size() ? HexValue(in[i + 2]) : -1;
      if (hi < 0 || lo < 0) {
        return InvalidArgumentError("malformed URI " + Quoted(uri) + ": bad percent escape");
      }
      char decoded = static_cast<char>(hi * 16 + lo);
      if (decoded == '\0') {
        return InvalidArgumentError("malformed URI " + Quoted(uri) + ": NUL byte");
      }
      out.push_back(decoded);
      i += 2;
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// The path of a FIFO-mode stream: a plain path as given, or fifo://'s path.
Result<std::string> FifoPath(std::string_view stream, std::string_view text, const Uri& uri) {
  if (uri.scheme.empty()) return std::string(text);
  if (!uri.host.empty() || uri.path.empty()) {
    return InvalidArgumentError(std::string(stream) + " " + Quoted(text) +
                                ": want fifo:///path/of/fifo");
  }
  return uri.path;
}

}  // namespace

Result<Uri> ParseUri(std::string_view text) {
  Uri uri;
  // A plain path: absolute, or relative without any ':' (Go reads both as a
  // URL without a scheme, and the shim then uses the string verbatim).
  size_t colon = text.find(':');
  if (text.empty() || text.front() == '/' || colon == std::string_view::npos) {
    uri.path = std::string(text);
    return uri;
  }
  std::string_view scheme = text.substr(0, colon);
  if (!ValidScheme(scheme)) {
    return InvalidArgumentError("malformed URI " + Quoted(text) + ": bad scheme");
  }
  uri.scheme.resize(scheme.size());
  std::transform(scheme.begin(), scheme.end(), uri.scheme.begin(), [](char c) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  });

  std::string_view rest = text.substr(colon + 1);
  if (rest.find('#') != std::string_view::npos) {
    return InvalidArgumentError("malformed URI " + Quoted(text) + ": fragments are not supported");
  }
  size_t question = rest.find('?');
  std::string_view hier = rest.substr(0, question);
  std::string_view query =
      question == std::string_view::npos ? std::string_view() : rest.substr(question + 1);
  if (hier.starts_with("//")) {
    hier.remove_prefix(2);
    size_t slash = hier.find('/');
    uri.host = std::string(hier.substr(0, slash));
    hier = slash == std::string_view::npos ? std::string_view() : hier.substr(slash);
  }
  HULL_ASSIGN_OR_RETURN(uri.path, PercentDecode(hier, false, text));

  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    if (pair.find(';') != std::string_view::npos) {
      // Go rejects ';' as a separator; a literal one must be escaped.
      return InvalidArgumentError("malformed URI " + Quoted(text) + ": ';' in query");
    }
    size_t eq = pair.find('=');
    HULL_ASSIGN_OR_RETURN(std::string key, PercentDecode(pair.substr(0, eq), true, text));
    std::string value;
    if (eq != std::string_view::npos) {
      HULL_ASSIGN_OR_RETURN(value, PercentDecode(pair.substr(eq + 1), true, text));
    }
    uri.query.emplace_back(std::move(key), std::move(value));
  }
  return uri;
}

Result<StdioPlan> PlanStdio(const StdioConfig& config) {
  StdioPlan plan;
  plan.terminal = config.terminal;
  plan.stdin_path = config.stdin_path;
  const std::string& out_text = config.stdout_path;
  const std::string err_text = config.terminal ? std::string() : config.stderr_path;
  if (out_text.empty() && err_text.empty()) return plan;

  auto parse = [](std::string_view stream, std::string_view text) -> Result<Uri> {
    Result<Uri> uri = ParseUri(text);
    if (!uri) return uri.error().WithContext(stream);
    return uri;
  };
  HULL_ASSIGN_OR_RETURN(Uri out, parse("stdout", out_text));

  if (out.scheme.empty() || out.scheme == "fifo") {
    plan.mode = OutputMode::kFifo;
    HULL_ASSIGN_OR_RETURN(plan.stdout_path, FifoPath("stdout", out_text, out));
    if (!err_text.empty()) {
      HULL_ASSIGN_OR_RETURN(Uri err, parse("stderr", err_text));
      if (!err.scheme.empty() && err.scheme != "fifo") {
        return InvalidArgumentError("stderr " + Quoted(err_text) + ": scheme " +
                                    Quoted(err.scheme) + " where stdout is a FIFO");
      }
      HULL_ASSIGN_OR_RETURN(plan.stderr_path, FifoPath("stderr", err_text, err));
    }
    return plan;
  }

  const bool is_file = out.scheme == "file";
  const bool is_binary = out.scheme == "binary" || out.scheme == "binary-v2";
  if (!is_file && !is_binary) {
    return InvalidArgumentError("stdout " + Quoted(out_text) + ": unsupported scheme " +
                                Quoted(out.scheme) + " (want fifo, file, binary or binary-v2)");
  }
  if (!out.host.empty() || out.path.empty() || out.path.front() != '/') {
    return InvalidArgumentError("stdout " + Quoted(out_text) + ": want " + out.scheme +
                                ":///absolute/path");
  }
  // One URI serves both streams; containerd's shim would silently ignore a
  // different stderr, which is never what the client meant.
  if (!err_text.empty() && err_text != out_text) {
    return InvalidArgumentError("stderr " + Quoted(err_text) + " differs from stdout " +
                                Quoted(out_text) + "; " + out.scheme +
                                " logging takes one URI for both");
  }
  if (is_file) {
    plan.mode = OutputMode::kFile;
    plan.stdout_path = out.path;
    if (!err_text.empty()) plan.stderr_path = out.path;
    return plan;
  }
  plan.mode = OutputMode::kBinary;
  plan.logger.path = out.path;
  plan.logger.v2 = out.scheme == "binary-v2";
  // Go's url.Values keeps every value of a key and the shim passes the first.
  std::vector<std::string_view> seen;
  for (const auto& [key, value] : out.query) {
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
    seen.push_back(key);
    plan.logger.args.push_back(key);
    plan.logger.args.push_back(value);
  }
  return plan;
}

}  // namespace hull::shim::stdio
