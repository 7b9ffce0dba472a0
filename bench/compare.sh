#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# OpenHCCL's hccl_test tools beside the peers on this machine, over the same
# sizes and rank counts (fp32, sum, root 0): Open MPI (--mca btl vader,self),
# MPICH (its default shared-memory path) and Gloo (TCP over loopback: the
# Debian build has no shared-memory transport). Missing Debian packages are
# installed. Writes a markdown table per collective with times, busbw and
# busbw ratios (OpenHCCL / peer) to build/bench/compare.md and a busbw plot
# per rank count to build/bench/compare-np<N>.png.
#
# usage: bench/compare.sh [-n "2 4 8"] [-b MIN] [-e MAX] [-o "OPS"]
#                         [-p "ompi mpich gloo"] [-r REPS] [-O OUT.md] [-P] [-T]
#   -n  rank counts (2)        -b/-e  sizes, K/M/G suffixes (8, 64M)
#   -o  collectives (allreduce allgather reduce_scatter broadcast reduce
#       alltoall)              -p  peers (ompi mpich gloo)
#   -r  runs of each implementation, interleaved; the table keeps each
#       size's best time (1; take 3 or more on a busy machine)
#   -O  markdown output (build/bench/compare.md)   -P  no plot
#   -T  no runs: tables and plot again from the last run's data
# ITERS (20) and WARMUP (5) set the iterations; BUILD_DIR (build/bench).
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
nps=2
minb=8
maxb=64M
ops="allreduce allgather reduce_scatter broadcast reduce alltoall"
peers="ompi mpich gloo"
plot=1
reps=1
runs=1
iters=${ITERS:-20}
warmup=${WARMUP:-5}
build=${BUILD_DIR:-build/bench}
md=""
while getopts "n:b:e:o:p:r:O:PTh" c; do
	case $c in
	n) nps=$OPTARG ;;
	b) minb=$OPTARG ;;
	e) maxb=$OPTARG ;;
	o) ops=$OPTARG ;;
	p) peers=$OPTARG ;;
	r) reps=$OPTARG ;;
	O) md=$OPTARG ;;
	P) plot=0 ;;
	T) runs=0 ;;
	*) sed -n '3,/^set -e/p' "$0" | sed '$d;s/^# \{0,1\}//' >&2; exit 2 ;;
	esac
done
md=${md:-$build/compare.md}
has() { [[ " $1 " == *" $2 "* ]]; }

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
[ "$runs" = 1 ] && bash ci/deps.sh bench
want=()
has "$peers" mpich && want+=(mpich libmpich-dev)
has "$peers" gloo && want+=(libgloo-dev g++)
[ "$plot" = 1 ] && want+=(gnuplot-nox)
[ ${#want[@]} -eq 0 ] || install_missing "${want[@]}"

if [ "$runs" = 1 ]; then
cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=Release -DOHC_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j"$(nproc)" >/dev/null
peerbin=$build/peers
mkdir -p "$peerbin"
has "$peers" ompi &&
	mpicc.openmpi -O2 -o "$peerbin/mpi_coll_ompi" bench/peers/mpi_coll.c
has "$peers" mpich &&
	mpicc.mpich -O2 -o "$peerbin/mpi_coll_mpich" bench/peers/mpi_coll.c
has "$peers" gloo &&
	g++ -O2 -std=c++17 -o "$peerbin/gloo_coll" bench/peers/gloo_coll.cc \
		-lgloo -pthread
fi

minB=$(numfmt --from=iec "$minb")
maxB=$(numfmt --from=iec "$maxb")
out=$build/compare
if [ "$runs" = 1 ]; then
	rm -rf "$out"
	mkdir -p "$out"
fi
tool_of() {
	case $1 in
	allreduce) echo all_reduce_test ;;
	allgather) echo all_gather_test ;;
	reduce_scatter) echo reduce_scatter_test ;;
	broadcast) echo broadcast_test ;;
	reduce) echo reduce_test ;;
	alltoall) echo alltoall_test ;;
	*) echo "compare.sh: unknown collective $1" >&2; exit 2 ;;
	esac
}
label() {
	case $1 in
	ohc) echo OpenHCCL ;; ompi) echo "Open MPI" ;;
	mpich) echo MPICH ;; gloo) echo Gloo ;;
	esac
}

# run IMPL OP NP: the hccl_test-style rows of one implementation
run() {
	local impl=$1 op=$2 np=$3 args=("$op" "$minB" "$maxB" 2 "$iters" "$warmup")
	case $impl in
	ohc)
		timeout 900 "$build/tools/$(tool_of "$op")" -np "$np" -b "$minB" -e "$maxB" \
			-f 2 -d fp32 -o sum -n "$iters" -w "$warmup" ;;
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

