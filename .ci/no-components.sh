#!/usr/bin/env bash
# Runs `npm test` as on a fresh machine that has none of the real components the suite can use, and
# checks that it passes with one skip line per missing component. The components are hidden, not
# removed: inside a private mount namespace (nothing changes for the host or other processes) each of
# their commands is covered by /dev/null (not executable, so lookups fail), and the CNI plugin
# directory and containerd's socket directory by empty tmpfs mounts. CI is unset for this run:
# under CI=true a missing component fails by design.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ ${NODELET_NO_COMPONENTS_INNER:-} != 1 ]]; then
  [[ $(id -u) == 0 ]] || { echo "no-components: needs root (a mount namespace)" >&2; exit 1; }
  log=$(mktemp)
  trap 'rm -f "$log"' EXIT
  # Test namespaces that exist before the run (another job's on this machine) are not the run's leftovers.
  before=$(ip netns list 2>/dev/null | awk '/^nlp-/ {print $1}' | sort || true)
  NODELET_NO_COMPONENTS_INNER=1 unshare --mount --propagation private bash "$0" 2>&1 | tee "$log"
  status=${PIPESTATUS[0]}
  ((status == 0)) || { echo "no-components: npm test failed (exit $status)" >&2; exit "$status"; }
  # One skip line per missing component, each naming what installs it.
  for expected in \
    'containerd not available at' \
    'iptables-legacy-restore is not installed (apt-get install iptables)' \
    'nft is not installed (apt-get install nftables)' \
    'kubectl not found at' \
    'apt-get install containernetworking-plugins'; do
    grep -qF -- "$expected" "$log" || { echo "no-components: no skip line saying '$expected'" >&2; exit 1; }
  done
  if grep -qE '^\s*✘' "$log"; then echo "no-components: a test failed" >&2; exit 1; fi
  after=$(ip netns list 2>/dev/null | awk '/^nlp-/ {print $1}' | sort || true)
  left=$(comm -13 <(echo "$before") <(echo "$after") | grep . || true)
  [[ -z $left ]] || { echo "no-components: namespaces left behind: $left" >&2; exit 1; }
  echo "no-components: npm test passed with every real component hidden"
  exit 0
fi

# Inside the mount namespace.
hide=(containerd ctr runc crictl iptables iptables-save iptables-restore iptables-legacy iptables-legacy-save
  iptables-legacy-restore iptables-nft iptables-nft-save iptables-nft-restore nft iperf3 kubectl skopeo
  docker-registry)
for dir in /usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin; do
  for cmd in "${hide[@]}"; do
    if [[ -e $dir/$cmd && ! -L $dir ]]; then mount --bind /dev/null "$dir/$cmd"; fi
  done
done
for dir in /usr/lib/cni /opt/cni/bin /run/containerd; do
  if [[ -d $dir ]]; then mount -t tmpfs none "$dir"; fi
done
unset CI
# The fuzz tests need no component: here they run a tenth of their cases, the other pass of .ci/run runs
# them whole (CI's time goes to what this pass is for: every component-dependent test skipping cleanly).
export NODELET_FUZZ_SCALE="${NODELET_FUZZ_SCALE:-0.1}"
npm test
