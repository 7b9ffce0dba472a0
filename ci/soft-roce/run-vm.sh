#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs a command where a Soft-RoCE device (rxe0) exists: in QEMU VMs booted
# from Debian's stock kernel (the host kernel has no RDMA), or directly on
# a host whose kernel has rdma_rxe (--mode host, see setup-host.sh).
#
# usage: ci/soft-roce/run-vm.sh [options] -- COMMAND [ARG...]
#   --vms 1|2        1: one VM, rxe0 on a veth end, all ranks share rxe0
#                    (loopback); 2: two VMs joined by an emulated Ethernet
#                    wire (socket netdev on 127.0.0.1), rxe0 on eth0 in
#                    each, COMMAND runs in both. Default 1.
#   --timeout S      wall-clock limit for the whole VM run (boot included);
#                    default 900.
#   --mode M         auto (default: host if an RDMA device exists or
#                    rdma_rxe loads, else qemu), qemu, host.
#   --rw DIR         export DIR writable into the VM at the same path
#                    (repeatable; the host root is read-only there), e.g.
#                    the build folder ctest writes into.
#   --env NAME=VAL   set a variable for COMMAND (repeatable). HCCL_*,
#                    OPENHCCL_*, OHC_* (but not OHC_VM_*/OHC_SOFTROCE_*),
#                    ASAN/UBSAN/LSAN_OPTIONS and CI pass through anyway.
#   --mtu N          netdev MTU (default 1500: rxe active MTU 1024; 9000
#                    gives 4096).
#   --nics 1|2       with --vms 2 (qemu): 2 adds a second wire between the
#                    VMs (eth1, 192.0.3.0/24) and rxe1 on it, for tests
#                    that move traffic to a backup RDMA device; COMMAND
#                    then also sees OHC_VM_IP2, OHC_VM_PEER_IP2,
#                    OHC_VM_NETDEV2 (eth1), OHC_VM_RDMA_DEV2 (rxe1) and
#                    OHC_VM_GID_INDEX2. Default 1.
#   --mem MB         memory per VM (default 2048 for one VM, 1024 each
#                    for two).
#   --no-rxe         do not create rxe0 (the command does it).
#   --results DIR    where the per-VM results go (default
#                    build/soft-roce/runs/<time>-<pid>).
#   --quiet          do not stream COMMAND's output while it runs.
#
# COMMAND runs in the current directory, as root, with bash, on the host's
# (read-only) root filesystem; /tmp, /run and /dev/shm are fresh tmpfs (a
# build folder under /tmp is visible only when passed with --rw). It
# sees OHC_VM_MODE (qemu|host), OHC_VM_INDEX (0..), OHC_VM_COUNT,
# OHC_VM_IP, OHC_VM_PEER_IP (empty with one VM), OHC_VM_NETDEV,
# OHC_VM_RDMA_DEV (rxe0), OHC_VM_GID_INDEX (RoCE v2 IPv4 GID) and
# OHC_VM_OUTDIR (a writable folder that ends up in the results).
#
# Exit status: COMMAND's (all VMs agree) or the first non-zero one; 124 if
# a VM timed out, 125 if the VM itself failed (boot, rxe setup). On
# failure the tails of the VMs' logs are printed.
#
# Environment: OHC_VM_ACCEL (default tcg; kvm only where it really works:
# a /dev/kvm without VT-x hangs), OHC_SOFTROCE_CACHE (see prepare.sh),
# OHC_VM_CLOCKSOURCE (default tsc, booted with tsc=reliable: the guest
# kernel would otherwise pick HPET, which the vDSO cannot read, making
# every clock_gettime a system call plus an emulated MMIO read; empty
# leaves the choice to the kernel).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
cache=${OHC_SOFTROCE_CACHE:-$top/build/soft-roce}

usage() {
	sed -n '3,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
}
die() {
	echo "run-vm: ERROR: $*" >&2
	exit 125
}

nvms=1
nics=1
tmo=900
mode=auto
mtu=1500
mem=
want_rxe=1
results=
quiet=0
rw_dirs=()
envs=()
while [ $# -gt 0 ]; do
	case "$1" in
	--vms) nvms=${2:?--vms needs a value}; shift 2 ;;
	--timeout) tmo=${2:?--timeout needs seconds}; shift 2 ;;
	--mode) mode=${2:?--mode needs auto, qemu or host}; shift 2 ;;
	--rw) rw_dirs+=("${2:?--rw needs a folder}"); shift 2 ;;
	--env) envs+=("${2:?--env needs NAME=VALUE}"); shift 2 ;;
	--mtu) mtu=${2:?--mtu needs a value}; shift 2 ;;
	--nics) nics=${2:?--nics needs 1 or 2}; shift 2 ;;
	--mem) mem=${2:?--mem needs MB}; shift 2 ;;
	--no-rxe) want_rxe=0; shift ;;
	--results) results=${2:?--results needs a folder}; shift 2 ;;
	--quiet) quiet=1; shift ;;
	-h | --help) usage ;;
	--) shift; break ;;
	*) echo "run-vm: unknown option $1 (COMMAND goes after --)" >&2; usage ;;
	esac
