// FakeHost: a temporary directory laid out like a host's /proc and
// /sys/fs/cgroup, for the cgroups tests. It writes <proc>/self/mountinfo
// describing its cgroup mounts, so DetectHost() sees it as a real host.
// Everything is removed when the FakeHost is destroyed.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>

#include "cgroups/cgroups.h"

namespace hull::cgroups::testing {

class FakeHost {
 public:
  FakeHost() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "hull-cgroups-XXXXXX").string();
    char* dir = ::mkdtemp(tmpl.data());
    EXPECT_NE(dir, nullptr);
    base_ = tmpl;
    roots_.proc = base_ / "proc";
    roots_.cgroupfs = base_ / "sys/fs/cgroup";
    MakeDirs(roots_.proc / "self");
    MakeDirs(roots_.cgroupfs);
    WriteMountinfo();
  }
  ~FakeHost() {
    std::error_code ignored;
    std::filesystem::remove_all(base_, ignored);
  }
  FakeHost(const FakeHost&) = delete;
  FakeHost& operator=(const FakeHost&) = delete;

  const Roots& roots() const { return roots_; }
  const std::filesystem::path& cgroupfs() const { return roots_.cgroupfs; }

  // A v1 hierarchy mounted at <cgroupfs>/<dir> with `controllers`
  // ("cpu,cpuacct"); `root` is the mount's root as mountinfo shows it.
  std::filesystem::path AddV1(std::string_view dir, std::string_view controllers,
                              std::string_view root = "/") {
    std::filesystem::path mp = roots_.cgroupfs / dir;
    MakeDirs(mp);
    mounts_ += Line(root, mp.string(), "cgroup", "rw," + std::string(controllers));
    WriteMountinfo();
    return mp;
  }
  // The layout of this project's CI host: one v1 hierarchy per controller
  // (cpu and cpuacct apart), an empty cgroup2 at unified/.
  void AddHybridLayout() {
    for (const char* c : {"cpu", "cpuacct", "cpuset", "memory", "devices", "freezer", "blkio",
                          "pids", "hugetlb", "rdma"}) {
      AddV1(c, c);
    }
    AddV1("systemd", "xattr,name=systemd");
    AddUnified("unified");
  }
  // A cgroup2 mount at <cgroupfs>/<dir> ("" for the root itself: unified).
  std::filesystem::path AddUnified(std::string_view dir = "", std::string_view root = "/") {
    std::filesystem::path mp = dir.empty() ? roots_.cgroupfs : roots_.cgroupfs / dir;
    MakeDirs(mp);
    mounts_ += Line(root, mp.string(), "cgroup2", "rw,nsdelegate");
    WriteMountinfo();
    return mp;
  }
  // A line of mountinfo as is, e.g. for a mount outside the cgroupfs root.
  void AddMountLine(std::string_view line) {
    mounts_ += std::string(line) + "\n";
    WriteMountinfo();
  }

  // Writes <cgroupfs>/<relative>, creating directories.
  void Write(const std::filesystem::path& relative, std::string_view content) {
    WriteAt(roots_.cgroupfs / relative, content);
  }
  void SetProcCgroup(pid_t pid, std::string_view content) {
    WriteAt(roots_.proc / std::to_string(pid) / "cgroup", content);
  }
  void WriteProc(const std::filesystem::path& relative, std::string_view content) {
    WriteAt(roots_.proc / relative, content);
  }

  // Creates <cgroupfs>/<relative> and its parents.
  void MakeCgroup(const std::filesystem::path& relative) { MakeDirs(roots_.cgroupfs / relative); }

  static void MakeDirs(const std::filesystem::path& path) {
    std::error_code ec;
    std::filesystem::create_directories(path, ec);
    ASSERT_FALSE(ec) << path << ": " << ec.message();
  }
  static void WriteAt(const std::filesystem::path& path, std::string_view content) {
    MakeDirs(path.parent_path());
    std::ofstream out(path, std::ios::trunc);
    out << content;
    ASSERT_TRUE(out.good()) << path;
  }

 private:
  std::string Line(std::string_view root, const std::string& mount_point, std::string_view type,
                   const std::string& super) {
    ++mount_id_;
    return std::to_string(mount_id_) + " 1 0:" + std::to_string(mount_id_) + " " +
           std::string(root) + " " + Escape(mount_point) + " rw,nosuid,nodev,noexec,relatime " +
           "shared:" + std::to_string(mount_id_) + " - " + std::string(type) + " " +
           std::string(type) + " " + super + "\n";
  }
  // mountinfo's octal escapes for the characters that would split a field.
  static std::string Escape(const std::string& s) {
    std::string out;
    for (char c : s) {
      if (c == ' ')
        out += "\\040";
      else if (c == '\\')
        out += "\\134";
      else
        out += c;
    }
    return out;
  }
  void WriteMountinfo() {
    WriteAt(roots_.proc / "self/mountinfo",
            "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
            "23 22 0:21 / /proc rw,nosuid - proc proc rw\n" +
                mounts_);
  }

  std::filesystem::path base_;
  Roots roots_;
  std::string mounts_;
  int mount_id_ = 30;
};

}  // namespace hull::cgroups::testing
