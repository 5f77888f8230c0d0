#include "shim/cli/bootstrap_output.h"

#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include <charconv>
#include <cstring>
#include <vector>

#include "base/unique_fd.h"
#include "containerd/runtime/bootstrap/v1/bootstrap.pb.h"

namespace hull::shim {
namespace {

constexpr std::string_view kContainerdModule = "github.com/containerd/containerd";
// The first bytes of .go.buildinfo (Go's debug/buildinfo).
constexpr std::string_view kBuildInfoMagic = "\xff Go buildinf:";
constexpr size_t kBuildInfoHeaderSize = 32;
// Flag bit: version and module info follow the header inline (Go 1.18+).
constexpr unsigned char kBuildInfoInline = 0x2;
// Larger than any real module list; bounds what a strange file costs.
constexpr uint64_t kMaxBuildInfoSize = 4 << 20;

std::string Json(int version, const std::string& address) {
  // The address is a unix:// path hull made (hex digest under a socket
  // dir); quote the two characters JSON requires anyway.
  std::string quoted;
  for (char c : address) {
    if (c == '"' || c == '\\') quoted += '\\';
    quoted += c;
  }
  return "{\"version\":" + std::to_string(version) + ",\"address\":\"" + quoted +
         "\",\"protocol\":\"ttrpc\"}";
}

Status PreadExact(int fd, void* buf, size_t size, uint64_t offset, const std::string& path) {
  auto* out = static_cast<char*>(buf);
  while (size > 0) {
    ssize_t n = ::pread(fd, out, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError("read", path);
    if (n == 0) return InvalidArgumentError(path + ": truncated ELF file");
    out += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return Status::Ok();
}

// A Go uvarint at the front of `data`, consumed.
std::optional<uint64_t> TakeUvarint(std::string_view& data) {
  uint64_t value = 0;
  for (size_t i = 0; i < data.size() && i < 10; ++i) {
    auto byte = static_cast<unsigned char>(data[i]);
    value |= uint64_t{byte & 0x7fu} << (7 * i);
    if ((byte & 0x80u) == 0) {
      data.remove_prefix(i + 1);
      return value;
    }
  }
  return std::nullopt;
}

std::optional<std::string_view> TakeString(std::string_view& data) {
  std::optional<uint64_t> size = TakeUvarint(data);
  if (!size || *size > data.size()) return std::nullopt;
  std::string_view s = data.substr(0, *size);
  data.remove_prefix(*size);
  return s;
}

}  // namespace

StartOutputFormat ChooseStartOutput(StartOutputMode mode, const DaemonSignals& signals) {
  switch (mode) {
    case StartOutputMode::kAddress: return StartOutputFormat::kAddress;
    case StartOutputMode::kJsonV2: return StartOutputFormat::kJsonV2;
    case StartOutputMode::kJsonV3: return StartOutputFormat::kJsonV3;
    case StartOutputMode::kAuto: break;
  }
  if (signals.bootstrap_params) return StartOutputFormat::kProtobufV3;
  // 1.6 sets no MAX_SHIM_VERSION and reads any output as the address.
  if (!signals.max_shim_version_set) return StartOutputFormat::kAddress;
  // 1.7 and 2.0-2.2 set the same environment; only the daemon's own module
  // says which. 1.7 fails a task on version 3, so anything short of proof
  // of v2 gets the address every version takes.
  if (signals.daemon_module_major && *signals.daemon_module_major >= 2) {
    return StartOutputFormat::kJsonV3;
  }
  return StartOutputFormat::kAddress;
}

std::string FormatStartOutput(StartOutputFormat format, const std::string& address) {
  switch (format) {
    case StartOutputFormat::kAddress: return address;
    case StartOutputFormat::kJsonV2: return Json(2, address);
    case StartOutputFormat::kJsonV3: return Json(3, address);
    case StartOutputFormat::kProtobufV3: {
      containerd::runtime::bootstrap::v1::BootstrapResult result;
      result.set_version(3);
      result.set_address(address);
      result.set_protocol("ttrpc");
      return result.SerializeAsString();
    }
  }
  return address;
}

std::string_view StartOutputName(StartOutputFormat format) {
  switch (format) {
    case StartOutputFormat::kAddress: return "address";
    case StartOutputFormat::kJsonV2: return "json-v2";
    case StartOutputFormat::kJsonV3: return "json-v3";
    case StartOutputFormat::kProtobufV3: return "protobuf-v3";
  }
  return "address";
}

std::optional<int> ContainerdModuleMajor(std::string_view modinfo) {
  size_t pos = 0;
  while (pos < modinfo.size()) {
    size_t end = modinfo.find('\n', pos);
    if (end == std::string_view::npos) end = modinfo.size();
    std::string_view line = modinfo.substr(pos, end - pos);
    pos = end + 1;
    if (!line.starts_with("mod\t")) continue;
    line.remove_prefix(4);
    std::string_view path = line.substr(0, line.find('\t'));
    if (path == kContainerdModule) return 1;
    if (!path.starts_with(kContainerdModule) || path.size() < kContainerdModule.size() + 3 ||
        path.substr(kContainerdModule.size(), 2) != "/v") {
      return std::nullopt;
    }
    std::string_view digits = path.substr(kContainerdModule.size() + 2);
    int major = 0;
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), major);
    if (ec != std::errc() || ptr != digits.data() + digits.size() || major < 2) {
      return std::nullopt;
    }
    return major;
  }
  return std::nullopt;
}

Result<std::string> ReadGoModuleInfo(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return ErrnoError("open", path);
  Elf64_Ehdr ehdr;
  if (Status read = PreadExact(fd.get(), &ehdr, sizeof ehdr, 0, path); !read.ok()) {
    // Shorter than an ELF header: not an executable hull can read.
    return read.code() == Code::kInvalidArgument ? NotFoundError(path + ": not an ELF file") : read;
  }
  if (std::memcmp(ehdr.e_ident, ELFMAG, SELFMAG) != 0 || ehdr.e_ident[EI_CLASS] != ELFCLASS64 ||
      ehdr.e_shentsize != sizeof(Elf64_Shdr) || ehdr.e_shstrndx >= ehdr.e_shnum) {
    return NotFoundError(path + ": not a 64-bit ELF file with sections");
  }
  std::vector<Elf64_Shdr> sections(ehdr.e_shnum);
  HULL_RETURN_IF_ERROR(PreadExact(fd.get(), sections.data(), sections.size() * sizeof(Elf64_Shdr),
                                  ehdr.e_shoff, path));
  const Elf64_Shdr& names = sections[ehdr.e_shstrndx];
  if (names.sh_size > kMaxBuildInfoSize) return NotFoundError(path + ": oversized section names");
  std::string strtab(names.sh_size, '\0');
  HULL_RETURN_IF_ERROR(PreadExact(fd.get(), strtab.data(), strtab.size(), names.sh_offset, path));

  for (const Elf64_Shdr& section : sections) {
    if (section.sh_name >= strtab.size() ||
        std::string_view(strtab.c_str() + section.sh_name) != ".go.buildinfo") {
      continue;
    }
    if (section.sh_type == SHT_NOBITS || section.sh_size < kBuildInfoHeaderSize ||
        section.sh_size > kMaxBuildInfoSize) {
      return NotFoundError(path + ": unreadable .go.buildinfo");
    }
    std::string data(section.sh_size, '\0');
    HULL_RETURN_IF_ERROR(PreadExact(fd.get(), data.data(), data.size(), section.sh_offset, path));
    std::string_view view = data;
    if (!view.starts_with(kBuildInfoMagic) ||
        (static_cast<unsigned char>(view[kBuildInfoMagic.size() + 1]) & kBuildInfoInline) == 0) {
      return NotFoundError(path + ": Go build info older than Go 1.18");
    }
    view.remove_prefix(kBuildInfoHeaderSize);
    std::optional<std::string_view> go_version = TakeString(view);
    std::optional<std::string_view> modinfo = go_version ? TakeString(view) : std::nullopt;
    if (!modinfo) return NotFoundError(path + ": malformed Go build info");
    return std::string(*modinfo);
  }
  return NotFoundError(path + ": no Go build info");
}

std::optional<int> DaemonModuleMajor(pid_t pid) {
  Result<std::string> modinfo = ReadGoModuleInfo("/proc/" + std::to_string(pid) + "/exe");
  if (!modinfo) return std::nullopt;
  return ContainerdModuleMajor(*modinfo);
}

}  // namespace hull::shim
