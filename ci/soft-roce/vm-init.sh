#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# /init of the Soft-RoCE test VM (busybox ash, PID 1). prepare.sh copies it
# into the initramfs; its hash is part of the initramfs cache key.
#
# What it does: mounts proc/sys/dev, insmods the modules listed in
# /modules.load (dependency order, computed on the host), mounts the host's
# root filesystem read-only over 9p (tag hostroot) and the writable results
# export (tag results), binds extra writable exports (vmrw=), brings up the
# network, creates rxe0, chroots into the host root and runs the command
# from the kernel command line, then writes rc/stdout/stderr/timing into
# the results export and powers off.
#
# Kernel command line parameters (all set by run-vm.sh):
#   vmcmd=<base64 script>   the command (bash script); or
#   vmcmdfile=1             the script is results/cmd.sh (long commands)
#   vmindex=N vmcount=N     which VM this is (0-based), how many there are
#   vmmtu=N                 netdev MTU (default 1500)
#   vmrxe=0|1               create rxe0 (default 1)
#   vmrw=<base64>           lines "TAG PATH": writable 9p exports to mount
#                           at PATH inside the chroot

PATH=/bin:/sbin:/usr/bin:/usr/sbin
export PATH
/bin/busybox mkdir -p /proc /sys /dev /sbin /usr/bin /usr/sbin /newroot /results
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null || true
# What udev adds on a booted system: bash's process substitution, <(...),
# opens /dev/fd/N (bench/compare.sh's tables failed without it).
ln -sf /proc/self/fd /dev/fd
ln -sf /proc/self/fd/0 /dev/stdin
ln -sf /proc/self/fd/1 /dev/stdout
ln -sf /proc/self/fd/2 /dev/stderr

log() {
	echo "ohc-vm[${idx:-?}] $(cut -d' ' -f1 /proc/uptime)s: $*" >/dev/console
}

results_ok=0
# die MESSAGE: record the failure where the host will look, then power off.
die() {
	log "FATAL: $*"
	if [ "$results_ok" = 1 ]; then
		echo "vm-init: $*" >>/results/init-error
		echo 125 >/results/rc
		sync
		umount /results 2>/dev/null
	fi
	poweroff -f
	sleep 60
}

