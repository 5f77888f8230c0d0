# Sourced by tools/test and tools/demo: installs the Debian packages hull's
# build, tests and demo need. Idempotent and quiet when everything is there.
# Everything comes from Debian's archive; nothing is downloaded otherwise.

HULL_PACKAGES=(
  build-essential cmake ninja-build pkg-config clang-format
  libprotobuf-dev protobuf-compiler libevent-dev nlohmann-json3-dev
  libseccomp-dev libcap-dev libspdlog-dev libfmt-dev googletest libgtest-dev libgmock-dev
  libtomlplusplus-dev
  containerd runc crun runsc criu containernetworking-plugins busybox-static
  iproute2 procps psmisc util-linux python3-grpcio python3-protobuf
  qemu-system-x86
  podman etcd-server
  libclang-rt-14-dev
)

hull_install_deps() {
  local missing=()
  local p
  for p in "${HULL_PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$p")
    fi
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "missing packages (run as root to install): ${missing[*]}" >&2
    return 1
  fi
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null || return 1
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || return 1
  # The containerd package may start a system-wide daemon where an init system
  # runs; hull's tests use their own private one and never that.
}

# crun 1.8 refuses to run on a hybrid cgroup host whose cgroup2 hierarchy
# still has controllers ("cgroups in hybrid mode not supported, drop all
# controllers from cgroupv2"). On these machines hugetlb is left to cgroup2
# although no cgroup2 group uses it; binding it to a v1 hierarchy of its own,
# like every other controller here, gives the plain hybrid layout runc and
# crun both support. Idempotent; does nothing on a pure v1 or v2 host.
hull_prepare_cgroups() {
  local unified=/sys/fs/cgroup/unified
  [ -f "$unified/cgroup.controllers" ] || return 0
  [ "$(id -u)" -eq 0 ] || return 0
  local c
  for c in $(cat "$unified/cgroup.controllers"); do
    [ -n "$(cat "$unified/cgroup.subtree_control")" ] && return 0
    mkdir -p "/sys/fs/cgroup/$c" &&
      mount -t cgroup -o "$c" cgroup "/sys/fs/cgroup/$c" 2>/dev/null ||
      echo "note: could not bind cgroup controller $c to v1; crun may refuse this host" >&2
  done
}