impls="ohc $peers"
[ "$runs" = 1 ] && for np in $nps; do
	for op in $ops; do
		for ((rep = 1; rep <= reps; rep++)); do
			for impl in $impls; do
				raw=$out/raw.$impl.$op.$np.$rep
				echo "== $(label "$impl") $op -np $np (run $rep) =="
				run "$impl" "$op" "$np" | tee "$raw" ||
					echo "compare.sh: $(label "$impl") $op -np $np failed" >&2
			done
		done
		# bytes us busbw check per size: the best run, failed if any
		for impl in $impls; do
			awk -F'|' '$1 ~ /^[0-9]+ *$/ { gsub(/ /, "")
				b = $1; if (!(b in us) || $2 + 0 < us[b] + 0) {
					us[b] = $2; bw[b] = $5 }
				if (!(b in ck) || $4 == "failed") ck[b] = $4 }
				END { for (b in us) print b, us[b], bw[b], ck[b] }' \
				"$out"/raw."$impl.$op.$np".* | sort -n >"$out/$impl.$op.$np"
		done
	done
done

# table OP NP: one markdown table over every implementation that ran
table() {
	local op=$1 np=$2 files=() names=() impl
	[ -e "$out/ohc.$op.$np" ] || return 0
	for impl in $impls; do
		[ -e "$out/$impl.$op.$np" ] || continue
		files+=("$out/$impl.$op.$np")
		names+=("$(label "$impl")")
	done
	echo
	echo "### $op, $np ranks"
	echo
	awk -v names="$(IFS=,; echo "${names[*]}")" '
	BEGIN { n = split(names, nm, ",") }
	FNR == 1 { f++ }
	{ us[f, $1] = $2; bw[f, $1] = $3; ck[f, $1] = $4; if (!($1 in seen)) {
		seen[$1] = 1; sz[++ns] = $1 } }
	function cell(v) { return v == "" ? "-" : v }
	function ratio(a, b) {
		if (a == "" || b == "" || b + 0 <= 0) return "-"
		return sprintf("%.2fx", a / b)
	}
	END {
		h = "| bytes"; d = "|---:"
		for (i = 1; i <= n; i++) { h = h " | " nm[i] " us"; d = d "|---:" }
		for (i = 1; i <= n; i++) { h = h " | " nm[i] " busbw"; d = d "|---:" }
		# busbw ratio = time ratio (same bytes, same factor), from
		# the times: busbw is printed too coarsely for small sizes
		for (i = 2; i <= n; i++) { h = h " | OpenHCCL/" nm[i]; d = d "|---:" }
		print h " |"; print d "|"
		for (k = 1; k <= ns; k++) {
			s = sz[k]; line = "| " s
			for (i = 1; i <= n; i++) line = line " | " cell(us[i, s])
			for (i = 1; i <= n; i++) {
				c = cell(bw[i, s])
				if (ck[i, s] == "failed") c = c " (check failed)"
				line = line " | " c
			}
			for (i = 2; i <= n; i++)
				line = line " | " ratio(us[i, s], us[1, s])
			print line " |"
		}
	}' "${files[@]}"
}

# summary: geometric mean and minimum of the busbw ratio at >= 1 MiB
summary() {
	echo "| collective | ranks | peer | OpenHCCL/peer busbw, geomean >= 1 MiB | min >= 1 MiB |"
	echo "|---|---:|---|---:|---:|"
	local np op impl
	for np in $nps; do for op in $ops; do for impl in $peers; do
		[ -e "$out/ohc.$op.$np" ] && [ -e "$out/$impl.$op.$np" ] || continue
		join <(sort -k1,1 "$out/ohc.$op.$np") \
			<(sort -k1,1 "$out/$impl.$op.$np") |
			awk -v op="$op" -v np="$np" -v peer="$(label "$impl")" '
			$1 >= 1048576 && $2 > 0 && $5 > 0 { r = $5 / $2;
				l += log(r); n++; if (!n0++ || r < m) m = r }
			END { if (n) printf "| %s | %d | %s | %.2fx | %.2fx |\n",
				op, np, peer, exp(l / n), m }'
	done; done; done
}

{
	echo "# OpenHCCL vs peers on $(hostname) ($(nproc) cores), $(date -u +%F)"
	echo
	echo "fp32, sum, root 0, $iters iterations after $warmup warm-ups," \
		"best of $reps interleaved runs per size;" \
		"busbw in GB/s (nccl-tests factors), time in us per call."
	echo "Open MPI: btl vader,self. MPICH: default. Gloo: TCP loopback."
	echo "Ratios > 1: OpenHCCL faster. A shared machine makes this noisy."
	echo
	summary
	for np in $nps; do for op in $ops; do table "$op" "$np"; done; done
} >"$md"
echo
cat "$md"

[ "$plot" = 1 ] || exit 0
for np in $nps; do
	cmds="set terminal png size 1500,900 noenhanced; set output '$build/compare-np$np.png';"
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
	gnuplot -e "$cmds" && echo "plot: $build/compare-np$np.png"
done
