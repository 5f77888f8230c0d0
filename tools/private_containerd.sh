# Sourced by tools/demo and the packaging tests: one throwaway containerd
# whose root, state, sockets and logs all live under one directory, never the
# system's. Bash; callers `set -euo pipefail`.
#
#   pc_init NAME          PC_DIR=/tmp/NAME-XXXXXX (0755: runsc's sandbox user
#                         mounts its chroot below it), PC_CGROUP=/NAME-<pid>
#                         (cgroup parent for CRI pods), PC_SOCK
#   pc_config_v2 [TOML]   prints a version 2 main config: private paths, CRI on
#                         (no CNI network: pods use the host's), runc as CRI's
#                         default runtime; TOML (top-level keys) goes first
#   pc_pod_network        a CNI network for POD-network pods (a bridge
#                         PC_BRIDGE, host-local on 127.202.0.0/24, state in
#                         PC_DIR; the bridge goes in pc_cleanup)
#   pc_start CONFIG [PATH_PREFIX] [CONTAINERD]
#                         starts containerd on CONFIG, waits until it answers
#   pc_ctr ARGS...        ctr against it
#   pc_images             imports tools/mkimage's busybox and pause images
#                         (namespaces default and k8s.io)
#   pc_cri METHOD [JSON]  one CRI call (tests/integration/cri/cri_client.py)
#   pc_shims              pids of the shims serving it
#   pc_cleanup            removes everything: pods, tasks, containerd, shims,
#                         containers, mounts, the pod cgroups, PC_DIR
# Needs: the repository as the working directory (cd "$repo" first).

pc_init() {
  PC_DIR=$(mktemp -d "/tmp/$1-XXXXXX")
  chmod 0755 "$PC_DIR"
  PC_CGROUP=/$1-$$
  PC_SOCK=$PC_DIR/containerd.sock
  PC_PID=
}

pc_config_v2() {
  cat <<TOML
version = 2
root = "$PC_DIR/root"
state = "$PC_DIR/state"
disabled_plugins = ["io.containerd.internal.v1.opt",
  "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs"]
${1:-}
[grpc]
  address = "$PC_SOCK"
[debug]
  address = ""
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.6"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
[plugins."io.containerd.grpc.v1.cri".cni]
  conf_dir = "$PC_DIR/cni/net.d"
  bin_dir = "/usr/lib/cni"
[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "runc"
# containerd 1.x: a runtimes table replaces the default runc entry.
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
TOML
}

pc_ctr() { ctr --address "$PC_SOCK" "$@"; }

pc_start() {
  local config=$1 path_prefix=${2:-} bin=${3:-containerd}
  PATH="$path_prefix${path_prefix:+:}/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    "$bin" --config "$config" >>"$PC_DIR/containerd.log" 2>&1 &
  PC_PID=$!
  local _
  for _ in $(seq 150); do
    pc_ctr version >/dev/null 2>&1 && return 0
    kill -0 "$PC_PID" 2>/dev/null || break
    sleep 0.1
  done
  echo "containerd did not start:" >&2
  tail -20 "$PC_DIR/containerd.log" >&2
  return 1
}

pc_images() {
  local tar
  for tar in $(tools/mkimage "$(pwd)/build/images"); do
    pc_ctr images import "$tar" >/dev/null
    pc_ctr -n k8s.io images import "$tar" >/dev/null
  done
}

pc_cri() {
  if [ ! -f "$PC_DIR/cri_py/cri/runtime/v1/api_pb2.py" ]; then
    mkdir -p "$PC_DIR/cri_py"
    protoc -I proto --python_out="$PC_DIR/cri_py" proto/cri/runtime/v1/api.proto
  fi
  PYTHONPATH="$PC_DIR/cri_py" /usr/bin/python3 tests/integration/cri/cri_client.py \
    --endpoint "unix://$PC_SOCK" "$@"
}

# json_get KEY: KEY of the JSON object on stdin.
json_get() { /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }

# Every hull process of this containerd, servers and their spawners.
pc_hull_processes() { pgrep -f "containerd-shim-hull-v2 .*$PC_SOCK" || true; }
# The hull servers of this containerd: not their spawners (the same binary
# and command line, named hull-spawner; confined servers have one).
pc_shims() {
  local pid
  for pid in $(pgrep -f "containerd-shim-hull-v2 .*$PC_SOCK"); do
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = hull-spawner ] || echo "$pid"
  done
}

