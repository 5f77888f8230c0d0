#include "oci/spec.h"

#include <fcntl.h>
#include <unistd.h>

#include "base/unique_fd.h"

namespace hull::oci {
namespace {

using Json = nlohmann::json;

// Captures the first syntax error of a SAX parse without throwing; nlohmann's
// non-throwing parse() only says "discarded", not where or why.
class ErrorCapture : public nlohmann::json_sax<Json> {
 public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&,
                   const nlohmann::detail::exception& ex) override {
    message_ = ex.what();
    // Drop the "[json.exception.parse_error.101] " tag.
    if (!message_.empty() && message_.front() == '[') {
      size_t end = message_.find("] ");
      if (end != std::string::npos) message_.erase(0, end + 2);
    }
    return false;
  }
  const std::string& message() const { return message_; }

 private:
  std::string message_;
};

Status Invalid(std::string_view what) {
  return InvalidArgumentError(std::string(kConfigFileName) + ": " + std::string(what));
}

// The member `key` of `object` if it is present and not null.
const Json* Member(const Json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

// Rejects the wrong types for the fields the accessors read.
Status Validate(const Json& doc) {
  if (!doc.is_object()) return Invalid("not a JSON object");
  if (const Json* annotations = Member(doc, "annotations")) {
    if (!annotations->is_object()) return Invalid("annotations: not an object");
    for (const auto& [key, value] : annotations->items()) {
      if (!value.is_string()) return Invalid("annotations." + key + ": not a string");
    }
  }
  if (const Json* process = Member(doc, "process")) {
    if (!process->is_object()) return Invalid("process: not an object");
    const Json* terminal = Member(*process, "terminal");
    if (terminal && !terminal->is_boolean()) return Invalid("process.terminal: not a boolean");
  }
  if (const Json* linux_section = Member(doc, "linux")) {
    if (!linux_section->is_object()) return Invalid("linux: not an object");
    const Json* cgroups_path = Member(*linux_section, "cgroupsPath");
    if (cgroups_path && !cgroups_path->is_string()) {
      return Invalid("linux.cgroupsPath: not a string");
    }
    if (const Json* namespaces = Member(*linux_section, "namespaces")) {
      if (!namespaces->is_array()) return Invalid("linux.namespaces: not an array");
      for (const Json& ns : *namespaces) {
        const Json* type = Member(ns, "type");
        if (!type || !type->is_string()) return Invalid("linux.namespaces: entry without a type");
        const Json* path = Member(ns, "path");
        if (path && !path->is_string()) return Invalid("linux.namespaces: path is not a string");
      }
    }
  }
  return Status::Ok();
}

std::string StringMember(const Json& object, std::string_view key) {
  const Json* value = Member(object, key);
  return value && value->is_string() ? value->get<std::string>() : std::string();
}

}  // namespace

Result<Spec> Spec::Parse(std::string_view text) {
  Json doc = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    ErrorCapture capture;
    Json::sax_parse(text, &capture);
    return Invalid(capture.message().empty() ? "malformed JSON" : capture.message());
  }
  HULL_RETURN_IF_ERROR(Validate(doc));
  return Spec(std::move(doc));
}

Result<Spec> Spec::Load(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return ErrnoError("open", path);
  std::string text;
  char buf[16384];
  while (true) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError("read", path);
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  return Parse(text);
}

std::map<std::string, std::string> Spec::Annotations() const {
  std::map<std::string, std::string> out;
  const Json* annotations = Member(json_, "annotations");
  if (!annotations || !annotations->is_object()) return out;
  for (const auto& [key, value] : annotations->items()) {
    if (value.is_string()) out.emplace(key, value.get<std::string>());
  }
  return out;
}

std::optional<std::string> Spec::Annotation(std::string_view key) const {
  const Json* annotations = Member(json_, "annotations");
  if (!annotations) return std::nullopt;
  const Json* value = Member(*annotations, key);
  if (!value || !value->is_string()) return std::nullopt;
  return value->get<std::string>();
}

bool Spec::Terminal() const {
  const Json* process = Member(json_, "process");
  const Json* terminal = process ? Member(*process, "terminal") : nullptr;
  return terminal && terminal->is_boolean() && terminal->get<bool>();
}

std::string Spec::CgroupsPath() const {
  const Json* linux_section = Member(json_, "linux");
  return linux_section ? StringMember(*linux_section, "cgroupsPath") : std::string();
}

std::vector<Namespace> Spec::Namespaces() const {
  std::vector<Namespace> out;
  const Json* linux_section = Member(json_, "linux");
  const Json* namespaces = linux_section ? Member(*linux_section, "namespaces") : nullptr;
  if (!namespaces || !namespaces->is_array()) return out;
  for (const Json& ns : *namespaces) {
    if (!ns.is_object()) continue;
    out.push_back({StringMember(ns, "type"), StringMember(ns, "path")});
  }
  return out;
}

std::string Spec::Dump() const {
  return json_.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace hull::oci