done
[ $# -gt 0 ] || { echo "run-vm: no COMMAND given" >&2; usage; }
case "$nvms" in 1 | 2) ;; *) die "--vms must be 1 or 2, not $nvms" ;; esac
case "$nics" in 1 | 2) ;; *) die "--nics must be 1 or 2, not $nics" ;; esac
[ "$nics" = 1 ] || [ "$nvms" = 2 ] || die "--nics 2 needs --vms 2"
[[ "$tmo" =~ ^[0-9]+$ ]] && [ "$tmo" -gt 0 ] || die "--timeout must be a positive number of seconds"
[[ "$mtu" =~ ^[0-9]+$ ]] && [ "$mtu" -ge 1280 ] && [ "$mtu" -le 9000 ] ||
	die "--mtu must be 1280..9000"
[ -z "$mem" ] || [[ "$mem" =~ ^[0-9]+$ ]] || die "--mem must be megabytes"
for e in "${envs[@]}"; do
	[[ "$e" =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || die "--env $e: NAME=VALUE expected"
done
for i in "${!rw_dirs[@]}"; do
	[ -d "${rw_dirs[$i]}" ] || die "--rw ${rw_dirs[$i]}: no such folder"
	rw_dirs[$i]=$(cd "${rw_dirs[$i]}" && pwd -P)
done

# --- the script COMMAND runs as ----------------------------------------------
script=$(
	echo "# generated by ci/soft-roce/run-vm.sh"
	for name in $(compgen -e); do
		case "$name" in
		OHC_VM_* | OHC_SOFTROCE_*) ;;
		HCCL_* | OPENHCCL_* | OHC_* | ASAN_OPTIONS | UBSAN_OPTIONS | LSAN_OPTIONS | CI)
			printf 'export %s=%q\n' "$name" "${!name}" ;;
		esac
	done
	for e in "${envs[@]}"; do
		printf 'export %s=%q\n' "${e%%=*}" "${e#*=}"
	done
	if [ "$nics" = 2 ]; then
		# The second wire and rxe1 (vm-init.sh set up eth0 and rxe0).
		cat <<-'EOF'
		ohc_ip2=192.0.3.$((OHC_VM_INDEX + 1))
		ohc_gids=/sys/class/infiniband/rxe1/ports/1
		ohc_want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' ${ohc_ip2//./ })
		ip link set eth1 up && ip addr add "$ohc_ip2/24" dev eth1 &&
		    rdma link add rxe1 type rxe netdev eth1 ||
		    { echo "run-vm: eth1/rxe1 set-up failed" >&2; exit 125; }
		# builtins only: every exec costs ~0.7 s in the guest
		for _ in $(seq 100); do
		    if read -r st <"$ohc_gids/state" && [[ "$st" == *ACTIVE* ]]; then
		        for g in 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do
		            read -r v <"$ohc_gids/gids/$g" 2>/dev/null || continue
		            [ "$v" = "$ohc_want" ] && { OHC_VM_GID_INDEX2=$g; break; }
		        done
		    fi
		    [ -n "${OHC_VM_GID_INDEX2:-}" ] && break
		    sleep 0.1
		done
		[ -n "${OHC_VM_GID_INDEX2:-}" ] ||
		    { echo "run-vm: rxe1 has no GID $ohc_want" >&2; exit 125; }
		export OHC_VM_GID_INDEX2 OHC_VM_IP2=$ohc_ip2 OHC_VM_NETDEV2=eth1 \
		    OHC_VM_RDMA_DEV2=rxe1 OHC_VM_PEER_IP2=192.0.3.$((2 - OHC_VM_INDEX))
		EOF
	fi
	printf 'cd %q || exit 125\n' "$PWD"
	printf 'exec'
	printf ' %q' "$@"
	printf '\n'
)

