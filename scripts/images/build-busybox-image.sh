#!/usr/bin/env bash
# Build a single-layer OCI image from the busybox-static binary, without any
# registry or image builder, and write it as an OCI image-layout tar that
# `ctr images import` understands.
#
#   build-busybox-image.sh NAME[:TAG] OUTPUT.tar [--pause] [--openssl]
#
# NAME is normalised the way containerd's CRI plugin looks images up:
# `busybox` -> `docker.io/library/busybox:latest`.
#
# Default image: Cmd ["sh"], PATH set, a rootfs with /bin/busybox plus one
# symlink per applet, /etc/passwd and /etc/group (root, nobody), /tmp, /root,
# and /var/www/index.html ("hello from nodelet") for `httpd -h /var/www` tests.
#
# --pause: the pod sandbox ("pause") image. Same rootfs, but the entrypoint is
# a PID 1 that traps SIGTERM/SIGINT and exits 0. PID 1 gets no default signal
# dispositions from the kernel, so a plain `sleep` would ignore SIGTERM and
# every stop would wait out its full grace period.
#
# The output is reproducible: fixed mtimes/owners, sorted entries, `gzip -n`,
# so rebuilding with the same busybox binary yields the same digests.
#
# Env: NODELET_BUSYBOX (default /bin/busybox, must be statically linked),
#      SOURCE_DATE_EPOCH (default: mtime of the busybox binary).
set -euo pipefail

LOG_TAG=build-busybox-image
log() { printf '[%s] %s\n' "$LOG_TAG" "$*" >&2; }
die() {
  printf '[%s] ERROR: %s\n' "$LOG_TAG" "$*" >&2
  exit 1
}
usage() {
  sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0" >&2
  exit 2
}

name="" output="" pause=false openssl=false
for arg in "$@"; do
  case "$arg" in
    --pause) pause=true ;;
    --openssl) openssl=true ;;
    -h | --help) usage ;;
    -*) die "unknown option: $arg" ;;
    *)
      if [[ -z $name ]]; then
        name="$arg"
      elif [[ -z $output ]]; then
        output="$arg"
      else
        die "too many arguments: $arg"
      fi
      ;;
  esac
done
[[ -n $name && -n $output ]] || usage

# --- name normalisation (docker.io/library default, :latest default) --------
[[ $name =~ ^[a-z0-9]([a-z0-9._/:-]*[a-zA-Z0-9_])?$ && $name != *//* ]] ||
  die "invalid image name: $name (lowercase repository, optional :tag; digests not supported)"
normalize_ref() {
  local ref="$1" first rest
  if [[ $ref == */* ]]; then
    first="${ref%%/*}"
    rest="${ref#*/}"
    # The first component is a registry host only if it looks like one.
    if [[ $first != *.* && $first != *:* && $first != localhost ]]; then
      first=docker.io
      rest="$ref"
    fi
  else
    first=docker.io
    rest="library/$ref"
  fi
  # Tag: a ':' after the last '/'.
  local last="${rest##*/}"
  [[ $last == *:* ]] || rest="$rest:latest"
  printf '%s/%s\n' "$first" "$rest"
}
ref="$(normalize_ref "$name")"

# --- inputs -------------------------------------------------------------------
BUSYBOX="${NODELET_BUSYBOX:-/bin/busybox}"
[[ -x $BUSYBOX ]] || die "$BUSYBOX not found; install the busybox-static package (apt-get install -y busybox-static)"
if command -v ldd >/dev/null && ldd "$BUSYBOX" >/dev/null 2>&1; then
  # ldd succeeds only for dynamically linked binaries.
  die "$BUSYBOX is dynamically linked; the image has no libc, use the busybox-static package"
fi
for tool in tar gzip sha256sum stat perl; do
  command -v "$tool" >/dev/null || die "missing required tool: $tool"
done
epoch="${SOURCE_DATE_EPOCH:-$(stat -c %Y "$BUSYBOX")}"
[[ $epoch =~ ^[0-9]+$ ]] || die "SOURCE_DATE_EPOCH must be an integer"
created="$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)"
busybox_version="$({ "$BUSYBOX" --help 2>&1 || true; } | sed -n '1s/^BusyBox \(v[^ ]*\).*/\1/p')"

case "$(uname -m)" in
  x86_64) arch=amd64 ;;
  aarch64) arch=arm64 ;;
  armv7l) arch=arm ;;
  ppc64le) arch=ppc64le ;;
  s390x) arch=s390x ;;
  riscv64) arch=riscv64 ;;
  *) die "unsupported machine architecture: $(uname -m)" ;;
esac

work="$(mktemp -d "${TMPDIR:-/tmp}/nodelet-image.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# --- rootfs -------------------------------------------------------------------
rootfs="$work/rootfs"
mkdir -p "$rootfs"/{bin,sbin,usr/bin,usr/sbin,etc,root,tmp,var/www,proc,sys,dev,home}
install -m 0755 "$BUSYBOX" "$rootfs/bin/busybox"
# One symlink per applet at the path busybox itself would install it to
# (bin/sh, usr/sbin/httpd, ...). perl (Essential on Debian) does it in one
# process; a fork per applet costs seconds on small VMs.
applets="$("$BUSYBOX" --list-full | perl -e '
  my $root = shift; my $n = 0;
  while (my $p = <STDIN>) {
    chomp $p;
    next if $p eq "" || $p eq "bin/busybox" || -e "$root/$p" || -l "$root/$p";
    (my $dir = "$root/$p") =~ s{/[^/]*$}{};
    system("mkdir", "-p", $dir) == 0 or die "mkdir $dir\n" unless -d $dir;
    symlink("/bin/busybox", "$root/$p") or die "symlink $p: $!\n";
    $n++;
  }
  print "$n\n";' "$rootfs")" || die "creating applet symlinks failed"
