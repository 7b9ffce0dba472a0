#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# OpenHCCL's hccl_test tools beside the peers on this machine, over the same
# sizes and rank counts (fp32, sum, root 0): Open MPI (--mca btl vader,self),
# MPICH (its default shared-memory path) and Gloo (TCP over loopback: the
# Debian build has no shared-memory transport). Missing Debian packages are
# installed. Writes a markdown table per collective with times, busbw and
# busbw ratios (OpenHCCL / peer) to build/bench/compare.md and a busbw plot
# per rank count to build/bench/compare-np<N>.png. A peer that fails says
# why under its table (its exit status and first error lines). This script
# runs the tools; the rows' best of runs, the tables and the ratios are
# bench/analysis.py's (best, table, summary, p2p).
#
# -R: the same over RDMA verbs on an rxe (Soft-RoCE) device, every rank on
# one device (rxe loops the packets back): OpenHCCL with
# HCCL_INTRA_ROCE_ENABLE=1, Open MPI with pml ucx on the device, and
# Gloo's ibverbs transport; before the collectives, HcclSend/HcclRecv
# against ib_write_lat and ib_write_bw on the same device. Without an RDMA
# device here it builds on the host and runs itself in the Soft-RoCE VM
# (ci/soft-roce/run-vm.sh; export OHC_SOFTROCE_CACHE to reuse a prepared
# kernel). TCG emulation: only the ratios mean anything. Writes
# compare-rxe.md and compare-rxe-np<N>.png.
#
# usage: bench/compare.sh [-R] [-n "2 4 8"] [-b MIN] [-e MAX] [-f FACTOR]
#                         [-o "OPS"] [-p "ompi mpich gloo"] [-r REPS]
#                         [-O OUT.md] [-P] [-T] [-F]
#   -n  rank counts (2)        -b/-e  sizes, K/M/G suffixes (8, 64M;
#       -R: 1K, 1M)            -f  size factor (2; -R: 4)
#   -o  collectives (allreduce allgather reduce_scatter broadcast reduce
#       alltoall)              -p  peers (ompi mpich gloo; -R: ompi gloo)
#   -r  runs of each implementation, interleaved; the table keeps each
#       size's best time (1; take 3 or more on a busy machine)
#   -O  markdown output (build/bench/compare.md)   -P  no plot
#   -T  no runs: tables and plot again from the last run's data
#   -F  fresh inputs: every implementation writes its input again
#       (a copy, timed) before each call, as an application's data is
#       fresh from the CPU; without it, an input unchanged since the
#       last call lets single-copy paths read it out of the reader's
#       own cache (hccl_test --touch_input 1, OHC_BENCH_TOUCH=1)
# ITERS (20; -R: 5) and WARMUP (5; -R: 2) set the iterations, P2P_REPS (2)
# the point-to-point runs of -R; BUILD_DIR
# (build/bench); OHC_UCX_TLS and OHC_UCX_NET_DEVICES (-R: Open MPI's
# UCX_TLS, default rc_verbs,ud_verbs,self, and UCX_NET_DEVICES, default
# the rxe device's port 1).
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
. bench/lib.sh
args=("$@")
nps=2
minb=""
maxb=""
factor=""
ops="allreduce allgather reduce_scatter broadcast reduce alltoall"
peers=""
plot=1
reps=1
runs=1
rxe=0
build=${BUILD_DIR:-build/bench}
md=""
touch=0
while getopts "Rn:b:e:f:o:p:r:O:PTFh" c; do
	case $c in
	R) rxe=1 ;;
	n) nps=$OPTARG ;;
	b) minb=$OPTARG ;;
	e) maxb=$OPTARG ;;
	f) factor=$OPTARG ;;
	o) ops=$OPTARG ;;
	p) peers=$OPTARG ;;
	r) reps=$OPTARG ;;
	O) md=$OPTARG ;;
	P) plot=0 ;;
	T) runs=0 ;;
	F) touch=1 ;;
	*) sed -n '3,/^set -e/p' "$0" | sed '$d;s/^# \{0,1\}//' >&2; exit 2 ;;
	esac
done
if [ "$rxe" = 1 ]; then
	minb=${minb:-1K} maxb=${maxb:-1M} factor=${factor:-4}
	peers=${peers:-ompi gloo}
	iters=${ITERS:-5} warmup=${WARMUP:-2}
	tag=compare-rxe
else
	minb=${minb:-8} maxb=${maxb:-64M} factor=${factor:-2}
	peers=${peers:-ompi mpich gloo}
	iters=${ITERS:-20} warmup=${WARMUP:-5}
	tag=compare
