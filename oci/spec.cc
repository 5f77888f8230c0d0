#include "oci/spec.h"

#include <fcntl.h>
#include <unistd.h>

#include "base/file_util.h"
#include "base/unique_fd.h"

namespace hull::oci {
namespace {

using Json = SpecJson;

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

// The member `key` of the object `parent`, made an object if it is absent,
// null or of another type. `parent` must be an object.
Json& ObjectMember(Json& parent, std::string_view key) {
  Json& member = parent[std::string(key)];
  if (!member.is_object()) member = Json::object();
  return member;
}

// Same for an array member.
Json& ArrayMember(Json& parent, std::string_view key) {
  Json& member = parent[std::string(key)];
  if (!member.is_array()) member = Json::array();
  return member;
}

// The document itself, made an object if it is not one (only possible
// through mutable_json()).
Json& Root(Json& doc) {
  if (!doc.is_object()) doc = Json::object();
  return doc;
}

Status CheckStringArray(const Json* value, std::string_view what) {
  if (!value) return Status::Ok();
  if (!value->is_array()) return Invalid(std::string(what) + ": not an array");
  for (const Json& item : *value) {
    if (!item.is_string()) return Invalid(std::string(what) + ": not an array of strings");
  }
  return Status::Ok();
}

Status CheckStringMap(const Json* value, std::string_view what) {
  if (!value) return Status::Ok();
  if (!value->is_object()) return Invalid(std::string(what) + ": not an object");
  for (const auto& [key, item] : value->items()) {
    if (!item.is_string()) return Invalid(std::string(what) + "." + key + ": not a string");
  }
  return Status::Ok();
}

Status CheckString(const Json* value, std::string_view what) {
  if (value && !value->is_string()) return Invalid(std::string(what) + ": not a string");
  return Status::Ok();
}

Status ValidateProcess(const Json& process) {
  if (!process.is_object()) return Invalid("process: not an object");
  const Json* terminal = Member(process, "terminal");
  if (terminal && !terminal->is_boolean()) return Invalid("process.terminal: not a boolean");
  HULL_RETURN_IF_ERROR(CheckStringArray(Member(process, "args"), "process.args"));
  HULL_RETURN_IF_ERROR(CheckStringArray(Member(process, "env"), "process.env"));
  HULL_RETURN_IF_ERROR(CheckString(Member(process, "cwd"), "process.cwd"));
  const Json* oom = Member(process, "oomScoreAdj");
  if (oom && !oom->is_number_integer()) return Invalid("process.oomScoreAdj: not an integer");
  return Status::Ok();
}

Status ValidateMounts(const Json& mounts) {
  if (!mounts.is_array()) return Invalid("mounts: not an array");
  for (const Json& mount : mounts) {
    if (!mount.is_object()) return Invalid("mounts: entry is not an object");
    const Json* destination = Member(mount, "destination");
    if (!destination || !destination->is_string()) {
      return Invalid("mounts: entry without a destination");
    }
    HULL_RETURN_IF_ERROR(CheckString(Member(mount, "type"), "mounts.type"));
    HULL_RETURN_IF_ERROR(CheckString(Member(mount, "source"), "mounts.source"));
    HULL_RETURN_IF_ERROR(CheckStringArray(Member(mount, "options"), "mounts.options"));
  }
  return Status::Ok();
}

Status ValidateLinux(const Json& linux_section) {
  if (!linux_section.is_object()) return Invalid("linux: not an object");
  HULL_RETURN_IF_ERROR(CheckString(Member(linux_section, "cgroupsPath"), "linux.cgroupsPath"));
  HULL_RETURN_IF_ERROR(CheckStringMap(Member(linux_section, "sysctl"), "linux.sysctl"));
  if (const Json* namespaces = Member(linux_section, "namespaces")) {
    if (!namespaces->is_array()) return Invalid("linux.namespaces: not an array");
    for (const Json& ns : *namespaces) {
      const Json* type = Member(ns, "type");
      if (!type || !type->is_string()) return Invalid("linux.namespaces: entry without a type");
      const Json* path = Member(ns, "path");
      if (path && !path->is_string()) return Invalid("linux.namespaces: path is not a string");
    }
  }
  return Status::Ok();
}

// Rejects the wrong types for the fields the accessors read.
Status Validate(const Json& doc) {
  if (!doc.is_object()) return Invalid("not a JSON object");
  HULL_RETURN_IF_ERROR(CheckStringMap(Member(doc, "annotations"), "annotations"));
  HULL_RETURN_IF_ERROR(CheckString(Member(doc, "hostname"), "hostname"));
  if (const Json* process = Member(doc, "process")) HULL_RETURN_IF_ERROR(ValidateProcess(*process));
  if (const Json* mounts = Member(doc, "mounts")) HULL_RETURN_IF_ERROR(ValidateMounts(*mounts));
  if (const Json* linux_section = Member(doc, "linux")) {
    HULL_RETURN_IF_ERROR(ValidateLinux(*linux_section));
  }
  return Status::Ok();
}

std::string StringMember(const Json& object, std::string_view key) {
  const Json* value = Member(object, key);
  return value && value->is_string() ? value->get<std::string>() : std::string();
}

std::vector<std::string> StringArray(const Json* value) {
  std::vector<std::string> out;
  if (!value || !value->is_array()) return out;
  for (const Json& item : *value) {
    if (item.is_string()) out.push_back(item.get<std::string>());
  }
  return out;
}

std::map<std::string, std::string> StringMap(const Json* value) {
  std::map<std::string, std::string> out;
  if (!value || !value->is_object()) return out;
  for (const auto& [key, item] : value->items()) {
    if (item.is_string()) out.emplace(key, item.get<std::string>());
  }
  return out;
}

const Json* Section(const Json& doc, std::string_view key) {
  const Json* section = Member(doc, key);
  return section && section->is_object() ? section : nullptr;
}

}  // namespace

Result<Spec> Spec::Parse(std::string_view text) {
  Json doc = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    ErrorCapture capture;
    Json::sax_parse(text, &capture);
    return Invalid(capture.message().empty() ? "malformed JSON" : capture.message());
  }
  return FromJson(std::move(doc));
}