# --- results folder ------------------------------------------------------------
if [ -z "$results" ] && ! mkdir -p "$cache/runs" 2>/dev/null; then
	# Read-only checkout (e.g. inside one of these VMs): a temporary folder.
	results=$(mktemp -d "${TMPDIR:-/tmp}/ohc-run-vm.XXXXXX")
fi
if [ -z "$results" ]; then
	# Keep the 20 most recent runs.
	find "$cache/runs" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' |
		LC_ALL=C sort | head -n -19 | sed "s|^|$cache/runs/|" | xargs -r -d '\n' rm -rf
	results=$cache/runs/$(date +%Y%m%d-%H%M%S)-$$
fi
mkdir -p "$results"
results=$(cd "$results" && pwd -P)
for ((i = 0; i < nvms; i++)); do
	rm -rf "$results/vm$i"
	mkdir -p "$results/vm$i/out"
	: >"$results/vm$i/stdout"
	: >"$results/vm$i/stderr"
done

# --- mode --------------------------------------------------------------------
if [ "$mode" = auto ]; then
	if [ -d /sys/class/infiniband ] && [ -n "$(ls /sys/class/infiniband 2>/dev/null)" ]; then
		mode=host
	elif [ -d /sys/module/rdma_rxe ] || modprobe -q rdma_rxe 2>/dev/null; then
		mode=host
	else
		mode=qemu
	fi
fi
case "$mode" in qemu | host) ;; *) die "--mode must be auto, qemu or host" ;; esac

pids=()     # what we started (timeout wrappers, tails)
pidfiles=() # qemu's own pid files
# shellcheck disable=SC2317 # called from the EXIT trap
cleanup() {
	local p f
	for p in "${pids[@]}"; do
		kill -TERM "$p" 2>/dev/null || true
	done
	for f in "${pidfiles[@]}"; do
		[ -s "$f" ] && kill -TERM "$(cat "$f")" 2>/dev/null || true
	done
	for p in "${pids[@]}"; do
		wait "$p" 2>/dev/null || true
	done
}
trap cleanup EXIT
trap 'echo "run-vm: interrupted" >&2; exit 130' INT TERM

# stream FILE PREFIX PID: copy FILE's lines to stdout while PID lives.
stream() {
	local file=$1 prefix=$2 pid=$3
	if [ -n "$prefix" ]; then
		tail -n +1 -F --pid="$pid" "$file" 2>/dev/null | sed -u "s/^/$prefix/"
	else
		tail -n +1 -F --pid="$pid" "$file" 2>/dev/null
	fi
}

start=$(date +%s.%N)
vm_pids=()
if [ "$mode" = host ]; then
	# One machine: every "VM" is a process on the host's rxe0.
	[ "$want_rxe" = 1 ] || die "--no-rxe is only meaningful with --mode qemu"
	[ "$nics" = 1 ] || die "--nics 2 needs --mode qemu"
	hostenv=$(bash "$here/setup-host.sh" --mtu "$mtu") || die "setup-host.sh failed"
	eval "$hostenv"
	printf '%s\n' "$script" >"$results/cmd.sh"
	for ((i = 0; i < nvms; i++)); do
		(
			cd /
			exec env OHC_VM_MODE=host OHC_VM_INDEX=$i OHC_VM_COUNT=$nvms \
				OHC_VM_IP="$HOST_RDMA_IP" \
				OHC_VM_PEER_IP="$([ "$nvms" = 1 ] || echo "$HOST_RDMA_IP")" \
				OHC_VM_NETDEV="$HOST_RDMA_NETDEV" \
				OHC_VM_RDMA_DEV="$HOST_RDMA_DEV" \
				OHC_VM_GID_INDEX="$HOST_RDMA_GID_INDEX" \
				OHC_VM_OUTDIR="$results/vm$i/out" \
				timeout -k 10 "$tmo" bash "$results/cmd.sh" \
				</dev/null >"$results/vm$i/stdout" 2>"$results/vm$i/stderr"
		) &
		vm_pids[$i]=$!
		pids+=("$!")
		echo "host" >"$results/vm$i/console.log"
	done
