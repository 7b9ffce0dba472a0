#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The scaling matrix in one command: OpenHCCL's hccl_test tools beside Open
# MPI (bench/peers/mpi_coll.c, pml ob1, btl vader,self) at each rank count
# and size, fp32 sum, root 0, each pair of runs taking turns (the order
# flips every round), REPS rounds; the machine's copy limit and exchange
# floor measured in the same run (ohc_membw_bench -x: memcpy by 1 and N
# threads at once; a cache line handed between two CPUs). Writes to
# OUT (build/bench/scaling, -L: build/bench/scaling-loaded): scaling.md (a
# table per op: rows sizes, columns rank counts, cells Open MPI's median
# time / OpenHCCL's, > 1: OpenHCCL faster; the largest sizes' busbw against
# the copy limit; the times), scaling.svg (the ratio against the size, a
# line per rank count, a panel per op), meta, membw, runs.log, the
# tools' own output (raw/IMPL.OP.NP.ROUND, stderr in .err) and diag.txt
# (an AllReduce run per rank count logging at INFO: rank 0's CPU count,
# wait mode and each size's algorithm; the logs in diag/). A failed run
# is named under its op's tables with its exit status and first errors.
# The numbers are bench/analysis.py's (scaling, scaling-svg).
#
# Here (Debian): installs what it misses (ci/deps.sh bench), builds Release
# in BUILD_DIR (build/bench) and runs mpirun.openmpi, or the relocatable
# bundle's run.sh with -M. --prepare DIR makes a folder that runs on a
# machine with nothing installed (the 16-core device: bench/README.md):
# the tools, libraries, ohc_membw_bench, the Open MPI bundle, the peer,
# this script; there `bash DIR/bench/scaling.sh [options]` runs from it.
#
# usage: bench/scaling.sh [-n "2 4 8 16"] [-b 8] [-e 64M] [-f 2]
#                         [-o "OPS"] [-r REPS] [-t SECONDS] [-L] [-F]
#                         [-M DIR]
#        bench/scaling.sh --prepare DIR
#        bench/scaling.sh --report OUTDIR
#   -n  rank counts (2 4 8 16)       -b/-e  sizes, K/M/G suffixes (8, 64M)
#   -f  size factor, an integer >= 2 (2)
#   -o  ops (allreduce allgather reduce_scatter broadcast alltoall; also
#       reduce)                      -r  rounds of both (REPS, 2)
#   -t  time budget: no run starts after SECONDS (0: none); the tables
#       say how many runs were left out
#   -L  loaded: one busy process per online CPU the whole time, stopped
#       at the end (the output says so)
#   -F  fresh inputs: both write their input again (a copy, timed) before
#       each call, as an application's data is fresh from the CPU
#       (bench/compare.sh -F; the output says so)
#   -M  Open MPI from the bundle in DIR (DIR/run.sh, as make-bundle.sh
#       makes it) instead of mpirun.openmpi; prepared folders use theirs
#   --prepare DIR  build, then make DIR (under 64 MiB) and stop
#   --report OUTDIR  the tables and plot again from OUTDIR's runs
# ITERS (20) and WARMUP (5): per size; RUN_TIMEOUT (600): seconds per run;
# MEMBW_MIB (64) and MEMBW_PASSES (4): ohc_membw_bench's buffers; OUT;
# BUILD_DIR (build/bench); OMPI_BUNDLE_SRC (../shared/tools/ompi-bundle):
# make-bundle.sh's folder, for --prepare.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
top=$(dirname "$here")
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
me=scaling.sh

usage() { sed -n '3,/^set -e/p' "$here/scaling.sh" | sed '$d;s/^# \{0,1\}//' >&2; }
die() { echo "$me: $*" >&2; exit 2; }

nps="2 4 8 16"
minb=8 maxb=64M factor=2
ops="allreduce allgather reduce_scatter broadcast alltoall"
reps=${REPS:-2} budget=0 loaded=0 fresh=0 bundle="" prepare="" report=""
while [ $# -gt 0 ]; do
	case $1 in
	-n | -b | -e | -f | -o | -r | -t | -M | --prepare | --report)
		[ $# -ge 2 ] || die "$1 needs a value (-h: usage)"
		case $1 in
		-n) nps=$2 ;; -b) minb=$2 ;; -e) maxb=$2 ;; -f) factor=$2 ;;
		-o) ops=$2 ;; -r) reps=$2 ;; -t) budget=$2 ;; -M) bundle=$2 ;;
		--prepare) prepare=$2 ;; --report) report=$2 ;;
		esac
		shift 2 ;;
	-L) loaded=1; shift ;;
	-F) fresh=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage; die "unknown argument '$1'" ;;
	esac
