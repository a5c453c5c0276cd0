#!/usr/bin/env bash
# Print a containerd config.toml for nodelet on this machine: `containerd config
# default` with the settings this machine needs, for the directories and socket
# that lib.sh's settings name (root $NODELET_CONTAINERD_DIR/root, state and
# socket from $NODELET_CONTAINERD_SOCK, sandbox image, CNI dirs, the registry
# hosts directory $NODELET_CONTAINERD_DIR/certs.d).
#
#   config.sh > config.toml
#
# setup.sh writes it for the shared containerd. A test that needs a containerd
# of its own (to stop and restart it) runs this with its own
# NODELET_CONTAINERD_DIR and NODELET_CONTAINERD_SOCK: everything that containerd
# keeps (content, snapshots, metadata, task state, the socket, the ttrpc socket
# next to it) then lives under those two directories. The CRI streaming server
# listens on 127.0.0.1 port 0 (a free port per instance), so two instances do
# not collide. CNI is shared: same conflist, bridge and host-local store (which
# host-local locks while it allocates).
#
# Checks with `containerd config dump` that containerd parses the result and
# that the values took effect; exits non-zero with a message otherwise.
set -euo pipefail
LOG_TAG=containerd-config
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

case "${1:-}" in
  '') ;;
  -h | --help)
    sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0" >&2
    exit 0
    ;;
  *) die "unknown argument: $1 (see --help)" ;;
esac
command -v containerd >/dev/null || die "'containerd' not found (apt-get install containerd, or run setup.sh)"

config="$(mktemp "${TMPDIR:-/tmp}/nodelet-containerd-config.XXXXXX")"
trap 'rm -f "$config"' EXIT

# Edit one `key = value` line of the generated TOML. The match is anchored to
# the key at the start of a line (after indentation) so that e.g. `bin_dir`
# does not also hit `cni_bin_dir`. Fails if the key is absent, so a future
# containerd whose defaults moved is caught here rather than silently ignored.
set_key() { # file key value(TOML literal)
  local file="$1" key="$2" value="$3"
  grep -Eq "^[[:space:]]*$key = " "$file" || die "generated containerd config has no '$key' key"
  sed -Ei "s|^([[:space:]]*)$key = .*$|\1$key = $value|" "$file"
}

containerd config default >"$config" || die "'containerd config default' failed"

# containerd's persistent data lives under our directory; the state dir is the
# socket's directory (for the shared instance: where every client looks for it
# by default).
set_key "$config" root "\"$CD_ROOT\""
set_key "$config" state "\"$CD_STATE\""
sed -Ei "/^\[grpc\]/,/^\[/ s|^([[:space:]]*)address = .*$|\1address = \"$NODELET_CONTAINERD_SOCK\"|" "$config"
# This VM refuses to lower oom_score_adj; without this every sandbox fails
# with "can't get final child's PID from pipe".
set_key "$config" restrict_oom_score_adj true
set_key "$config" sandbox_image "\"$NODELET_SANDBOX_IMAGE\""
# Debian installs the CNI plugins in /usr/lib/cni, not /opt/cni/bin.
set_key "$config" bin_dir "\"$NODELET_CNI_BIN_DIR\""
set_key "$config" conf_dir "\"$(dirname "$NODELET_CNI_CONF")\""
# cgroupfs driver: there is no systemd here and cgroups are hybrid (v1).
set_key "$config" SystemdCgroup false
# Registry hosts from hosts.toml files (the registry tests add one for their registry on 127.0.0.1).
registry_section='^[[:space:]]*\[plugins\."io\.containerd\.grpc\.v1\.cri"\.registry\]'
grep -Eq "$registry_section" "$config" || die "generated containerd config has no CRI registry section"
sed -Ei "/$registry_section/,/^[[:space:]]*\[/ s|^([[:space:]]*)config_path = .*$|\1config_path = \"$CD_CERTS_D\"|" "$config"

# Check that containerd parses the file and that the values took effect.
dump="$(containerd --config "$config" config dump 2>&1)" || die "containerd rejects the generated config: $dump"
for expect in \
  "restrict_oom_score_adj = true" \
  "sandbox_image = \"$NODELET_SANDBOX_IMAGE\"" \
  "bin_dir = \"$NODELET_CNI_BIN_DIR\"" \
  "SystemdCgroup = false" \
  "root = \"$CD_ROOT\"" \
  "state = \"$CD_STATE\"" \
  "address = \"$NODELET_CONTAINERD_SOCK\"" \
  "stream_server_port = \"0\"" \
  "config_path = \"$CD_CERTS_D\""; do
  grep -qF "$expect" <<<"$dump" || die "generated config does not contain '$expect' after parsing"
done

cat "$config"
