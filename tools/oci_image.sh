# Sourced by tools/mkimage and tools/mkimage-node: deterministic OCI image
# tarballs (one layer, fixed mtimes, owners and order; gzip -n) from a root
# filesystem directory. Callers set $work (a scratch directory) and $arch
# (amd64, arm64, ...) and `set -euo pipefail`.
#
#   make_skeleton ROOT     the directories runtimes mount over, root/user/nobody
#   add_busybox ROOT BIN   BIN as /bin/busybox, a link for every applet
#   fix_modes ROOT         modes independent of the caller's umask
#   make_image OUT ROOTFS CONFIG_JSON REF...
#                          CONFIG_JSON: the body of the image config's "config"
#                          object; each REF a full reference name:tag

# Deterministic tar: sorted names, fixed times and owners, no user names.
dtar() {
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner \
      --format=gnu "$@"
}

# Moves FILE into LAYOUT's blob store; prints "sha256:<hex> <size>".
add_blob() {
  local layout=$1 file=$2 hex size
  hex=$(sha256sum "$file" | cut -d' ' -f1)
  size=$(stat -c %s "$file")
  mkdir -p "$layout/blobs/sha256"
  mv "$file" "$layout/blobs/sha256/$hex"
  echo "sha256:$hex $size"
}

# json_strings A B C -> "A","B","C"   (the values used here need no escaping)
json_strings() {
  local out="" s
  for s in "$@"; do out+="${out:+,}\"$s\""; done
  printf '%s' "$out"
}

# make_image OUT ROOTFS CONFIG_JSON REF...
#   CONFIG_JSON is the body of the image config's "config" object.
#   Each REF is a full reference name:tag.
make_image() {
  local out=$1 rootfs=$2 config_body=$3
  shift 3
  local layout=$work/layout.$(basename "$out" .tar)
  mkdir -p "$layout"

  # Layer: the rootfs, as tar (diff id) and tar.gz (blob).
  local entries
  entries=$(cd "$rootfs" && LC_ALL=C ls -A | LC_ALL=C sort)
  # shellcheck disable=SC2086  # entries are plain top-level names
  (cd "$rootfs" && dtar -cf "$work/layer.tar" $entries)
  local diff_id
  diff_id=sha256:$(sha256sum "$work/layer.tar" | cut -d' ' -f1)
  gzip -n -"${HULL_IMAGE_GZIP_LEVEL:-9}" -c "$work/layer.tar" >"$work/layer.tar.gz"
  rm -f "$work/layer.tar"
  local layer layer_digest layer_size
  layer=$(add_blob "$layout" "$work/layer.tar.gz")
  layer_digest=${layer% *} layer_size=${layer#* }

  printf '{"architecture":"%s","os":"linux","config":{%s},"rootfs":{"type":"layers","diff_ids":["%s"]}}' \
    "$arch" "$config_body" "$diff_id" >"$work/config.json"
  local config config_digest config_size
  config=$(add_blob "$layout" "$work/config.json")
  config_digest=${config% *} config_size=${config#* }

  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"%s","size":%s}]}' \
    "$config_digest" "$config_size" "$layer_digest" "$layer_size" >"$work/manifest.json"
  local manifest manifest_digest manifest_size
  manifest=$(add_blob "$layout" "$work/manifest.json")
  manifest_digest=${manifest% *} manifest_size=${manifest#* }

  # One index entry per reference. containerd takes io.containerd.image.name
  # as the full name; org.opencontainers.image.ref.name carries the tag, as
  # the OCI image layout spec asks.
  local ref entries_json=""
  for ref in "$@"; do
    entries_json+="${entries_json:+,}$(printf '{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"%s","size":%s,"platform":{"architecture":"%s","os":"linux"},"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}' \
      "$manifest_digest" "$manifest_size" "$arch" "$ref" "${ref##*:}")"
  done
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[%s]}' \
    "$entries_json" >"$layout/index.json"
  printf '{"imageLayoutVersion":"1.0.0"}' >"$layout/oci-layout"

  (cd "$layout" && dtar -cf "$out.tmp" oci-layout index.json blobs)
  mv "$out.tmp" "$out"
}

# Common skeleton: the directories a container runtime mounts over, and the
# users a test may name.
make_skeleton() {
  local root=$1
  mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,etc,tmp,proc,sys,dev,root,var}
  cat >"$root/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
user:x:1000:1000:user:/tmp:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
EOF
  cat >"$root/etc/group" <<'EOF'
root:x:0:
user:x:1000:
nogroup:x:65534:
EOF
}

# Permissions in the layer must not depend on the caller's umask.
fix_modes() {
  local root=$1
  find "$root" -type d -exec chmod 0755 {} +
  find "$root" -type f -exec chmod 0644 {} +
  chmod 1777 "$root/tmp"
  chmod 0700 "$root/root"
}

add_busybox() {
  local root=$1 bin=$2 applet
  cp "$bin" "$root/bin/busybox"
  while read -r applet; do
    [[ $applet == bin/busybox ]] && continue
    mkdir -p "$root/$(dirname "$applet")"
    ln -sfn /bin/busybox "$root/$applet"
  done < <("$bin" --list-full)
}