Result<Spec> Spec::FromJson(SpecJson doc) {
  HULL_RETURN_IF_ERROR(Validate(doc));
  return Spec(std::move(doc));
}

Result<Spec> Spec::Load(const std::string& path) {
  HULL_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return Parse(text);
}

std::map<std::string, std::string> Spec::Annotations() const {
  return StringMap(Member(json_, "annotations"));
}

std::optional<std::string> Spec::Annotation(std::string_view key) const {
  const Json* annotations = Member(json_, "annotations");
  if (!annotations) return std::nullopt;
  const Json* value = Member(*annotations, key);
  if (!value || !value->is_string()) return std::nullopt;
  return value->get<std::string>();
}

void Spec::SetAnnotation(std::string_view key, std::string_view value) {
  ObjectMember(Root(json_), "annotations")[std::string(key)] = std::string(value);
}

bool Spec::RemoveAnnotation(std::string_view key) {
  if (!json_.is_object()) return false;
  auto it = json_.find("annotations");
  if (it == json_.end() || !it->is_object()) return false;
  return it->erase(std::string(key)) > 0;
}

bool Spec::Terminal() const {
  const Json* process = Section(json_, "process");
  const Json* terminal = process ? Member(*process, "terminal") : nullptr;
  return terminal && terminal->is_boolean() && terminal->get<bool>();
}

std::vector<std::string> Spec::Args() const {
  const Json* process = Section(json_, "process");
  return StringArray(process ? Member(*process, "args") : nullptr);
}

std::vector<std::string> Spec::Env() const {
  const Json* process = Section(json_, "process");
  return StringArray(process ? Member(*process, "env") : nullptr);
}

std::string Spec::Cwd() const {
  const Json* process = Section(json_, "process");
  return process ? StringMember(*process, "cwd") : std::string();
}

std::optional<int> Spec::OomScoreAdj() const {
  const Json* process = Section(json_, "process");
  const Json* adj = process ? Member(*process, "oomScoreAdj") : nullptr;
  if (!adj || !adj->is_number_integer()) return std::nullopt;
  int64_t value = adj->get<int64_t>();
  if (value < -1000 || value > 1000) return std::nullopt;
  return static_cast<int>(value);
}

void Spec::SetOomScoreAdj(int adj) {
  ObjectMember(Root(json_), "process")["oomScoreAdj"] = adj;
}

std::string Spec::Hostname() const {
  return StringMember(json_, "hostname");
}

std::vector<Mount> Spec::Mounts() const {
  std::vector<Mount> out;
  const Json* mounts = Member(json_, "mounts");
  if (!mounts || !mounts->is_array()) return out;
  for (const Json& mount : *mounts) {
    if (!mount.is_object()) continue;
    out.push_back({StringMember(mount, "destination"), StringMember(mount, "type"),
                   StringMember(mount, "source"), StringArray(Member(mount, "options"))});
  }
  return out;
}

