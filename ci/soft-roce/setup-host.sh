#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Sets up Soft-RoCE directly on a host whose kernel has rdma_rxe (typical
# container CI hosts), instead of booting a VM. Idempotent: an existing
# RDMA device is reused; otherwise rdma_rxe is loaded, a veth pair
# ohcva/ohcvb gets 192.0.2.1/24 (a documentation range, local only) and
# rxe0 is created on ohcva. Needs root (CAP_NET_ADMIN) and /dev/infiniband.
#
# usage: ci/soft-roce/setup-host.sh [--mtu N]   set up, print the result
#        ci/soft-roce/setup-host.sh --down      remove what it created
# Prints shell assignments on stdout (run-vm.sh evals them):
#   HOST_RDMA_DEV HOST_RDMA_NETDEV HOST_RDMA_IP HOST_RDMA_GID_INDEX
set -euo pipefail

die() {
	echo "setup-host: ERROR: $*" >&2
	exit 1
}
say() { echo "setup-host: $*" >&2; }

mtu=1500
down=0
while [ $# -gt 0 ]; do
	case "$1" in
	--mtu) mtu=${2:?--mtu needs a value}; shift 2 ;;
	--down) down=1; shift ;;
	*) die "unknown option $1 (usage: setup-host.sh [--mtu N] | --down)" ;;
	esac
done

# Userspace: iproute2's rdma, the rxe verbs provider, ibv_devinfo.
need=()
command -v rdma >/dev/null || need+=(iproute2)
command -v ibv_devinfo >/dev/null || need+=(ibverbs-utils)
[ -e /etc/libibverbs.d/rxe.driver ] || need+=(ibverbs-providers rdma-core)
if [ ${#need[@]} -gt 0 ]; then
	say "installing ${need[*]}"
	[ "$(id -u)" -eq 0 ] || die "not root: install ${need[*]} first"
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null 2>&1 ||
		{ apt-get update -qq && apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null; } ||
		die "apt-get install ${need[*]} failed"
fi

if [ "$down" = 1 ]; then
	if [ -e /sys/class/infiniband/rxe0 ] &&
		[ "$(rdma link show rxe0/1 2>/dev/null | awk '{ for (i = 1; i < NF; i++) if ($i == "netdev") print $(i + 1) }')" = ohcva ]; then
		# Blocks while a process still has the device open.
		timeout 30 rdma link delete rxe0 || die "rdma link delete rxe0 failed or timed out (a process still uses it?)"
	fi
	ip link show ohcva >/dev/null 2>&1 && ip link delete ohcva
	say "removed rxe0/ohcva (if they were ours)"
	exit 0
fi

# ipv4_gid_index DEV IP: the GID table index of IP's RoCE v2 GID.
ipv4_gid_index() {
	local want g
	want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' ${2//./ })
	for g in /sys/class/infiniband/"$1"/ports/1/gids/*; do
		if [ "$(cat "$g" 2>/dev/null)" = "$want" ] &&
			grep -q 'v2' "/sys/class/infiniband/$1/ports/1/gid_attrs/types/${g##*/}" 2>/dev/null; then
			echo "${g##*/}"
			return 0
		fi
	done
	return 1
}

# 1. An RDMA device that is already there (hardware, or rxe made by the
# container's owner): use the first one with an IPv4 address.
for devpath in /sys/class/infiniband/*; do
	[ -e "$devpath" ] || continue
	dev=${devpath##*/}
	nd=$(rdma link show "$dev/1" 2>/dev/null |
		awk '{ for (i = 1; i < NF; i++) if ($i == "netdev") print $(i + 1) }')
	[ -n "$nd" ] || continue
	ip4=$(ip -4 -o addr show dev "$nd" 2>/dev/null | awk '{ sub(/\/.*/, "", $4); print $4; exit }')
	[ -n "$ip4" ] || continue
	gi=$(ipv4_gid_index "$dev" "$ip4" || true)
	say "using existing RDMA device $dev on $nd ($ip4)"
	echo "HOST_RDMA_DEV=$dev HOST_RDMA_NETDEV=$nd HOST_RDMA_IP=$ip4 HOST_RDMA_GID_INDEX=$gi"
	exit 0
done

# 2. Make one.
[ "$(id -u)" -eq 0 ] || die "not root: creating rxe0 needs CAP_NET_ADMIN"
if [ ! -d /sys/module/rdma_rxe ]; then
	modprobe rdma_rxe 2>/dev/null ||
		die "modprobe rdma_rxe failed: this kernel ($(uname -r)) has no Soft-RoCE; use run-vm.sh --mode qemu"
fi
# rxe needs the crc32 shash for its ICRC; load it if it is a module.
modprobe -q crc32_generic 2>/dev/null || true
if ! ip link show ohcva >/dev/null 2>&1; then
	ip link add ohcva type veth peer name ohcvb || die "cannot create the veth pair ohcva/ohcvb"
fi
ip link set ohcva mtu "$mtu" && ip link set ohcvb mtu "$mtu" || die "cannot set MTU $mtu on ohcva/ohcvb"
ip link set ohcvb up && ip link set ohcva up || die "cannot bring ohcva/ohcvb up"
ip -4 addr show dev ohcva | grep -q 192.0.2.1/24 ||
	ip addr add 192.0.2.1/24 dev ohcva || die "cannot add 192.0.2.1/24 to ohcva"
if [ ! -e /sys/class/infiniband/rxe0 ]; then
	rdma link add rxe0 type rxe netdev ohcva ||
		die "rdma link add rxe0 type rxe netdev ohcva failed (dmesg may say why; crc32_generic missing gives ENOENT)"
fi
for _ in $(seq 100); do
	grep -q ACTIVE /sys/class/infiniband/rxe0/ports/1/state 2>/dev/null &&
		gi=$(ipv4_gid_index rxe0 192.0.2.1) && break
	sleep 0.1
done
[ -n "${gi:-}" ] || die "rxe0 did not become ACTIVE with an IPv4 GID within 10 s"
[ -e /dev/infiniband/uverbs0 ] || ls /dev/infiniband/uverbs* >/dev/null 2>&1 ||
	die "rxe0 exists but /dev/infiniband/uverbs* does not (container without the device nodes?)"
say "rxe0 on ohcva (192.0.2.1), GID index $gi"
echo "HOST_RDMA_DEV=rxe0 HOST_RDMA_NETDEV=ohcva HOST_RDMA_IP=192.0.2.1 HOST_RDMA_GID_INDEX=$gi"
