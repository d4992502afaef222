#!/usr/bin/env bash
# An emulated cluster on this machine: N "hosts" as Linux network namespaces, joined by veth
# pairs through a bridge, each host's link limited with tc (tbf) in both directions. Needs root.
# Traffic stays on this machine: the hosts get 10.77.0.1 .. 10.77.0.N, the bridge (the root
# namespace, where the launcher and the coordinator run) 10.77.0.254.
#
#   scripts/emulated_cluster.sh up N RATE     # e.g. up 3 100mbit   (RATE as tc spells it)
#   scripts/emulated_cluster.sh hostfile      # the hostfile for tessera run
#   scripts/emulated_cluster.sh down          # removes every namespace, veth and the bridge
#
# Run a job on it (scripts/netns_ssh is the --ssh that enters a host's namespace):
#   tessera run -w 2 -s 2 --hostfile <(scripts/emulated_cluster.sh hostfile) \
#     --ssh scripts/netns_ssh --bind 10.77.0.254 -- build/bin/ps_demo
set -euo pipefail

PREFIX=tessera-h
BRIDGE=tessera-br0
SUBNET=10.77.0

up() {
  local n=$1 rate=$2
  [[ $n =~ ^[0-9]+$ && $n -ge 1 && $n -le 16 ]] || { echo "up: N must be 1..16" >&2; exit 2; }
  down 2>/dev/null || true
  ip link add "$BRIDGE" type bridge
  ip addr add "$SUBNET.254/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  for ((i = 0; i < n; i++)); do
    local ns="$PREFIX$i" host="veth-th$i" peer="veth-tb$i"
    ip netns add "$ns"
    ip link add "$host" type veth peer name "$peer"
    ip link set "$host" netns "$ns"
    ip link set "$peer" master "$BRIDGE" up
    ip -n "$ns" addr add "$SUBNET.$((i + 1))/24" dev "$host"
    ip -n "$ns" link set "$host" up
    ip -n "$ns" link set lo up
    # Egress of the host, and egress of the bridge port towards it (the host's ingress).
    ip netns exec "$ns" tc qdisc add dev "$host" root tbf rate "$rate" burst 64kb latency 50ms
    tc qdisc add dev "$peer" root tbf rate "$rate" burst 64kb latency 50ms
  done
  echo "emulated cluster: $n hosts ($SUBNET.1-$n) at $rate each, bridge $SUBNET.254"
}

down() {
  for ns in $(ip netns list | awk '{print $1}' | grep "^$PREFIX" || true); do ip netns del "$ns"; done
  ip link show "$BRIDGE" >/dev/null 2>&1 && ip link del "$BRIDGE"
  return 0
}

hostfile() {
  for ns in $(ip netns list | awk '{print $1}' | grep "^$PREFIX" | sort -V); do
    echo "$SUBNET.$((${ns#$PREFIX} + 1)) slots=1"
  done
}

case "${1:-}" in
  up) shift; up "$@" ;;
  down) down ;;
  hostfile) hostfile ;;
  *) sed -n '2,16p' "$0" >&2; exit 2 ;;
esac
