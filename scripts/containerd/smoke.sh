#!/usr/bin/env bash
# Check that the containerd from setup.sh really runs containers:
#
#   1. containerd answers and the CRI plugin is loaded ("ok" in `ctr plugins ls`);
#   2. the three images are in k8s.io, complete and unpacked;
#   3. `ctr run --rm` of busybox prints what it should;
#   4. the pause image, run as PID 1, exits 0 promptly on SIGTERM;
#   5. the CRI path (cri.mjs smoke): RunPodSandbox with a CNI IP, an httpd
#      container reachable from the host at the pod IP, a one-shot container's
#      exit code and CRI log, ExecSync, a hostPort (portmap plugin) reached via
#      127.0.0.1 and the host's addresses, stop/remove -- plus, while the pod is
#      up, a host-netns iptables DNAT (kube-proxy style) from a virtual IP to the pod.
#
# Env: NODELET_SMOKE_VIP (default 10.255.254.1), NODELET_SMOKE_HOST_PORT (31880).
#
# Leaves nothing behind. Exits non-zero on the first failure.
set -euo pipefail
LOG_TAG=containerd-smoke
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SMOKE_VIP="${NODELET_SMOKE_VIP:-10.255.254.1}"
SMOKE_HOST_PORT="${NODELET_SMOKE_HOST_PORT:-31880}"

# Hook mode: called by cri.mjs while the smoke pod runs (POD_IP, POD_PORT set).
if [[ ${1:-} == --dnat-hook ]]; then
  LOG_TAG=containerd-smoke-dnat
  [[ -n ${POD_IP:-} && -n ${POD_PORT:-} ]] || die "--dnat-hook needs POD_IP and POD_PORT"
  if ! ip route get "$SMOKE_VIP" >/dev/null 2>&1; then
    log "skipping DNAT check: no route to $SMOKE_VIP (no default route?)"
    exit 0
  fi
  rule=(OUTPUT -d "$SMOKE_VIP/32" -p tcp --dport 80 -m comment --comment "nodelet-smoke-$$"
    -j DNAT --to-destination "$POD_IP:$POD_PORT")
  iptables -w 5 -t nat -A "${rule[@]}" || die "iptables DNAT rule failed"
  trap 'iptables -w 5 -t nat -D "${rule[@]}" || log "WARNING: could not delete the DNAT rule"' EXIT
  # Plain bash /dev/tcp, no client needed. (Not `busybox wget -T`: Debian 12's
  # busybox-static 1.35 wget segfaults whenever -T is given.)
  # shellcheck disable=SC2016
  resp="$(timeout 10 bash -c 'exec 3<>"/dev/tcp/$1/80" && printf "GET / HTTP/1.0\r\nHost: %s\r\n\r\n" "$1" >&3 && cat <&3' _ "$SMOKE_VIP" 2>&1)" ||
    die "GET http://$SMOKE_VIP/ via DNAT failed: $resp"
  body="${resp##*$'\r\n\r\n'}"
  [[ $resp == "HTTP/1."?" 200"* && $body == "hello from nodelet"* ]] || die "GET http://$SMOKE_VIP/ via DNAT returned: $resp"
  body="${body%$'\n'}"
  log "GET http://$SMOKE_VIP/ (iptables DNAT -> $POD_IP:$POD_PORT) -> $body"
  exit 0
fi

require_root
containerd_answers || die "containerd does not answer on $NODELET_CONTAINERD_SOCK; run scripts/containerd/setup.sh"
BUSYBOX_IMAGE=docker.io/library/busybox:latest

