#!/usr/bin/env bash
# Build the local images and import them into containerd's k8s.io namespace
# (the one the CRI plugin serves), unpacked for the default (overlayfs)
# snapshotter, which is what CRI needs to create containers:
#
#   $NODELET_SANDBOX_IMAGE              pause image (sandbox_image in the config)
#   docker.io/library/busybox:latest    what a manifest's `image: busybox` means
#   nodelet.test/busybox:1              a name no registry has, for pull-policy tests
#   nodelet.test/busybox-openssl:1      the same with the host's openssl: https from a pod (wget)
#
# Idempotent: the builds are reproducible, and an image already present with the
# same manifest digest and fully unpacked is not imported again.
# Requires a running containerd (scripts/containerd/setup.sh calls this).
set -euo pipefail
LOG_TAG=images-import
# shellcheck source=SCRIPTDIR/../containerd/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../containerd/lib.sh"

require_root
containerd_answers || die "containerd does not answer on $NODELET_CONTAINERD_SOCK; run scripts/containerd/setup.sh"

BUILD="$SCRIPTS_DIR/images/build-busybox-image.sh"
mkdir -p "$CD_IMAGES_DIR"

# name|build flag
IMAGES=(
  "$NODELET_SANDBOX_IMAGE|--pause"
  "docker.io/library/busybox:latest|"
  "nodelet.test/busybox:1|"
  "nodelet.test/busybox-openssl:1|--openssl"
)

# Prints the manifest/index digest containerd has for REF, or nothing.
current_digest() {
  ctr_k8s images ls "name==$1" 2>/dev/null | awk -v ref="$1" '$1 == ref { print $3 }'
}
# True if REF is complete and unpacked (`ctr images check` columns:
# REF TYPE DIGEST STATUS SIZE UNPACKED, STATUS like "complete (2/2)").
image_ready() {
  ctr_k8s images check "name==$1" 2>/dev/null |
    awk -v ref="$1" '$1 == ref && $4 == "complete" && $NF == "true" { ok = 1 } END { exit !ok }'
}

# What a build depends on: the build script and the busybox binary.
busybox="${NODELET_BUSYBOX:-/bin/busybox}"
build_key="$(sha256sum "$BUILD" | cut -d' ' -f1) $(stat -L -c '%s %Y' "$busybox") $(stat -L -c '%s %Y' "$(command -v openssl)" 2>/dev/null) ${SOURCE_DATE_EPOCH:-}"
build_log="$(mktemp)"
trap 'rm -f "$build_log"' EXIT
for entry in "${IMAGES[@]}"; do
  ref="${entry%%|*}"
  flag="${entry#*|}"
  file="$CD_IMAGES_DIR/$(printf '%s' "$ref" | tr '/:@' '___').tar"
  # Reuse the tar built last time if nothing that goes into it changed.
  key="$ref|$flag|$build_key"
  if [[ -s $file && -s $file.stamp && "$(head -n1 "$file.stamp")" == "$key" ]]; then
    built="$(sed -n 2p "$file.stamp")"
  else
    built="$("$BUILD" "$ref" "$file" ${flag:+"$flag"} 2>"$build_log")" || {
      cat "$build_log" >&2
      die "building $ref failed"
    }
    printf '%s\n%s\n' "$key" "$built" >"$file.stamp"
  fi
  built_ref="${built% *}"
  digest="${built#* }"
  [[ $built_ref == "$ref" ]] || die "image name $ref normalises to $built_ref; use the full name"

  if [[ "$(current_digest "$ref")" == "$digest" ]] && image_ready "$ref"; then
    log "$ref already imported ($digest)"
    continue
  fi
  # No --no-unpack: CRI only uses images unpacked into its snapshotter.
  if ! msg="$(ctr_k8s images import --all-platforms "$file" 2>&1)"; then
    die "ctr images import $file failed: $msg"
  fi
  [[ "$(current_digest "$ref")" == "$digest" ]] ||
    die "after import, $ref has digest '$(current_digest "$ref")', expected $digest (ctr said: $msg)"
  image_ready "$ref" || die "$ref imported but not complete/unpacked: $(ctr_k8s images check "name==$ref" 2>&1)"
  log "imported $ref ($digest)"
done