fi
md=${md:-$build/$tag.md}
has() { [[ " $1 " == *" $2 "* ]]; }
# the best-of-runs rows, tables and ratios: bench/analysis.py (Debian's
# python3; the VM sees the host's)
py=/usr/bin/python3
# -R: 1 in the VM (the host built everything), -1 build here and run in
# the VM, 2 this host has an RDMA device: build and run here
invm=0
if [ "$rxe" = 1 ]; then
	if [ -n "${OHC_VM_MODE:-}" ]; then
		invm=1
	elif ohc_bench_need_vm; then
		[ "$runs" = 1 ] && invm=-1
	else
		invm=2
	fi
fi

# Debian packages this run needs, installed when missing (as ci/deps.sh).
install_missing() {
	local missing=() p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
			grep -q "install ok installed" || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	echo "compare.sh: installing ${missing[*]}"
	local sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	export DEBIAN_FRONTEND=noninteractive
	$sudo apt-get update -qq
	$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
[ "$runs" = 1 ] && [ "$invm" != 1 ] && bash ci/deps.sh bench
want=()
has "$peers" mpich && want+=(mpich libmpich-dev)
has "$peers" gloo && want+=(libgloo-dev g++)
[ "$plot" = 1 ] && want+=(gnuplot-nox)
[ ${#want[@]} -eq 0 ] || [ "$invm" = 1 ] || install_missing "${want[@]}"

peerbin=$build/peers
if [ "$runs" = 1 ] && [ "$invm" != 1 ]; then
cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=Release -DOHC_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j"$(nproc)" >/dev/null
mkdir -p "$peerbin"
has "$peers" ompi &&
	mpicc.openmpi -O2 -o "$peerbin/mpi_coll_ompi" bench/peers/mpi_coll.c
has "$peers" mpich &&
	mpicc.mpich -O2 -o "$peerbin/mpi_coll_mpich" bench/peers/mpi_coll.c
has "$peers" gloo &&
	g++ -O2 -std=c++17 -o "$peerbin/gloo_coll" bench/peers/gloo_coll.cc \
		-lgloo -pthread
fi
if [ "$invm" = -1 ]; then
	bash ci/soft-roce/prepare.sh >/dev/null
	build=$(cd "$build" && pwd)
	# the VM sees the host's files; only the build folder is writable
	exec ci/soft-roce/run-vm.sh --rw "$build" --timeout 1800 -- \
		env BUILD_DIR="$build" ITERS="$iters" WARMUP="$warmup" \
		P2P_REPS="${P2P_REPS:-2}" \
		bash bench/compare.sh "${args[@]}"
fi

# the peers read it; ours takes --touch_input
export OHC_BENCH_TOUCH=$touch
minB=$(numfmt --from=iec "$minb")
maxB=$(numfmt --from=iec "$maxb")
out=$build/$tag
if [ "$runs" = 1 ]; then
	rm -rf "$out"
	mkdir -p "$out"
fi
label() {
	case $1 in
	ohc) echo OpenHCCL ;; ompi) echo "Open MPI" ;;
	mpich) echo MPICH ;; gloo) echo Gloo ;;
	esac
}

# run IMPL OP NP: the hccl_test-style rows of one implementation
run() {
	local impl=$1 op=$2 np=$3
	args=("$op" "$minB" "$maxB" "$factor" "$iters" "$warmup")
	if [ "$rxe" = 1 ]; then
		run_rxe "$@"
		return
	fi
	case $impl in
	ohc)
		timeout 900 "$build/tools/$(ohc_bench_tool_of "$op")" -np "$np" -b "$minB" -e "$maxB" \
			-f "$factor" -d fp32 -o sum -n "$iters" -w "$warmup" \
			--touch_input "$touch" ;;
	ompi)
		timeout 900 mpirun.openmpi --allow-run-as-root --oversubscribe -np "$np" \
			--mca pml ob1 --mca btl vader,self \
			"$peerbin/mpi_coll_ompi" "${args[@]}" ;;
	mpich)
		timeout 900 mpirun.mpich -np "$np" "$peerbin/mpi_coll_mpich" "${args[@]}" ;;
	gloo)
		local store pids=() r
		store=$(mktemp -d)
		for ((r = 1; r < np; r++)); do
			timeout 900 "$peerbin/gloo_coll" "${args[@]}" "$r" "$np" \
				"$store" >/dev/null &
			pids+=($!)
		done
		local st=0
		timeout 900 "$peerbin/gloo_coll" "${args[@]}" 0 "$np" "$store" || st=$?
		wait "${pids[@]}" || st=$?
		rm -rf "$store"
		return $st ;;
	esac
}

