#!/usr/bin/env bash
# Stop the containerd that setup.sh started (and only that one: the PID in its
# pidfile, checked to be containerd running our config). Idempotent.
#
#   teardown.sh [--keep-pods] [--purge]
#
# By default it first removes all CRI pod sandboxes through the CRI API
# (StopPodSandbox + RemovePodSandbox, so CNI releases IPs, veths and iptables
# rules), then any container left in the k8s.io namespace that CRI does not
# know (e.g. from `ctr run`). Then SIGTERM, a bounded wait, SIGKILL if needed.
#
#   --keep-pods  leave pods and containers alone (their shims keep running and a
#                restarted containerd picks them up again; setup.sh uses this
#                to apply a changed config)
#   --purge      also delete containerd's data ($NODELET_CONTAINERD_DIR: config,
#                content, snapshots, built images), the CNI conflist, the bridge
#                and the host-local IPAM state of the nodelet network
set -euo pipefail
LOG_TAG=containerd-teardown
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

keep_pods=false purge=false
for arg in "$@"; do
  case "$arg" in
    --keep-pods) keep_pods=true ;;
    --purge) purge=true ;;
    -h | --help)
      sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0" >&2
      exit 0
      ;;
    *) die "unknown argument: $arg (see --help)" ;;
  esac
done
$keep_pods && $purge && die "--keep-pods and --purge contradict each other"
require_root

# Alive and not a zombie (containerd is re-parented to PID 1 once setup.sh exits).
alive() {
  local state
  state="$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)" || return 1
  [[ -n $state && $state != Z ]]
}

remove_leftovers() {
  if command -v node >/dev/null; then
    node "$SCRIPTS_DIR/containerd/cri.mjs" rm-pods ||
      log "WARNING: some pod sandboxes could not be removed through CRI (see above)"
  else
    log "WARNING: node not found; cannot remove pods through CRI, falling back to ctr only"
  fi
  # Whatever is still in k8s.io was not removable through CRI or never was a CRI
  # object. Deleting it with ctr skips CNI teardown, so say so.
  local ids id
  ids="$(ctr_k8s containers ls -q 2>/dev/null || true)"
  for id in $ids; do
    log "removing leftover container $id with ctr (no CNI teardown for it)"
    if ctr_k8s tasks ls -q 2>/dev/null | grep -qx "$id"; then
      ctr_k8s tasks kill --signal SIGKILL "$id" >/dev/null 2>&1 || true
      local deadline=$((SECONDS + 10))
      until ! ctr_k8s tasks ls 2>/dev/null | awk -v id="$id" '$1 == id && $3 != "STOPPED" { f = 1 } END { exit !f }'; do
        ((SECONDS < deadline)) || break
        sleep 0.2
      done
      ctr_k8s tasks delete --force "$id" >/dev/null 2>&1 || log "WARNING: could not delete task $id"
    fi
    ctr_k8s containers delete "$id" >/dev/null 2>&1 || log "WARNING: could not delete container $id"
  done
}

if pid="$(our_containerd_pid)"; then
  if ! $keep_pods; then
    if containerd_answers; then
      remove_leftovers
    else
      log "WARNING: containerd (pid $pid) does not answer; cannot remove pods"
    fi
  fi

  log "stopping containerd pid $pid (SIGTERM, up to ${NODELET_CONTAINERD_STOP_TIMEOUT}s)"
  kill -TERM "$pid" 2>/dev/null || true
  deadline=$((SECONDS + NODELET_CONTAINERD_STOP_TIMEOUT))
  while alive "$pid" && ((SECONDS < deadline)); do sleep 0.2; done
  if alive "$pid"; then
    log "containerd pid $pid ignored SIGTERM for ${NODELET_CONTAINERD_STOP_TIMEOUT}s; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    deadline=$((SECONDS + 10))
    while alive "$pid" && ((SECONDS < deadline)); do sleep 0.2; done
    alive "$pid" && die "containerd pid $pid survived SIGKILL"
  fi
  rm -f "$CD_PIDFILE"
  log "containerd stopped"
else
  if [[ -e $CD_PIDFILE ]]; then
    log "pidfile $CD_PIDFILE is stale (no containerd of ours with that PID); removing it"
    rm -f "$CD_PIDFILE"
  else
    log "no containerd started by setup.sh is running"
  fi
  if containerd_answers; then
    log "note: a containerd NOT started by setup.sh serves $NODELET_CONTAINERD_SOCK; leaving it alone"
  fi
fi

if $purge; then
  if containerd_answers; then
    die "--purge: something still serves $NODELET_CONTAINERD_SOCK; not deleting data under it"
  fi
  # Unmount anything left below containerd's root/state (deepest first), then delete.
  for dir in "$CD_ROOT" "$CD_STATE"; do
    awk -v d="$dir/" 'index($5 "/", d) == 1 { print $5 }' /proc/self/mountinfo | sort -r |
      while IFS= read -r m; do umount -l "$m" 2>/dev/null || log "WARNING: could not unmount $m"; done
  done
  rm -rf "$NODELET_CONTAINERD_DIR" "$CD_STATE"
  rm -f "$NODELET_CNI_CONF"
  rm -rf "/var/lib/cni/networks/$CNI_NETWORK_NAME"
  if ip link show "$NODELET_CNI_BRIDGE" >/dev/null 2>&1; then
    ip link delete "$NODELET_CNI_BRIDGE" || log "WARNING: could not delete bridge $NODELET_CNI_BRIDGE"
  fi
  log "purged $NODELET_CONTAINERD_DIR, $CD_STATE, $NODELET_CNI_CONF, bridge $NODELET_CNI_BRIDGE"
fi