# --- 1. daemon and CRI plugin -------------------------------------------------
log "$(ctr_ version | awk '/Server:/ { s = 1 } s && /Version:/ { print "containerd server " $2; exit }')"
plugins="$(ctr_ plugins ls)"
cri="$(awk '$1 == "io.containerd.grpc.v1" && $2 == "cri" { print $NF }' <<<"$plugins")"
[[ $cri == ok ]] || die "CRI plugin status '${cri:-missing}' (want ok)"
log "CRI plugin: ok"
s="$(awk '$1 == "io.containerd.snapshotter.v1" && $2 == "overlayfs" { print $NF }' <<<"$plugins")"
[[ $s == ok ]] || die "overlayfs snapshotter status '${s:-missing}' (want ok)"

# --- 2. images ----------------------------------------------------------------
for ref in "$NODELET_SANDBOX_IMAGE" "$BUSYBOX_IMAGE" nodelet.test/busybox:1; do
  line="$(ctr_k8s images check "name==$ref" | awk -v r="$ref" '$1 == r')"
  [[ -n $line ]] || die "image $ref not in namespace k8s.io (run scripts/images/import.sh)"
  awk '$4 == "complete" && $NF == "true" { ok = 1 } END { exit !ok }' <<<"$line" ||
    die "image $ref is not complete and unpacked: $line"
done
log "images present and unpacked: $NODELET_SANDBOX_IMAGE, $BUSYBOX_IMAGE, nodelet.test/busybox:1"

# --- 3. ctr run ---------------------------------------------------------------
id="nodelet-smoke-$$"
cleanup_ctr() {
  ctr_k8s tasks kill --signal SIGKILL "$1" >/dev/null 2>&1 || true
  ctr_k8s tasks delete --force "$1" >/dev/null 2>&1 || true
  ctr_k8s containers delete "$1" >/dev/null 2>&1 || true
}
trap 'cleanup_ctr "$id"; cleanup_ctr "$id-pause"' EXIT
# shellcheck disable=SC2016 # $(id -u) is for the container's shell
got="$(timeout 60 ctr --address "$NODELET_CONTAINERD_SOCK" -n k8s.io run --rm "$BUSYBOX_IMAGE" "$id" \
  sh -c 'echo "hello-from-ctr uid=$(id -u)"; cat /var/www/index.html' 2>&1)" ||
  die "ctr run failed: $got"
[[ $got == $'hello-from-ctr uid=0\nhello from nodelet' ]] || die "ctr run printed: $got"
log "ctr run --rm busybox: ok (${got//$'\n'/ | })"

# --- 4. pause image exits promptly on SIGTERM ---------------------------------
pid_ctr=""
timeout 60 ctr --address "$NODELET_CONTAINERD_SOCK" -n k8s.io run --rm "$NODELET_SANDBOX_IMAGE" "$id-pause" \
  >/dev/null 2>&1 &
pid_ctr=$!
deadline=$((SECONDS + 15))
until ctr_k8s tasks ls 2>/dev/null | awk -v id="$id-pause" '$1 == id && $3 == "RUNNING" { f = 1 } END { exit !f }'; do
  ((SECONDS < deadline)) || die "pause container did not reach RUNNING"
  kill -0 "$pid_ctr" 2>/dev/null || die "ctr run of the pause image exited early"
  sleep 0.1
done
sleep 0.3 # let the shell install its trap
t0=$(date +%s%N)
ctr_k8s tasks kill --signal SIGTERM "$id-pause"
rc=0
wait "$pid_ctr" || rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
((rc == 0)) || die "pause container exited with $rc after SIGTERM (want 0)"
((ms < 3000)) || die "pause container took ${ms}ms to exit on SIGTERM"
log "pause image: SIGTERM -> exit 0 in ${ms}ms"

# --- 5. CRI -------------------------------------------------------------------
command -v node >/dev/null || die "node not found; the CRI check needs it"
node "$SCRIPTS_DIR/containerd/cri.mjs" smoke --image "$BUSYBOX_IMAGE" --host-port "$SMOKE_HOST_PORT" \
  --hook "$(printf '%q --dnat-hook' "$SCRIPTS_DIR/containerd/smoke.sh")" ||
  die "CRI smoke failed"
log "all checks passed"