# run_rxe IMPL OP NP: the same over the rxe device, tmo seconds at most
tmo=600
dev=${OHC_VM_RDMA_DEV:-$(ls /sys/class/infiniband 2>/dev/null | head -1 || true)}
gid=${OHC_VM_GID_INDEX:-1}
run_rxe() {
	local impl=$1 op=$2 np=$3
	case $impl in
	ohc)
		HCCL_INTRA_ROCE_ENABLE=1 timeout "$tmo" \
			"$build/tools/$(ohc_bench_tool_of "$op")" -np "$np" -b "$minB" \
			-e "$maxB" -f "$factor" -d fp32 -o sum -n "$iters" \
			-w "$warmup" --touch_input "$touch" ;;
	ompi)
		# Debian's btl openib has only the udcm CPC (no RoCE): UCX,
		# restricted to the rxe device
		timeout "$tmo" mpirun.openmpi --allow-run-as-root --oversubscribe \
			-np "$np" --mca pml ucx \
			-x UCX_NET_DEVICES="${OHC_UCX_NET_DEVICES:-$dev:1}" \
			-x UCX_IB_GID_INDEX="$gid" \
			-x UCX_TLS="${OHC_UCX_TLS:-rc_verbs,ud_verbs,self}" \
			"$peerbin/mpi_coll_ompi" "${args[@]}" ;;
	gloo)
		GLOO_IB_DEV=$dev GLOO_IB_GID=$gid run_gloo "$np" ;;
	*)
		echo "compare.sh: $(label "$impl") is not run over rxe" >&2
		return 2 ;;
	esac
}

# run_gloo NP: NP processes that meet in a file store (args: run's)
run_gloo() {
	local np=$1 store pids=() r st=0
	store=$(mktemp -d)
	for ((r = 1; r < np; r++)); do
		timeout "$tmo" "$peerbin/gloo_coll" "${args[@]}" "$r" "$np" \
			"$store" >/dev/null &
		pids+=($!)
	done
	timeout "$tmo" "$peerbin/gloo_coll" "${args[@]}" 0 "$np" "$store" || st=$?
	wait "${pids[@]}" || st=$?
	rm -rf "$store"
	return $st
}

# perftest's server, then its client: the row of size S, column COL;
# three tries (a slow VM may not have the server listening after 1 s)
perftest() {
	local tool=$1 s=$2 n=$3 col=$4 srv v try port
	for try in 1 2 3; do
		port=$((18515 + try))
		timeout 120 "$tool" -F -d "$dev" -x "$gid" -s "$s" -n "$n" \
			-p "$port" >/dev/null 2>&1 &
		srv=$!
		sleep $((try * 2))
		v=$(timeout 120 "$tool" -F -d "$dev" -x "$gid" -s "$s" \
			-n "$n" -p "$port" "${OHC_VM_IP:-127.0.0.1}" 2>/dev/null |
			awk -v s="$s" -v c="$col" '$1 == s { print $c }')
		kill "$srv" 2>/dev/null || true
		wait "$srv" 2>/dev/null || true
		[ -z "$v" ] || break
	done
	echo "$v"
}

# p2p: HcclSend/HcclRecv against ib_write_lat and ib_write_bw (-R), the
# best of P2P_REPS (2) alternating runs of each
p2p_reps=${P2P_REPS:-2}
p2p() {
	local s n r ib ohc pb=$build/bench/ohc_verbs_p2p_bench
	echo "== point to point on $dev: perftest vs HcclSend/HcclRecv =="
	echo "$dev $(uname -r) ${OHC_VM_MODE:-host}" >"$out/rdma"
	: >"$out/p2p.lat"
	: >"$out/p2p.bw"
	for s in 8 1024 65536; do
		ib="" ohc=""
		for ((r = 0; r < p2p_reps; r++)); do
			ib=$(pick min "$ib" "$(perftest ib_write_lat "$s" 100 6)")
			ohc=$(pick min "$ohc" "$(HCCL_INTRA_ROCE_ENABLE=1 \
				timeout 120 "$pb" "$s" "$s" 100 5 lat |
				awk -v s="$s" '$1 == s { print $3 }')")
		done
		echo "$s ${ib:--} ${ohc:--}" | tee -a "$out/p2p.lat"
	done
	for ((s = 65536; s <= 1048576; s *= 4)); do
		n=$(((8 << 20) / s))
		[ "$n" -ge 8 ] || n=8
		ib="" ohc=""
		for ((r = 0; r < p2p_reps; r++)); do
			ib=$(pick max "$ib" "$(perftest ib_write_bw "$s" "$n" 4)")
			ohc=$(pick max "$ohc" "$(HCCL_INTRA_ROCE_ENABLE=1 \
				timeout 120 "$pb" "$s" "$s" "$n" 3 |
				awk -v s="$s" '$1 == s { print $3 }')")
		done
		echo "$s ${ib:--} ${ohc:--}" | tee -a "$out/p2p.bw"
	done
	: >"$out/p2p.wake"
}