pc_pod_network() {
  PC_BRIDGE=hullpc$(($$ % 100000))
  mkdir -p "$PC_DIR/cni/net.d"
  cat >"$PC_DIR/cni/net.d/10-hullpc.conflist" <<JSON
{"cniVersion": "0.4.0", "name": "$PC_BRIDGE", "plugins": [
  {"type": "bridge", "bridge": "$PC_BRIDGE", "isGateway": true, "ipMasq": false,
   "ipam": {"type": "host-local", "dataDir": "$PC_DIR/cni/ipam",
            "ranges": [[{"subnet": "127.202.0.0/24"}]], "routes": []}},
  {"type": "loopback"}]}
JSON
}

pc_cleanup() {
  [ -n "${PC_BRIDGE:-}" ] && ip link del "$PC_BRIDGE" 2>/dev/null
  [ -n "${PC_DIR:-}" ] && [ -d "$PC_DIR" ] || return 0
  set +e
  local id ns pid
  if [ -n "$PC_PID" ] && kill -0 "$PC_PID" 2>/dev/null; then
    for id in $(pc_cri ListPodSandbox 2>/dev/null | /usr/bin/python3 -c \
        'import json,sys; [print(p["id"]) for p in json.load(sys.stdin).get("items", [])]' 2>/dev/null); do
      pc_cri StopPodSandbox "{\"pod_sandbox_id\": \"$id\"}" >/dev/null 2>&1
      pc_cri RemovePodSandbox "{\"pod_sandbox_id\": \"$id\"}" >/dev/null 2>&1
    done
    for ns in default k8s.io; do
      for id in $(pc_ctr -n "$ns" task ls -q 2>/dev/null); do
        pc_ctr -n "$ns" task kill -s SIGKILL "$id" >/dev/null 2>&1
        pc_ctr -n "$ns" task rm -f "$id" >/dev/null 2>&1
      done
      for id in $(pc_ctr -n "$ns" container ls -q 2>/dev/null); do
        pc_ctr -n "$ns" container rm "$id" >/dev/null 2>&1
      done
    done
    kill "$PC_PID" 2>/dev/null
    wait "$PC_PID" 2>/dev/null
  fi
  # What a failed step left: containers (by their bundles' pid files), then
  # the shims serving this containerd and their sockets.
  local bundle
  for bundle in "$PC_DIR"/state/io.containerd.runtime.v2.task/*/*/; do
    [ -f "$bundle/init.pid" ] && kill -KILL "$(cat "$bundle/init.pid")" 2>/dev/null
    ns=$(basename "$(dirname "$bundle")")
    runc --root "/run/containerd/runc/$ns" delete --force "$(basename "$bundle")" >/dev/null 2>&1
  done
  for pid in $(pc_shims); do kill -KILL "$pid" 2>/dev/null; done
  for pid in $(pgrep -f "runsc.*$PC_DIR/"); do kill -KILL "$pid" 2>/dev/null; done
  local address
  for address in $(cat "$PC_DIR"/state/io.containerd.runtime.v2.task/*/*/address 2>/dev/null); do
    rm -f "${address#unix://}"
  done
  grep -o " $PC_DIR[^ ]*" /proc/self/mountinfo | sort -r | while read -r m; do umount -l "$m"; done
  local h
  for h in /sys/fs/cgroup/*/ /sys/fs/cgroup/; do
    [ -d "$h${PC_CGROUP#/}" ] && find "$h${PC_CGROUP#/}" -depth -type d -exec rmdir {} + 2>/dev/null
  done
  rm -rf "$PC_DIR"
  PC_DIR=
  set -e
}