void Spec::AddMount(const Mount& mount) {
  Json entry = Json::object();
  entry["destination"] = mount.destination;
  if (!mount.type.empty()) entry["type"] = mount.type;
  if (!mount.source.empty()) entry["source"] = mount.source;
  if (!mount.options.empty()) entry["options"] = mount.options;
  ArrayMember(Root(json_), "mounts").push_back(std::move(entry));
}

size_t Spec::RemoveMounts(std::string_view destination) {
  if (!json_.is_object()) return 0;
  auto it = json_.find("mounts");
  if (it == json_.end() || !it->is_array()) return 0;
  Json kept = Json::array();
  size_t removed = 0;
  for (Json& mount : *it) {
    if (StringMember(mount, "destination") == destination) {
      ++removed;
    } else {
      kept.push_back(std::move(mount));
    }
  }
  *it = std::move(kept);
  return removed;
}

std::string Spec::CgroupsPath() const {
  const Json* linux_section = Section(json_, "linux");
  return linux_section ? StringMember(*linux_section, "cgroupsPath") : std::string();
}

void Spec::SetCgroupsPath(std::string_view path) {
  ObjectMember(Root(json_), "linux")["cgroupsPath"] = std::string(path);
}

std::vector<Namespace> Spec::Namespaces() const {
  std::vector<Namespace> out;
  const Json* linux_section = Section(json_, "linux");
  const Json* namespaces = linux_section ? Member(*linux_section, "namespaces") : nullptr;
  if (!namespaces || !namespaces->is_array()) return out;
  for (const Json& ns : *namespaces) {
    if (!ns.is_object()) continue;
    out.push_back({StringMember(ns, "type"), StringMember(ns, "path")});
  }
  return out;
}

void Spec::SetNamespacePath(std::string_view type, std::string_view path) {
  Json& namespaces = ArrayMember(ObjectMember(Root(json_), "linux"), "namespaces");
  Json* entry = nullptr;
  for (Json& ns : namespaces) {
    if (ns.is_object() && StringMember(ns, "type") == type) {
      entry = &ns;
      break;
    }
  }
  if (!entry) {
    namespaces.push_back(Json{{"type", std::string(type)}});
    entry = &namespaces.back();
  }
  if (path.empty()) {
    entry->erase("path");
  } else {
    (*entry)["path"] = std::string(path);
  }
}

size_t Spec::RemoveNamespace(std::string_view type) {
  const Json* linux_section = Section(json_, "linux");
  if (!linux_section) return 0;
  Json& section = json_["linux"];
  auto it = section.find("namespaces");
  if (it == section.end() || !it->is_array()) return 0;
  Json kept = Json::array();
  size_t removed = 0;
  for (Json& ns : *it) {
    if (ns.is_object() && StringMember(ns, "type") == type) {
      ++removed;
    } else {
      kept.push_back(std::move(ns));
    }
  }
  *it = std::move(kept);
  return removed;
}

std::map<std::string, std::string> Spec::Sysctls() const {
  const Json* linux_section = Section(json_, "linux");
  return StringMap(linux_section ? Member(*linux_section, "sysctl") : nullptr);
}

void Spec::SetSysctl(std::string_view key, std::string_view value) {
  ObjectMember(ObjectMember(Root(json_), "linux"), "sysctl")[std::string(key)] = std::string(value);
}

std::string Spec::Dump(int indent, char indent_char) const {
  return json_.dump(indent, indent_char, false, Json::error_handler_t::replace);
}

Status Spec::Save(const std::string& path) const {
  return WriteFileAtomic(path, Dump());
}

std::string HostNamespacesAsked(const Spec& spec) {
  bool pid = false, ipc = false;
  for (const Namespace& ns : spec.Namespaces()) {
    pid = pid || ns.type == "pid";
    ipc = ipc || ns.type == "ipc";
  }
  std::string asked;
  if (!pid) asked = "the host's PID namespace (hostPID: true)";
  if (!ipc) {
    if (!asked.empty()) asked += " and ";
    asked += "the host's IPC namespace (hostIPC: true)";
  }
  return asked;
}

std::optional<int> NamespacePathPid(std::string_view path, std::string_view type) {
  constexpr std::string_view kProc = "/proc/";
  const std::string tail = "/ns/" + std::string(type);
  if (type.empty() || !path.starts_with(kProc) || !path.ends_with(tail)) return std::nullopt;
  std::string_view number = path.substr(kProc.size(), path.size() - kProc.size() - tail.size());
  if (number.empty() || number.size() > 9 || number[0] == '0' ||
      number.find_first_not_of("0123456789") != std::string_view::npos) {
    return std::nullopt;
  }
  return std::stoi(std::string(number));
}

}  // namespace hull::oci