# wake: what a 1 KiB message costs when the ranks sleep in their waits,
# for bench/sim_validate.sh -x (p2p.wake, "RANKS MODE US"; "cpus" holds
# nproc): xchg = one step of every rank exchanging with rank + N/2 at
# once (HcclBatchSendRecv, as a step of recursive doubling), at 2 ranks
# (they spin) and at each even rank count of the run (more ranks than
# CPUs sleep, core/wait.c); xchg1m = the 2-rank step at 1 MiB; lat-sleep = the 2-rank ping-pong's half round trip
# with OPENHCCL_SPIN_US=0 (a wake-up per message, a CPU each). One line
# per call (each round of runs calls it): the best 5-message window of 3.
wake() {
	local np pb=$build/bench/ohc_verbs_p2p_bench
	nproc >"$out/cpus"
	echo "== 1 KiB exchange steps on $dev (p2p.wake) =="
	for np in $(printf '%s\n' 2 $nps | sort -nu); do
		[ $((np % 2)) = 0 ] || continue
		# pair 0's step, and the slowest rank's (xchg-slowest)
		HCCL_INTRA_ROCE_ENABLE=1 OHC_BENCH_RANKS=$np timeout 300 "$pb" \
			1024 1024 5 5 xchg 3 | awk -v np="$np" '$1 == 1024 {
			print np, "xchg", $3; if ($6 != "") print np,
			"xchg-slowest", $6 + 0 }' | tee -a "$out/p2p.wake"
	done
	# the 2-rank exchange step at 1 MiB: what a collective's step sees
	# of the bandwidth (both ranks send and receive at once; with
	# pulled fragments a one-way stream has both CPUs to itself)
	HCCL_INTRA_ROCE_ENABLE=1 OHC_BENCH_RANKS=2 timeout 300 "$pb" \
		1048576 1048576 3 1 xchg 2 | awk '$1 == 1048576 {
		print 2, "xchg1m", $3 }' | tee -a "$out/p2p.wake"
	echo "2 lat-sleep $(HCCL_INTRA_ROCE_ENABLE=1 OPENHCCL_SPIN_US=0 \
		timeout 120 "$pb" 1024 1024 5 5 lat 3 |
		awk '$1 == 1024 { print $3 }')" | tee -a "$out/p2p.wake"
}

# pick min|max A B: the better of two numbers, either may be empty
pick() {
	awk -v f="$1" -v a="$2" -v b="$3" 'BEGIN {
		if (a == "") { print b; exit } if (b == "") { print a; exit }
		print ((f == "min") == (a + 0 < b + 0)) ? a : b }'
}

p2p_table() {
	$py bench/analysis.py p2p "$out"
}

# -R: a peer that cannot do one 1 KiB AllReduce within 120 s is skipped,
# its reason repeated under every table (a hang costs minutes in TCG)
preflight() {
	local impl raw err st
	for impl in $peers; do
		raw=$out/pre.$impl
		err=$out/pre.$impl.err
		st=0
		echo "== preflight: $(label "$impl") 1 KiB allreduce on $dev =="
		(args=(allreduce 1024 1024 2 1 0); tmo=120; minB=1024 maxB=1024
		 iters=1 warmup=0 run_rxe "$impl" allreduce 2) \
			>"$raw" 2>"$err" || st=$?
		cat "$raw" "$err"
		[ "$st" = 0 ] || ohc_bench_why "$st" "$err" "$raw" >"$out/skip.$impl"
	done
}