idx=0
count=1
mtu=1500
want_rxe=1
cmd_b64=
cmd_file=0
rw_b64=
for p in $(cat /proc/cmdline); do
	case "$p" in
	vmcmd=*) cmd_b64=${p#vmcmd=} ;;
	vmcmdfile=*) cmd_file=${p#vmcmdfile=} ;;
	vmindex=*) idx=${p#vmindex=} ;;
	vmcount=*) count=${p#vmcount=} ;;
	vmmtu=*) mtu=${p#vmmtu=} ;;
	vmrxe=*) want_rxe=${p#vmrxe=} ;;
	vmrw=*) rw_b64=${p#vmrw=} ;;
	esac
done
t_init=$(cut -d' ' -f1 /proc/uptime)
log "init started"

# Modules, dependencies first (the order comes from modules.dep).
kver=$(uname -r)
while read -r name; do
	[ -n "$name" ] || continue
	[ -d "/sys/module/$name" ] && continue
	insmod "/modules/$name.ko" || die "insmod $name failed (kernel $kver)"
done </modules.load
t_mod=$(cut -d' ' -f1 /proc/uptime)
log "modules loaded"

# 9p exports: results first, so that later failures can be reported.
opts=trans=virtio,version=9p2000.L,msize=512000
mount -t 9p -o "$opts" results /results ||
	die "cannot mount the results export (tag results)"
results_ok=1
echo "$t_init" >/results/t_init
mount -t 9p -o "$opts,ro,cache=loose" hostroot /newroot ||
	die "cannot mount the host root export (tag hostroot)"
for d in proc sys dev; do
	mount -o bind "/$d" "/newroot/$d" || die "bind /$d into the chroot failed"
done
mkdir -p /newroot/dev/pts /newroot/dev/shm
mount -t devpts devpts /newroot/dev/pts || true
for d in tmp run dev/shm; do
	mount -t tmpfs -o mode=1777 tmpfs "/newroot/$d" ||
		die "tmpfs on /$d failed (is /$d missing on the host?)"
done
# The results folder, visible to the command as $OHC_VM_OUTDIR.
mkdir -p /results/out /newroot/tmp/ohc-vm-out
mount -o bind /results/out /newroot/tmp/ohc-vm-out ||
	die "bind of the results folder failed"
if [ -n "$rw_b64" ]; then
	echo "$rw_b64" | base64 -d >/rw.list || die "bad vmrw= parameter"
	while read -r tag path; do
		[ -n "$tag" ] || continue
		# Under /tmp (a tmpfs here) the mount point must be made.
		[ -d "/newroot$path" ] || mkdir -p "/newroot$path" 2>/dev/null ||
			die "writable export $path: no such folder in the VM"
		mount -t 9p -o "$opts" "$tag" "/newroot$path" ||
			die "cannot mount writable export $tag on $path"
	done </rw.list
fi
log "9p exports mounted"

# Network. One VM: a veth pair, rxe on one end (all ranks share rxe0 and
# talk over its loopback). Several VMs: eth0 is the emulated wire.
# The host's iproute2 (busybox's ip has no veth/rdma support). Absolute
# paths: busybox would run its own applet for a bare "ip".
hostbin() {
	for d in /usr/sbin /usr/bin /sbin /bin; do
		[ -x "/newroot$d/$1" ] && { echo "$d/$1"; return 0; }
	done
	die "$1 not found on the host (install iproute2)"
}
ip_bin=$(hostbin ip)
rdma_bin=$(hostbin rdma)
ip() { chroot /newroot "$ip_bin" "$@"; }
hostname "vm$idx"
# One ip invocation (-batch): every exec of a host binary loads its
# libraries over 9p, which is slow under TCG.
if [ "$count" = 1 ]; then
	netdev=va
	myip=192.0.2.1
	peerip=
	cat >/ip.batch <<-EOF
	link set lo up
	link add va type veth peer name vb
	link set va mtu $mtu
	link set vb mtu $mtu
	link set vb up
	link set va up
	addr add 192.0.2.1/24 dev va
	EOF
else
	netdev=eth0
	myip=192.0.2.$((idx + 1))
	if [ "$idx" = 0 ]; then peerip=192.0.2.2; else peerip=192.0.2.1; fi
	[ -d /sys/class/net/eth0 ] || die "no eth0 (virtio-net missing?)"
	cat >/ip.batch <<-EOF
	link set lo up
	link set eth0 mtu $mtu
	link set eth0 up
	addr add $myip/24 dev eth0
	EOF
fi
cp /ip.batch /newroot/tmp/.ohc-ip.batch
ip -batch /tmp/.ohc-ip.batch || die "network set-up failed: $(tr '\n' ';' </ip.batch)"
rm -f /newroot/tmp/.ohc-ip.batch
log "network up ($netdev $myip)"

gid_index=
if [ "$want_rxe" = 1 ]; then
	chroot /newroot "$rdma_bin" link add rxe0 type rxe netdev "$netdev" ||
		die "rdma link add rxe0 type rxe netdev $netdev failed (crc32_generic loaded? see dmesg)"
	# Wait for the port to be ACTIVE and for the IPv4 (RoCE v2) GID.
	gids=/sys/class/infiniband/rxe0/ports/1
	# shellcheck disable=SC2183,SC2046 # the four octets, split on purpose
	want_gid=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' \
		$(echo "$myip" | tr . ' '))
	n=0
	while [ $n -lt 100 ]; do
		if grep -q ACTIVE $gids/state 2>/dev/null; then
			for g in $gids/gids/*; do
				if [ "$(cat "$g" 2>/dev/null)" = "$want_gid" ]; then
					gid_index=${g##*/}
					break
				fi
			done
			[ -n "$gid_index" ] && break
		fi
		sleep 0.1
		n=$((n + 1))
	done
	[ -n "$gid_index" ] ||
		die "rxe0 did not become ACTIVE with GID $want_gid within 10 s"
	log "rxe0 on $netdev ($myip) ACTIVE, RoCE v2 IPv4 GID index $gid_index"
