#!/usr/bin/env bash
# Shared settings and helpers for the containerd scripts. Sourced, never run.
# Every setting can be overridden from the environment; see scripts/README.md.
# shellcheck disable=SC2034 # the variables are used by the scripts sourcing this

NODELET_CONTAINERD_DIR="${NODELET_CONTAINERD_DIR:-/var/lib/nodelet-ci/containerd}"
NODELET_CONTAINERD_SOCK="${NODELET_CONTAINERD_SOCK:-/run/containerd/containerd.sock}"
NODELET_SANDBOX_IMAGE="${NODELET_SANDBOX_IMAGE:-registry.k8s.io/pause:3.9}"
NODELET_CNI_SUBNET="${NODELET_CNI_SUBNET:-10.88.0.0/16}"
NODELET_CNI_BRIDGE="${NODELET_CNI_BRIDGE:-nodelet0}"
NODELET_CNI_CONF="${NODELET_CNI_CONF:-/etc/cni/net.d/10-nodelet.conflist}"
NODELET_CNI_BIN_DIR="${NODELET_CNI_BIN_DIR:-/usr/lib/cni}"
NODELET_CONTAINERD_START_TIMEOUT="${NODELET_CONTAINERD_START_TIMEOUT:-30}"
NODELET_CONTAINERD_STOP_TIMEOUT="${NODELET_CONTAINERD_STOP_TIMEOUT:-20}"

# Derived paths (not meant to be overridden one by one).
CD_CONFIG="$NODELET_CONTAINERD_DIR/config.toml"
CD_PIDFILE="$NODELET_CONTAINERD_DIR/containerd.pid"
CD_LOG="$NODELET_CONTAINERD_DIR/containerd.log"
CD_ROOT="$NODELET_CONTAINERD_DIR/root"
CD_STATE="$(dirname "$NODELET_CONTAINERD_SOCK")"
CD_IMAGES_DIR="$NODELET_CONTAINERD_DIR/images"
# The CRI registry's config_path: one <host[:port]>/hosts.toml per registry that needs settings (a
# private registry over plain HTTP, a mirror); containerd reads them at each pull, no restart.
CD_CERTS_D="$NODELET_CONTAINERD_DIR/certs.d"
CNI_NETWORK_NAME="nodelet"

SCRIPTS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# Refuse directories that are not clearly ours: containerd's state dir is the
# socket's directory and both it and NODELET_CONTAINERD_DIR may be deleted by
# `teardown.sh --purge`.
check_own_dir() { # dir description
  local d="${1%/}"
  [[ $d == /* && $d != *..* && "$(tr -cd / <<<"$d")" != / ]] ||
    die "$2 '$1' must be an absolute path at least two levels deep (e.g. /run/containerd)"
  case "$d" in
    /usr/* | /etc | /etc/* | /proc/* | /sys/* | /dev/* | /var/lib | /var/run | /run/user*) die "$2 '$1' is a system directory" ;;
  esac
}

log() { printf '[%s] %s\n' "${LOG_TAG:-nodelet}" "$*" >&2; }
die() {
  printf '[%s] ERROR: %s\n' "${LOG_TAG:-nodelet}" "$*" >&2
  exit 1
}

require_root() {
  [[ $EUID -eq 0 ]] || die "must run as root (containerd, runc and CNI need it)"
}

# ctr against our socket; extra args pass through.
ctr_() { ctr --address "$NODELET_CONTAINERD_SOCK" "$@"; }
ctr_k8s() { ctr --address "$NODELET_CONTAINERD_SOCK" --namespace k8s.io "$@"; }

# True if the socket answers a Version call within a few seconds.
containerd_answers() {
  timeout 5 ctr --address "$NODELET_CONTAINERD_SOCK" --timeout 3s version >/dev/null 2>&1
}

# Prints the PID from our pidfile if that process is alive and really is the
# containerd we started (binary containerd, our config file on its command line).
# Guards against PID reuse after a reboot or a crash.
our_containerd_pid() {
  [[ -s $CD_PIDFILE ]] || return 1
  local pid cmdline
  pid="$(<"$CD_PIDFILE")"
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  [[ -r /proc/$pid/cmdline ]] || return 1
  cmdline="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" || return 1
  [[ $cmdline == *containerd* && $cmdline == *"$CD_CONFIG"* ]] || return 1
  [[ "$(readlink "/proc/$pid/exe" 2>/dev/null)" == */containerd* ]] || return 1
  printf '%s\n' "$pid"
}

check_own_dir "$NODELET_CONTAINERD_DIR" NODELET_CONTAINERD_DIR
check_own_dir "$CD_STATE" "containerd state dir (directory of NODELET_CONTAINERD_SOCK)"