impls="ohc $peers"
[ "$runs" = 1 ] && [ "$rxe" = 1 ] && p2p
[ "$runs" = 1 ] && [ "$rxe" = 1 ] && preflight
# the runs: rep outermost, so a size's best of REPS samples minutes of
# the run, not one burst of another load on the host (-R: each round
# times p2p.wake's exchange steps again, beside its collectives)
[ "$runs" = 1 ] && for ((rep = 1; rep <= reps; rep++)); do
	[ "$rxe" = 1 ] && wake
	for np in $nps; do
		for op in $ops; do
			for impl in $impls; do
				raw=$out/raw.$impl.$op.$np.$rep
				err=$out/err.$impl.$op.$np.$rep
				if [ -e "$out/skip.$impl" ]; then
					: >"$raw"
					cp "$out/skip.$impl" "$out/fail.$impl.$op.$np"
					continue
				fi
				echo "== $(label "$impl") $op -np $np (run $rep) =="
				st=0
				run "$impl" "$op" "$np" 2>"$err" | tee "$raw" ||
					st=$?
				cat "$err" >&2
				[ "$st" = 0 ] && continue
				echo "compare.sh: $(label "$impl") $op -np $np failed" >&2
				ohc_bench_why "$st" "$err" "$raw" >"$out/fail.$impl.$op.$np"
			done
		done
	done
done
# bytes us busbw check per size: the best run, failed if any
[ "$runs" = 1 ] && for np in $nps; do
	for op in $ops; do
		for impl in $impls; do
			$py bench/analysis.py best "$out"/raw."$impl.$op.$np".* \
				>"$out/$impl.$op.$np"
		done
	done
done

# labelled IMPLS...: IMPL=LABEL arguments for bench/analysis.py
labelled() {
	local impl
	for impl in "$@"; do
		echo "$impl=$(label "$impl")"
	done
}

# table OP NP: one markdown table over every implementation that ran,
# with the failed runs' reasons under it
table() {
	local names
	mapfile -t names < <(labelled $impls)
	$py bench/analysis.py table "$out" "$1" "$2" "${names[@]}"
}

# summary: geometric mean and minimum of the busbw ratio at >= sumb bytes
sumb=$((rxe ? 65536 : 1048576))
summary() {
	local names
	mapfile -t names < <(labelled $peers)
	$py bench/analysis.py summary "$out" "$sumb" "$nps" "$ops" "${names[@]}"
}

{
	echo "# OpenHCCL vs peers on $(hostname) ($(nproc) cores), $(date -u +%F)"
	echo
	echo "fp32, sum, root 0, $iters iterations after $warmup warm-ups," \
		"best of $reps interleaved runs per size;" \
		"busbw in GB/s (nccl-tests factors), time in us per call."
	if [ "$rxe" = 1 ]; then
		read -r rdev rkern rmode <"$out/rdma" || true
		echo "Every rank on $rdev (rxe, loopback in one device;" \
			"kernel $rkern, $rmode)." \
			"OpenHCCL: HCCL_INTRA_ROCE_ENABLE=1. Open MPI: pml ucx," \
			"UCX_TLS=${OHC_UCX_TLS:-rc_verbs,ud_verbs,self} on $rdev:1" \
			"(Debian's btl openib has only the udcm CPC, which" \
			"cannot connect over RoCE). Gloo: ibverbs transport" \
			"(bound-buffer algorithms: AllreduceRing, AllgatherRing," \
			"BroadcastOneToAll, ReduceScatterHalvingDoubling)."
		echo "Software emulation (TCG): only the ratios mean anything."
	else
		echo "Open MPI: btl vader,self. MPICH: default. Gloo: TCP loopback."
	fi
	[ "$touch" = 1 ] && echo "Fresh inputs (-F): each implementation" \
		"copies its input in again before each call, timed."
	echo "Ratios > 1: OpenHCCL faster. A shared machine makes this noisy."
	echo
	summary
	[ "$rxe" = 1 ] && p2p_table
	for np in $nps; do for op in $ops; do table "$op" "$np"; done; done
} >"$md"
echo
cat "$md"

[ "$plot" = 1 ] || exit 0
for np in $nps; do
	cmds="set terminal png size 1500,900 noenhanced; set output '$build/$tag-np$np.png';"
	cmds+="set multiplot layout 2,3 title 'busbw (GB/s) vs bytes, $np ranks';"
	cmds+="set logscale x 2; set logscale y 10; set format x '%.0s%cB'; set format y '%g'; set key top left;"
	cmds+="set datafile missing '-';"
	for op in $ops; do
		cmds+="set title '$op'; plot"
		sep=""
		for impl in $impls; do
			f=$out/$impl.$op.$np
			[ -s "$f" ] || continue
			cmds+="$sep '$f' using 1:3 with linespoints title '$(label "$impl")'"
			sep=","
		done
		cmds+=";"
	done
	gnuplot -e "$cmds" && echo "plot: $build/$tag-np$np.png"
done