done

# Debian's python3 where there is one (the pyenv python3 on PATH may be
# another); a prepared folder's machine has whichever it has
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3 || true)
tables() { # OUTDIR: scaling.md and scaling.svg from its runs
	if [ -z "$py" ]; then
		echo "$me: no python3 here: the runs are in $1; make the tables" \
			"elsewhere with: bash bench/scaling.sh --report DIR" >&2
		return 1
	fi
	"$py" "$here/analysis.py" scaling "$1" >"$1/scaling.md"
	"$py" "$here/analysis.py" scaling-svg "$1" >"$1/scaling.svg"
}
if [ -n "$report" ]; then
	[ -d "$report/raw" ] || die "--report: no runs in $report (no raw/)"
	tables "$report"
	cat "$report/scaling.md"
	echo
	echo "table: $report/scaling.md  plot: $report/scaling.svg"
	exit 0
fi

int() { # NAME VALUE MIN
	if ! [[ $2 =~ ^[0-9]+$ ]] || [ "$2" -lt "$3" ]; then
		die "$1 '$2' is not an integer >= $3"
	fi
}
for np in $nps; do int "rank count" "$np" 1; done
[ -n "${nps// /}" ] || die "-n: no rank counts"
int "-r (REPS)" "$reps" 1
int "-t" "$budget" 0
int "-f" "$factor" 2
iters=${ITERS:-20} warmup=${WARMUP:-5} run_tmo=${RUN_TIMEOUT:-600}
int ITERS "$iters" 1
int WARMUP "$warmup" 0
int RUN_TIMEOUT "$run_tmo" 1
membw_mib=${MEMBW_MIB:-64} membw_passes=${MEMBW_PASSES:-4}
int MEMBW_MIB "$membw_mib" 1
int MEMBW_PASSES "$membw_passes" 1
minB=$(numfmt --from=iec "$minb" 2>/dev/null) || die "-b: bad size '$minb'"
maxB=$(numfmt --from=iec "$maxb" 2>/dev/null) || die "-e: bad size '$maxb'"
[ "$minB" -ge 1 ] || die "-b: sizes start at 1 byte"
[ "$minB" -le "$maxB" ] || die "sizes: -b $minb is above -e $maxb"
[ -n "${ops// /}" ] || die "-o: no ops"
for op in $ops; do
	case $op in
	allreduce | allgather | reduce_scatter | broadcast | reduce | alltoall) ;;
	*) die "-o: unknown op '$op' (allreduce allgather reduce_scatter broadcast reduce alltoall)" ;;
	esac
done
[ -z "$bundle" ] || [ -x "$bundle/run.sh" ] || die "-M: no run.sh in '$bundle'"

# ---------------------------------------------------------------- build
# A prepared folder (--prepare) holds PREPARED beside bench/; else this is
# the source tree and everything is built here.
prepared=0
[ -e "$top/PREPARED" ] && prepared=1
[ -z "$prepare" ] || [ "$prepared" = 0 ] || die "--prepare: run it from the source tree"
build=${BUILD_DIR:-build/bench}
if [ "$prepared" = 0 ]; then
	cd "$top"
	bash ci/deps.sh bench
	echo "== build: OpenHCCL Release in $build, Open MPI's peer =="
	cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DOHC_BUILD_TESTS=OFF \
		>"$build.cmake.log" 2>&1 || { cat "$build.cmake.log"; exit 1; }
	cmake --build "$build" -j"$(nproc)" >"$build.build.log" 2>&1 ||
		{ tail -n 30 "$build.build.log"; exit 1; }
	mkdir -p "$build/peers"
	mpicc.openmpi -O2 -o "$build/peers/mpi_coll_ompi" bench/peers/mpi_coll.c
	build=$(cd "$build" && pwd -P)
fi