fi

# The command.
if [ "$cmd_file" = 1 ]; then
	cp /results/cmd.sh /newroot/tmp/.ohc-vm-cmd.sh || die "no results/cmd.sh"
else
	echo "$cmd_b64" | base64 -d >/newroot/tmp/.ohc-vm-cmd.sh ||
		die "bad vmcmd= parameter (base64 expected)"
fi
t_ready=$(cut -d' ' -f1 /proc/uptime)
echo "$t_ready" >/results/t_ready
log "running the command"
rc=0
chroot /newroot /usr/bin/env -i \
	PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	HOME=/root LANG=C.UTF-8 TERM=dumb \
	OHC_VM_MODE=qemu OHC_VM_INDEX="$idx" OHC_VM_COUNT="$count" \
	OHC_VM_IP="$myip" OHC_VM_PEER_IP="$peerip" OHC_VM_NETDEV="$netdev" \
	OHC_VM_RDMA_DEV=rxe0 OHC_VM_GID_INDEX="$gid_index" \
	OHC_VM_OUTDIR=/tmp/ohc-vm-out \
	/bin/bash /tmp/.ohc-vm-cmd.sh \
	</dev/null >/results/stdout 2>/results/stderr || rc=$?
t_done=$(cut -d' ' -f1 /proc/uptime)
log "command exited with $rc"
# A failed command across two VMs: does our emulated NIC still transmit?
# QEMU's virtio-net over the socket netdev can stop taking packets; the
# guest's NETDEV WATCHDOG says so only once the queue fills, so a stall
# with little traffic is silent (the ranks then wait, and rxe retries
# nothing it cannot send). virtio-net counts a packet sent when the device
# has taken it: three pings that leave tx_packets where it was mean the
# wire is dead on our side; no answer from a peer that still runs means
# it is dead on its side (vm-suites.sh reruns such a stage).
if [ "$rc" != 0 ] && [ -n "$peerip" ]; then
	txf=/sys/class/net/$netdev/statistics/tx_packets
	state=$(cat "/sys/class/net/$netdev/operstate" 2>/dev/null)
	tx0=$(cat "$txf" 2>/dev/null || echo 0)
	answers=no
	ping -c 3 -W 1 "$peerip" >/dev/null 2>&1 && answers=yes
	tx1=$(cat "$txf" 2>/dev/null || echo 0)
	if [ "$state" != up ]; then # a test took it down: not a stall
		log "wire check: $netdev is $state"
	elif [ "$tx1" = "$tx0" ]; then
		log "wire check: $netdev took no packet in 3 pings (tx_packets" \
			"$tx0): the emulated NIC stopped transmitting"
	elif [ "$answers" = no ]; then # its NIC, or it is gone
		log "wire check: $netdev transmits (tx_packets $tx0 -> $tx1)" \
			"but the peer $peerip does not answer"
	else
		log "wire check: $netdev transmits (tx_packets $tx0 -> $tx1)," \
			"the peer answers"
	fi
fi
{
	echo "init_start $t_init"
	echo "modules_loaded $t_mod"
	echo "command_start $t_ready"
	echo "command_end $t_done"
} >/results/timing
dmesg >/results/dmesg 2>/dev/null || true
echo "$rc" >/results/rc
sync
umount /newroot/tmp/ohc-vm-out 2>/dev/null
umount /results 2>/dev/null
poweroff -f
sleep 60