((applets > 0)) || die "'$BUSYBOX --list-full' listed no applets"
[[ -L $rootfs/bin/sh ]] || die "busybox has no 'sh' applet"
# --openssl: the host's openssl and the libraries it links, at their host paths. busybox wget runs
# `openssl s_client` for https when it finds one: its own TLS offers only SHA-1 signatures, which a
# server with today's OpenSSL defaults (the API server's) refuses.
if $openssl; then
  bin="$(command -v openssl)" || die "--openssl: openssl is not installed (apt-get install openssl)"
  for file in "$bin" $(ldd "$bin" | grep -o '/[^ ]*'); do
    mkdir -p "$rootfs$(dirname "$file")"
    cp -L "$file" "$rootfs$file"
  done
fi

cat >"$rootfs/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
PASSWD
cat >"$rootfs/etc/group" <<'GROUP'
root:x:0:
nobody:x:65534:
GROUP
printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' >"$rootfs/etc/hosts"
printf 'hello from nodelet\n' >"$rootfs/var/www/index.html"
chmod 0644 "$rootfs/etc/passwd" "$rootfs/etc/group" "$rootfs/etc/hosts" "$rootfs/var/www/index.html"
chmod 0755 "$rootfs" "$rootfs"/{bin,sbin,usr,usr/bin,usr/sbin,etc,var,var/www,proc,sys,dev,home}
chmod 0700 "$rootfs/root"
chmod 1777 "$rootfs/tmp"

# --- layer --------------------------------------------------------------------
layout="$work/layout"
blobs="$layout/blobs/sha256"
mkdir -p "$blobs"

# Entries without a leading "./", sorted, fixed owner and mtime.
mapfile -t top < <(cd "$rootfs" && find . -mindepth 1 -maxdepth 1 -printf '%P\n' | LC_ALL=C sort)
tar --create --file "$work/layer.tar" --directory "$rootfs" --format=gnu \
  --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" "${top[@]}"
gzip -9 -n -c "$work/layer.tar" >"$work/layer.tar.gz"

sha() { sha256sum "$1" | cut -d' ' -f1; }
size() { stat -c %s "$1"; }
add_blob() { # file -> prints hex digest, moves the file into blobs/
  local d
  d="$(sha "$1")"
  mv "$1" "$blobs/$d"
  printf '%s\n' "$d"
}

diff_id="$(sha "$work/layer.tar")"
layer_size="$(size "$work/layer.tar.gz")"
layer_digest="$(add_blob "$work/layer.tar.gz")"

# --- image config -------------------------------------------------------------
path_env='PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
if $pause; then
  # `sleep & wait` keeps the shell interruptible: a trapped signal ends `wait`
  # at once, whereas a foreground `sleep` would delay the trap until it ended.
  # The script text below must not contain double quotes or backslashes (it is
  # embedded into JSON verbatim).
  pause_script="trap 'exit 0' TERM INT; while :; do sleep 3600 & wait \$!; done"
  process_json="\"Entrypoint\":[\"/bin/sh\",\"-c\",\"$pause_script\"]"
  kind="pause (sandbox) image"
else
  process_json='"Cmd":["sh"]'
  kind="busybox image"
fi
history_by="nodelet scripts/images/build-busybox-image.sh: busybox ${busybox_version:-unknown}"
$pause && history_by+=" (pause entrypoint)"

printf '%s' \
  "{\"created\":\"$created\",\"architecture\":\"$arch\",\"os\":\"linux\"," \
  "\"config\":{\"Env\":[\"$path_env\"],$process_json,\"WorkingDir\":\"/\"}," \
  "\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"sha256:$diff_id\"]}," \
  "\"history\":[{\"created\":\"$created\",\"created_by\":\"$history_by\"}]}" >"$work/config.json"
config_size="$(size "$work/config.json")"
config_digest="$(add_blob "$work/config.json")"

# --- manifest, index, layout --------------------------------------------------
printf '%s' \
  '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",' \
  "\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\",\"digest\":\"sha256:$config_digest\",\"size\":$config_size}," \
  "\"layers\":[{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\",\"digest\":\"sha256:$layer_digest\",\"size\":$layer_size}]}" \
  >"$work/manifest.json"
manifest_size="$(size "$work/manifest.json")"
manifest_digest="$(add_blob "$work/manifest.json")"

# io.containerd.image.name is what `ctr images import` names the image by;
# org.opencontainers.image.ref.name is the standard OCI annotation (ctr falls
# back to it, and uses a full reference there verbatim).
printf '%s' \
  '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[' \
  "{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"sha256:$manifest_digest\",\"size\":$manifest_size," \
  "\"platform\":{\"architecture\":\"$arch\",\"os\":\"linux\"}," \
  "\"annotations\":{\"io.containerd.image.name\":\"$ref\",\"org.opencontainers.image.ref.name\":\"$ref\"}}]}" \
  >"$layout/index.json"
printf '{"imageLayoutVersion":"1.0.0"}' >"$layout/oci-layout"

mkdir -p "$(dirname "$output")"
tmp_out="$output.tmp.$$"
tar --create --file "$tmp_out" --directory "$layout" --format=gnu \
  --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" oci-layout index.json blobs
mv -f "$tmp_out" "$output"

log "built $kind $ref ($arch, $applets applets) -> $output"
log "  manifest sha256:$manifest_digest  config sha256:$config_digest  layer sha256:$layer_digest"
printf '%s sha256:%s\n' "$ref" "$manifest_digest"