else
	bash "$here/prepare.sh" --quiet || die "prepare.sh failed"
	# shellcheck source=/dev/null
	. "$cache/current.env"
	accel=${OHC_VM_ACCEL:-tcg}
	# TSC, not HPET: the vDSO reads it (see the header). TCG gives every
	# vCPU the host's TSC, so tsc=reliable (no sync check, no watchdog
	# against HPET) holds.
	clocksource=${OHC_VM_CLOCKSOURCE-tsc}
	[ -n "$mem" ] || mem=$([ "$nvms" = 1 ] && echo 2048 || echo 1024)
	smp=$([ "$nvms" = 1 ] && echo 2 || echo 1)

	cmd_b64=$(printf '%s\n' "$script" | base64 -w0)
	rw_list=
	for i in "${!rw_dirs[@]}"; do
		rw_list+="rw$i ${rw_dirs[$i]}"$'\n'
	done

	# free_port: a TCP port nobody uses on this machine (for the wire).
	free_port() {
		local p
		for _ in $(seq 50); do
			p=$((20000 + RANDOM % 40000))
			if ! ss -Htan "( sport = :$p or dport = :$p )" 2>/dev/null | grep -q .; then
				echo "$p"
				return 0
			fi
		done
		die "no free TCP port found on 127.0.0.1"
	}

	# start_vm I: boots VM I in the background (vm_pids[I]).
	start_vm() {
		local i=$1 d=$results/vm$1 append sock args j
		append="console=ttyS0 panic=-1 no_timer_check quiet loglevel=4 vmindex=$i vmcount=$nvms vmmtu=$mtu vmrxe=$want_rxe"
		if [ -n "$clocksource" ]; then
			append+=" clocksource=$clocksource"
			[ "$clocksource" != tsc ] || append+=" tsc=reliable"
		fi
		if [ -n "$rw_list" ]; then
			append+=" vmrw=$(printf '%s' "$rw_list" | base64 -w0)"
		fi
		# The kernel command line holds 2048 bytes; longer commands go
		# through the results export.
		if [ $((${#append} + ${#cmd_b64})) -lt 1900 ]; then
			append+=" vmcmd=$cmd_b64"
		else
			printf '%s\n' "$script" >"$d/cmd.sh"
			append+=" vmcmdfile=1"
		fi
		args=(-machine "q35,accel=$accel" -cpu max -smp "$smp" -m "$mem"
			-nodefaults -no-user-config -nographic -no-reboot
			-serial "file:$d/console.log" -monitor none
			-pidfile "$d/qemu.pid"
			-kernel "$VM_KERNEL" -initrd "$VM_INITRD" -append "$append"
			-virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap"
			-virtfs "local,path=$d,mount_tag=results,security_model=none,multidevs=remap")
		for j in "${!rw_dirs[@]}"; do
			args+=(-virtfs "local,path=${rw_dirs[$j]},mount_tag=rw$j,security_model=none,multidevs=remap")
		done
		if [ "$nvms" = 1 ]; then
			args+=(-nic none)
		else
			sock=$([ "$i" = 0 ] && echo "listen" || echo "connect")
			# romfile= : no PXE option ROM (faster boot, no ipxe needed).
			args+=(-netdev "socket,id=n0,$sock=127.0.0.1:$port"
				-device "virtio-net-pci,netdev=n0,mac=52:54:00:12:34:$((10 + i)),host_mtu=$mtu,romfile=")
			if [ "$nics" = 2 ]; then
				args+=(-netdev "socket,id=n1,$sock=127.0.0.1:$port2"
					-device "virtio-net-pci,netdev=n1,mac=52:54:00:12:35:$((10 + i)),host_mtu=$mtu,romfile=")
			fi
		fi
		pidfiles+=("$d/qemu.pid")
		timeout -k 10 "$tmo" qemu-system-x86_64 "${args[@]}" \
			</dev/null >"$d/qemu.log" 2>&1 &
		vm_pids[$i]=$!
		pids+=("$!")
	}

	if [ "$nvms" = 1 ]; then
		start_vm 0
	else
		# VM 0 listens, VM 1 connects: VM 1 starts once VM 0 listens.
		# A port taken between the check and qemu's bind: try another.
		for attempt in 1 2 3 4 5; do
			port=$(free_port)
			port2=$(free_port)
			[ "$port2" != "$port" ] || port2=$(free_port)
			start_vm 0
			for _ in $(seq 100); do
				ss -Hltn "( sport = :$port )" 2>/dev/null | grep -q . && break
				kill -0 "${vm_pids[0]}" 2>/dev/null || break
				sleep 0.1
			done
			ss -Hltn "( sport = :$port )" 2>/dev/null | grep -q . && break
			kill -TERM "${vm_pids[0]}" 2>/dev/null || true
			wait "${vm_pids[0]}" 2>/dev/null || true
			grep -q 'in use' "$results/vm0/qemu.log" && [ "$attempt" -lt 5 ] && continue
			die "VM 0's qemu does not listen on 127.0.0.1:$port: $(tail -n 5 "$results/vm0/qemu.log")"
		done
		start_vm 1
	fi
fi

if [ "$quiet" = 0 ]; then
	for ((i = 0; i < nvms; i++)); do
		prefix=$([ "$nvms" = 1 ] || echo "[vm$i] ")
		stream "$results/vm$i/stdout" "$prefix" "${vm_pids[$i]}" &
		pids+=("$!")
		stream "$results/vm$i/stderr" "$prefix" "${vm_pids[$i]}" >&2 &
		pids+=("$!")
	done
fi

# Wait. When one VM's command fails, the others get 30 s before they are
# stopped (a peer waiting for a dead one would otherwise sit out the
# timeout).
declare -A exit_of
grace_end=
while :; do
	running=0
	for ((i = 0; i < nvms; i++)); do
		[ -n "${exit_of[$i]:-}" ] && continue
		if kill -0 "${vm_pids[$i]}" 2>/dev/null; then
			running=$((running + 1))
			continue
		fi
		rc=0
		wait "${vm_pids[$i]}" || rc=$?
		exit_of[$i]=$rc
		vmrc=$(cat "$results/vm$i/rc" 2>/dev/null || true)
		if [ "$mode" = host ]; then
			vmrc=$rc
			echo "$rc" >"$results/vm$i/rc"
		fi
		if [ "$vmrc" != 0 ] && [ -z "$grace_end" ] && [ "$nvms" -gt 1 ]; then
			grace_end=$(($(date +%s) + 30))
		fi
	done
	[ "$running" = 0 ] && break
	if [ -n "$grace_end" ] && [ "$(date +%s)" -ge "$grace_end" ]; then
		for ((i = 0; i < nvms; i++)); do
			if [ -z "${exit_of[$i]:-}" ]; then
				echo "run-vm: stopping vm$i (its peer failed 30 s ago)" >&2
				echo stopped >"$results/vm$i/stopped"
				kill -TERM "${vm_pids[$i]}" 2>/dev/null || true
			fi
		done
	fi
	sleep 0.2
done
end=$(date +%s.%N)
for p in "${pids[@]}"; do
	wait "$p" 2>/dev/null || true
done
pids=()

# --- verdict -----------------------------------------------------------------
final=0
summary=()
for ((i = 0; i < nvms; i++)); do
	d=$results/vm$i
	vmrc=$(cat "$d/rc" 2>/dev/null || true)
	why=
	if [ -z "$vmrc" ]; then
		if [ -e "$d/stopped" ]; then
			vmrc=125; why="stopped after its peer failed"
		elif [ "${exit_of[$i]}" = 124 ] || [ "${exit_of[$i]}" = 137 ]; then
			vmrc=124; why="timed out after $tmo s"
		else
			vmrc=125; why="VM ended without an exit code (qemu exit ${exit_of[$i]}; crash or kernel panic?)"
		fi
	elif [ "$vmrc" = 125 ] && [ -s "$d/init-error" ]; then
		why=$(cat "$d/init-error")
	elif [ "$mode" = host ] && [ "$vmrc" = 124 ]; then
		why="timed out after $tmo s"
	fi
	if [ "$vmrc" != 0 ] && [ "$final" = 0 ]; then
		final=$vmrc
	fi
	boot=
	if [ -s "$d/timing" ]; then
		boot=$(awk '/^command_start/ { printf " boot %.1fs", $2 }' "$d/timing")
	fi
	summary+=("vm$i: exit $vmrc${why:+ ($why)}$boot")
done
wall=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')

if [ "$final" != 0 ]; then
	for ((i = 0; i < nvms; i++)); do
		d=$results/vm$i
		case "$(cat "$d/rc" 2>/dev/null || true)" in
		0 | 77) continue ;; # 77: skipped, the command said why
		esac
		echo "----- vm$i: last lines of stderr -----" >&2
		tail -n 30 "$d/stderr" >&2 || true
		if [ "$quiet" = 1 ]; then
			echo "----- vm$i: last lines of stdout -----" >&2
			tail -n 30 "$d/stdout" >&2 || true
		fi
		if [ "$mode" = qemu ]; then
			echo "----- vm$i: last lines of the console -----" >&2
			tail -n 25 "$d/console.log" >&2 || true
			if [ -s "$d/qemu.log" ]; then
				echo "----- vm$i: qemu's messages -----" >&2
				tail -n 10 "$d/qemu.log" >&2
			fi
		fi
	done
fi
{
	echo "run-vm: mode $mode, $nvms VM(s), ${wall}s, results in $results"
	printf 'run-vm:   %s\n' "${summary[@]}"
} >&2
exit "$final"
