// Rootfs mounts: the containerd.types.Mount list of a task mounted into
// <bundle>/rootfs, and the recursive unmount that undoes it (task Delete and
// the `delete` action). Blocking mount(2) calls; needs CAP_SYS_ADMIN. The
// overlay option-length workaround changes the working directory for the
// duration of one mount(2), so callers must be single-threaded (hull is).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "containerd/types/mount.pb.h"

namespace hull::shim {

// One mount as containerd describes it.
struct Mount {
  std::string type;    // "overlay", "bind", "tmpfs", ...
  std::string source;  // a path, a device, or a placeholder like "overlay"
  // Optional subdirectory of the root to mount on, resolved inside the root
  // (symlinks cannot lead out of it). Empty: the root itself.
  std::string target;
  std::vector<std::string> options;  // fstab style: "ro", "lowerdir=...", ...
};

std::vector<Mount> MountsFromProto(
    const google::protobuf::RepeatedPtrField<containerd::types::Mount>& mounts);

// What mount(2) gets for a list of fstab-style options.
struct MountOptions {
  unsigned long flags = 0;        // MS_* for the mount call (no propagation bits)
  unsigned long propagation = 0;  // MS_PRIVATE/SHARED/SLAVE/UNBINDABLE, maybe | MS_REC
  std::vector<std::string> data;  // everything else, for the filesystem
};

// Maps flag words (ro, rw, nosuid, nodev, noexec, bind, rbind, relatime,
// private, rshared, ...) to MS_* flags and keeps the rest as data. Options
// starting with "X-containerd." are containerd's own and are dropped. loop,
// uidmap= and gidmap= are Unimplemented.
Result<MountOptions> ParseMountOptions(std::span<const std::string> options);

// Mounts `mounts`, in order, onto `root` (an existing directory). All or
// nothing: on any failure every mount made so far is undone and the error
// names the mount that failed. An empty list does nothing.
//  - bind/rbind: the bind is made first; ro, nosuid, nodev, noexec and the
//    atime flags are then applied with a remount (the kernel ignores them on
//    the bind itself).
//  - overlay: lowerdir/upperdir/workdir pass through as data; when the data
//    would not fit in a page, the lowerdirs are made relative to their common
//    parent directory and mount(2) runs from there.
//  - anything else: mount(source, target, type, flags, data).
Status MountAll(std::span<const Mount> mounts, const std::string& root);

// A task's rootfs (CreateTaskRequest.rootfs) into `target`, usually
// <bundle>/rootfs: MountAll(MountsFromProto(rootfs), target).
Status MountRootfs(const google::protobuf::RepeatedPtrField<containerd::types::Mount>& rootfs,
                   const std::string& target);

// Unmounts everything mounted at or below `path`, deepest first, detaching
// (MNT_DETACH) what is busy. Idempotent: a path that does not exist or has
// nothing mounted is success. Refuses "/".
Status UnmountAll(const std::string& path);

}  // namespace hull::shim