# prepare DIR: the folder for a machine with nothing installed. bin/: the
# tools as installed (run path $ORIGIN/../lib64), ohc_membw_bench,
# hccl_simulate, the peer (run path $ORIGIN/../ompi/lib); lib64/: our
# libraries and the non-glibc ones they need (ldd); ompi/: the
# relocatable Open MPI bundle; bench/: this script, algo_sweep.sh,
# lib.sh, analysis.py; PREPARED: what was built.
prepare() {
	local d inst op f so path src
	src=${OMPI_BUNDLE_SRC:-$top/../shared/tools/ompi-bundle}
	[ -e "$src/make-bundle.sh" ] || die "--prepare: no $src/make-bundle.sh (set OMPI_BUNDLE_SRC)"
	mkdir -p "$1"
	d=$(cd "$1" && pwd -P)
	if [ "$d" = / ] || [ "$d" = "$HOME" ] || [ -e "$d/.git" ] ||
		[ -e "$d/CMakeLists.txt" ]; then
		die "--prepare: not into $d (a folder of its own, please)"
	fi
	rm -rf "${d:?}/bin" "${d:?}/lib64" "${d:?}/bench" "${d:?}/ompi" "${d:?}/PREPARED"
	mkdir -p "$d/bin" "$d/lib64" "$d/bench"
	inst=$(mktemp -d)
	cmake --install "$build" --prefix "$inst" >/dev/null
	for op in allreduce allgather reduce_scatter broadcast reduce alltoall; do
		cp "$inst/bin/$(ohc_bench_tool_of "$op")" "$d/bin/"
	done
	cp -a "$inst"/lib64/libhccl.so* "$inst"/lib64/libascendcl.so "$d/lib64/"
	rm -rf "$inst"
	cp "$build/bench/ohc_membw_bench" "$d/bin/"
	cp "$(find "$build" -name hccl_simulate -type f | head -1)" "$d/bin/"
	echo "== the Open MPI bundle ($src/make-bundle.sh) =="
	bash "$src/make-bundle.sh" "$d/ompi" | tail -n 2
	# shellcheck disable=SC2016 # $ORIGIN is the loader's
	mpicc.openmpi -O2 -o "$d/bin/mpi_coll_ompi" bench/peers/mpi_coll.c \
		-Wl,-rpath,'$ORIGIN/../ompi/lib'
	# what our binaries load beyond glibc and the bundle, by soname
	for f in "$d"/bin/* "$d"/lib64/*.so*; do
		ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }'
	done | sort -u | while read -r so path; do
		[[ $so =~ ^(libc|libm|libdl|libpthread|librt|libresolv|libutil|ld-linux-x86-64)\.so ]] &&
			continue
		[ -e "$d/lib64/$so" ] || [ -e "$d/ompi/lib/$so" ] ||
			[ -e "$d/ompi/lib/compat/$so" ] || cp -L "$path" "$d/lib64/$so"
	done
	cp "$here/scaling.sh" "$here/algo_sweep.sh" "$here/lib.sh" \
		"$here/analysis.py" "$d/bench/"
	{
		echo "openhccl=$("$build/tools/all_reduce_test" --version | awk '{print $NF}')"
		echo "commit=$(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$top" diff --quiet HEAD 2>/dev/null || echo +changes)"
		echo "ompi=$(mpirun.openmpi --version 2>/dev/null | head -1 | awk '{print $NF}')"
		echo "prepared=$(uname -n) $(date -u +%FT%TZ)"
	} >"$d/PREPARED"
	echo "== prepared $d: $(du -sh "$d" | cut -f1) =="
	ls "$d" "$d/bin" "$d/lib64"
	[ "$(du -sm "$d" | cut -f1)" -lt 64 ] ||
		echo "$me: warning: $d is 64 MiB or more (the device carries at most 64 MiB)" >&2
	echo "run there: bash $(basename "$d")/bench/scaling.sh [options]  (OUT=... for the output)"
}
if [ -n "$prepare" ]; then
	prepare "$prepare"
	exit 0
fi

# ---------------------------------------------------------------- setup
if [ "$prepared" = 1 ]; then
	tooldir=$top/bin membw=$top/bin/ohc_membw_bench
	peer=$top/bin/mpi_coll_ompi
	bundle=$top/ompi
	ldenv=(env "LD_LIBRARY_PATH=$(ohc_bench_prepared_ldpath "$top")")
	out=${OUT:-$top/out}
else
	tooldir=$build/tools membw=$build/bench/ohc_membw_bench
	peer=$build/peers/mpi_coll_ompi
	ldenv=()
	out=${OUT:-$build/scaling}
	[ -n "${OUT:-}" ] || [ "$loaded" = 0 ] || out=$build/scaling-loaded
fi
[ -z "$bundle" ] || bundle=$(cd "$bundle" && pwd -P)
mkdir -p "$out"
out=$(cd "$out" && pwd -P)
# only what this script writes: OUT may hold other things
rm -rf "$out/raw" "$out"/fail.* "$out/meta" "$out/membw" "$out/runs.log" \
	"$out/scaling.md" "$out/scaling.svg"
mkdir -p "$out/raw"

# ---------------------------------------------------------------- runs
# Every run is a background child (exec'd timeout, its own process group)
# that the script waits for, so that Ctrl-C or TERM reaches the trap at
# once: it stops the run (timeout passes the signal to the whole group:
# the launcher and its ranks, or mpirun and its ranks) and the busy
# processes, and nothing is left behind.
child="" busy_pids=()
stop_all() {
	[ -z "$child" ] || { kill -TERM "$child" 2>/dev/null || true; wait "$child" 2>/dev/null || true; }
	child=""
	if [ ${#busy_pids[@]} -gt 0 ]; then
		kill -TERM "${busy_pids[@]}" 2>/dev/null || true
		wait "${busy_pids[@]}" 2>/dev/null || true
		busy_pids=()
	fi
}
trap stop_all EXIT
trap 'echo; echo "$me: interrupted, stopping the run" >&2; stop_all; exit 130' INT
trap 'stop_all; exit 143' TERM

# run_bg OUTFILE ERRFILE CMD...: CMD in the background, waited for; its
# status
run_bg() {
	local o=$1 e=$2 st=0
	shift 2
	"$@" </dev/null >"$o" 2>"$e" &
	child=$!
	wait "$child" || st=$?
	child=""
	return "$st"
}

# launch IMPL OP NP: replaces its (background) shell with the run
launch() {
	local impl=$1 op=$2 np=$3
	case $impl in
	ohc)
		exec "${ldenv[@]}" timeout -k 10 "$run_tmo" \
			"$tooldir/$(ohc_bench_tool_of "$op")" -np "$np" -b "$minB" \
			-e "$maxB" -f "$factor" -d fp32 -o sum -n "$iters" \
			-w "$warmup" --touch_input "$fresh" ;;
	ompi)
		if [ -n "$bundle" ]; then
			exec timeout -k 10 "$run_tmo" bash "$bundle/run.sh" "$np" \
				"$peer" "$op" "$minB" "$maxB" "$factor" "$iters" "$warmup"
		fi
		exec timeout -k 10 "$run_tmo" mpirun.openmpi --allow-run-as-root \
			--oversubscribe -np "$np" --mca pml ob1 --mca btl vader,self \
			--bind-to "${MPI_BIND:-core:overload-allowed}" \
			"$peer" "$op" "$minB" "$maxB" "$factor" "$iters" "$warmup" ;;
	esac
}

# the peer reads it (bench/peers/peer_common.h); ours takes --touch_input
export OHC_BENCH_TOUCH=$fresh

label() { case $1 in ohc) echo OpenHCCL ;; ompi) echo "Open MPI" ;; esac; }
now() { date +%s.%N; }

cpus=$(getconf _NPROCESSORS_ONLN)
busy=0
if [ "$loaded" = 1 ]; then
	busy=$cpus
	for ((i = 0; i < busy; i++)); do
		(while :; do :; done) &
		busy_pids+=($!)
	done
	echo "== loaded: $busy busy processes (${busy_pids[*]}) =="
fi

{
	[ "$prepared" = 1 ] && grep -v '^prepared=' "$top/PREPARED"
	if [ "$prepared" = 0 ]; then
		echo "openhccl=$("$tooldir/all_reduce_test" --version | awk '{print $NF}')"
		echo "commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo +changes)"
		echo "ompi=$(mpirun.openmpi --version 2>/dev/null | head -1 | awk '{print $NF}')"
	fi
	if [ -n "$bundle" ]; then
		echo "mpirun=the bundle's run.sh: pml ob1, btl vader,self, bind ${MPI_BIND:-core:overload-allowed}"
	else
		echo "mpirun=mpirun.openmpi: pml ob1, btl vader,self, bind ${MPI_BIND:-core:overload-allowed}"
	fi
	echo "cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
	echo "cpus=$cpus"
	cg=$(awk -F: '$1 == "0" { print $3 }' /proc/self/cgroup 2>/dev/null || true)
	echo "cgroup_cpu_max=$(cat "/sys/fs/cgroup$cg/cpu.max" 2>/dev/null || echo none)"
	echo "kernel=$(uname -r)"
	echo "host=$(uname -n)"
	echo "date=$(date -u +%FT%TZ)"
	echo "nps=$nps"
	echo "ops=$ops"
	echo "sizes=$minB $maxB $factor"
	echo "reps=$reps"
	echo "iters=$iters"
	echo "warmup=$warmup"
	echo "busy=$busy"
	echo "fresh=$fresh"
} >"$out/meta"

# shellcheck disable=SC2086 # the rank counts are words
threads=$(printf '%s\n' 1 $nps | sort -nu | paste -sd' ')
# The exchange floor only unloaded: beside busy processes the two spinning
# threads take turns with them a time slice at a time.
xfloor=-x
[ "$loaded" = 1 ] && xfloor=
echo "== copy limit${xfloor:+ and exchange floor}: ohc_membw_bench $xfloor -s $membw_mib -p $membw_passes $threads =="
# shellcheck disable=SC2086 # the thread counts are words; xfloor a flag or none
run_bg "$out/membw" "$out/membw.err" timeout -k 10 "$run_tmo" "$membw" \
	$xfloor -s "$membw_mib" -p "$membw_passes" $threads ||
	echo "$me: ohc_membw_bench failed: $(ohc_bench_why $? "$out/membw.err" "$out/membw")" >&2
cat "$out/membw"

# budget_spent: whether -t's seconds have passed since the runs began
budget_spent() {
	[ "$budget" -gt 0 ] && awk -v a="$(now)" -v b="$t_start" \
		-v t="$budget" 'BEGIN { exit !(a - b >= t) }'
}

nnp=$(wc -w <<<"$nps") nops=$(wc -w <<<"$ops")
total=$((reps * nnp * nops * 2)) k=0 cut=0
t_start=$(now)
for ((rep = 1; rep <= reps; rep++)); do
	# the order of the pair flips every round
	order="ohc ompi"
	[ $((rep % 2)) = 0 ] && order="ompi ohc"
	for np in $nps; do
		for op in $ops; do
			for impl in $order; do
				k=$((k + 1))
				if budget_spent; then
					cut=$((cut + 1))
					continue
				fi
				raw=$out/raw/$impl.$op.$np.$rep
				t0=$(now)
				st=0
				run_bg "$raw" "$raw.err" launch "$impl" "$op" "$np" || st=$?
				dt=$(awk -v a="$(now)" -v b="$t0" 'BEGIN { printf "%.2f", a - b }')
				echo "$impl $op $np $rep $st $dt" >>"$out/runs.log"
				printf '[%d/%d] %-8s %-14s -np %-3s round %d/%d: %2d sizes, %6.1f s%s\n' \
					"$k" "$total" "$(label "$impl")" "$op" "$np" "$rep" "$reps" \
					"$(grep -c '^[0-9]' "$raw" || true)" "$dt" \
					"$([ "$st" = 0 ] || echo ", FAILED (exit $st)")"
				[ "$st" = 0 ] ||
					ohc_bench_why "$st" "$raw.err" "$raw" >"$out/fail.$impl.$op.$np.$rep"
			done
		done
	done
done
# What the library made of the machine, for a cell that needs explaining
# (issue 24: which algorithm, which wait): AllReduce at 4 KiB-2 MiB once
# more per rank count, logging at INFO; diag.txt keeps rank 0's view (its
# CPU count and wait mode, each size's algorithm and its runner-up) and
# the times (diag/allreduce.NP, its log in .log).
mkdir -p "$out/diag"
: >"$out/diag.txt"
for np in $nps; do
	if budget_spent; then
		echo "(the -t budget was spent: no diagnosis from $np ranks on)" >>"$out/diag.txt"
		break
	fi
	d=$out/diag/allreduce.$np
	run_bg "$d" "$d.log" env OPENHCCL_DEBUG=INFO "${ldenv[@]}" \
		timeout -k 10 "$run_tmo" "$tooldir/all_reduce_test" -np "$np" \
		-b 4K -e 2M -f 8 -d fp32 -o sum -n "$iters" -w "$warmup" ||
		echo "$np ranks: the diagnosis run failed (exit $?)" >>"$out/diag.txt"
	{
		echo "== $np ranks =="
		grep ' rank 0[]/ ]' "$d.log" | grep -E 'ready|shm rings|allreduce of' |
			sed 's/^.*\] INFO //' | sort -u
		grep -E '^[0-9]+ +[|] ' "$d" || true
	} >>"$out/diag.txt"
done
echo "== diagnosis (rank 0's view, each size's algorithm): $out/diag.txt =="
stop_all
[ "$cut" = 0 ] || echo "cut=$cut of $total runs not started: the -t $budget s budget was spent" >>"$out/meta"
echo "== $((total - cut)) runs in $(awk -v a="$(now)" -v b="$t_start" 'BEGIN { printf "%.0f", a - b }') s$([ "$cut" = 0 ] || echo ", $cut left out by -t $budget") =="

tables "$out" || exit 0
sed -n '1,/^## /p' "$out/scaling.md" | sed '$d'
for f in "$out"/fail.*; do
	[ -e "$f" ] || continue
	IFS=. read -r _ impl op np rep <<<"${f##*/}"
	echo "FAILED: $(label "$impl") $op -np $np round $rep: $(cat "$f")"
done
echo "tables: $out/scaling.md  plot: $out/scaling.svg  runs: $out/raw/"
