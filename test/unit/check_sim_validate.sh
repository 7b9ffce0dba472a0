#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/sim_validate.sh -x calibrates the simulator's rxe constants from a
# bench/compare.sh -R run's point-to-point rows: alpha = p2p.lat's 1 KiB
# HcclSend/Recv half round trip, the bandwidth = p2p.bw's best, the CPUs =
# the run's nproc (cpus), and for more ranks than CPUs the wake: p2p.wake's
# exchange step at a rank count N (the slowest rank's, xchg-slowest; -W
# pair0: pair 0's, xchg) minus the one at 2 ranks is wake x (N / CPUs)^2,
# one wake fitted over the run's rank counts (-E: each count its own),
# passed as --wake-us; HcclBarrier's steps instead where the run timed
# them (sim_validate.sh's own runs on shm). A made-up run with known
# rows must give those parameters, and each prediction must be what
# hccl_simulate prints for them by hand. On shm (a run of sim_validate.sh
# itself) alpha comes the same way from its rounds' probes.
# usage: check_sim_validate.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$2
sim=$build/tools/simulate/hccl_simulate
# shellcheck source-path=SCRIPTDIR source=check_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"
need "$sim" hccl_simulate

# validate DIR OPTIONS...: sim_validate.sh -x DIR OPTIONS, both streams
validate() {
	local dir=$1
	shift
	BUILD_DIR=$build bash "$src/bench/sim_validate.sh" -x "$dir" "$@" 2>&1
}
# hccl_rows FILE "BYTES US BW"...: an hccl_test output of those rows
hccl_rows() {
	local f=$1 r
	shift
	{
		echo "data_size(Bytes): | aveg_time(us): | alg_bandwidth(GB/s): | check_result:"
		for r; do
			# shellcheck disable=SC2086 # the row's three words
			printf '%-18s| %-15s| %-21s| success\n' $r
		done
	} >"$f"
}

printf '8 12 30\n1024 20 40\n65536 900 1000\n' >"$d/p2p.lat"
# 51.2 MB/s (2^20 bytes) = 0.05369 GB/s
printf '65536 50 40\n262144 55 51.2\n1048576 54 45\n' >"$d/p2p.bw"
echo 2 >"$d/cpus"
# two rounds: the best of each kind counts
printf '2 xchg 50\n4 xchg 450\n4 xchg-slowest 850\n8 xchg 1650\n8 xchg-slowest 2450\n2 lat-sleep 120\n2 xchg 60\n4 xchg 500\n4 xchg-slowest 900\n8 xchg-slowest 2500\n' >"$d/p2p.wake"
for np in 2 4 8; do
	hccl_rows "$d/raw.ohc.allgather.$np.1" "1024 1000.00 0.00100" \
		"65536 9000.00 0.00700"
done

st=0
out=$(validate "$d" -n "2 4 8" -o allgather) || st=$?
[ "$st" -le 1 ] || fail "sim_validate.sh exit $st"
grep -q "^alpha 40 us" <<<"$out" || fail "alpha is not p2p.lat's 1 KiB 40 us"
grep -q "^bandwidth 0.05369 GB/s" <<<"$out" || fail "bandwidth is not 51.2 MB/s"
grep -q "^cores 2:" <<<"$out" || fail "CPUs are not the run's 2"
# (850 - 50) = 2^2 w and (2450 - 50) = 4^2 w:
# w = (800 x 4 + 2400 x 16) / (16 + 256) = 152.94
grep -q "^wake 152.9 us x (4/2 " <<<"$out" ||
	fail "4 ranks on 2 CPUs: the fitted wake 152.9 us expected"
grep -q "^wake 152.9 us x (8/2 " <<<"$out" ||
	fail "8 ranks on 2 CPUs: the fitted wake 152.9 us expected"
! grep -q "x (2/2 " <<<"$out" || fail "2 ranks on 2 CPUs spin: no wake"
# -E: each count alone; -W pair0: pair 0's steps
check_wake() { # OPTIONS WAKE4 WAKE8
	local o st=0
	o=$(validate "$d" -n "4 8" -o allgather $1) || st=$?
	[ "$st" -le 1 ] || { out=$o; fail "sim_validate.sh $1: exit $st"; }
	grep -q "^wake $2 us x (4/2 " <<<"$o" && grep -q "^wake $3 us x (8/2 " <<<"$o" ||
		{ out=$o; fail "$1: wakes $2 and $3 us expected at 4 and 8 ranks"; }
}
check_wake "-E" 200 150           # (850 - 50) / 4, (2450 - 50) / 16
check_wake "-W pair0 -E" 100 100  # (450 - 50) / 4, (1650 - 50) / 16
check_wake "-W pair0" 100 100     # (400 x 4 + 1600 x 16) / 272
# alpha: the 2-rank exchange step instead when it is smaller (p2p.lat is
# timed once, the step every round)
mkdir "$d/x"
cp "$d"/p2p.* "$d"/cpus "$d"/raw.* "$d/x/"
echo "2 xchg 30" >>"$d/x/p2p.wake"
o=$(validate "$d/x" -n 2 -o allgather) || true
grep -q "^alpha 30 us: the 2-rank 1 KiB exchange step" <<<"$o" ||
	{ out=$o; fail "alpha is not the 2-rank exchange step's 30 us"; }

# the predictions: hccl_simulate's model with those constants
for np in 2 4 8; do
	wk=
	[ "$np" -gt 2 ] && wk=152.9
	{
		echo "x | y"
		echo "1024 | 1000.00 | 0 | success"
		echo "65536 | 9000.00 | 0 | success"
	} >"$d/m"
	for b in 1024 65536; do
		want=$("$sim" --measure "$d/m" --op allgather --ranks "$np" \
			--net rxe --alpha 40 --bw 0.05369 --cores 2 \
			--host-ranks "$np" ${wk:+--wake-us "$wk"} |
			awk -v b="$b" '$1 == b { print $4 }') || true
		got=$(awk -v np="$np" -v b="$b" '$1 == "allgather" &&
			$2 == np && $3 == b { print $6 }' <<<"$out")
		[ -n "$want" ] && [ "$got" = "$want" ] ||
			fail "$np ranks, $b bytes: predicted '$got', want '$want'"
	done
done
# each of the 2 steps at 4 ranks pays alpha and the 152.9 us wake x s^2
# (4 ranks on 2 CPUs: 4 x 152.9 = 611.6)
p4=$(awk '$1 == "allgather" && $2 == 4 && $3 == 1024 { print $6 }' <<<"$out")
awk -v p="$p4" 'BEGIN { exit !(p >= 2 * (40 + 611.6)) }' ||
	fail "4 ranks, 1 KiB: predicted $p4 us, below 2 x (40 + 611.6)"

# shm_pred RAW OP BYTES OPTIONS...: hccl_simulate's 2-rank shm prediction
# of BYTES for RAW's rows with alpha 0.31 and OPTIONS; predicted OP BYTES:
# sim_validate's, from its output in $o
shm_pred() {
	local raw=$1 op=$2 b=$3
	shift 3
	"$sim" --measure "$raw" --op "$op" --ranks 2 --net shm --alpha 0.31 \
		--cores "$(nproc)" "$@" | awk -v b="$b" '$1 == b { print $4 }'
}
predicted() {
	awk -v op="$1" -v b="$2" '$1 == op && $2 == 2 && $3 == b { print $6 }' <<<"$o"
}

# shm (an earlier run of sim_validate.sh itself: raw.OP.NP.REP): alpha is
# the best round's 1 KiB half round trip (p2p.lat, a line per round), or
# the 2-rank exchange step if smaller; the model is shm's with that alpha
mkdir "$d/shm"
printf '1024 - 0.8\n1024 - 0.31\n1024 - 0.75\n' >"$d/shm/p2p.lat"
printf '2 xchg 0.9\n2 xchg 0.5\n2 xchg 0.95\n' >"$d/shm/p2p.wake"
hccl_rows "$d/shm/raw.allgather.2.1" "1024 0.50 2.0"
o=$(validate "$d/shm" -n 2 -o allgather) || true
grep -q "^alpha 0.31 us: HcclSend/Recv latency at 1 KiB" <<<"$o" ||
	{ out=$o; fail "shm: alpha is not the best round's 0.31 us"; }
want=$(shm_pred "$d/shm/raw.allgather.2.1" allgather 1024) || true
got=$(predicted allgather 1024)
[ -n "$want" ] && [ "$got" = "$want" ] ||
	{ out=$o; fail "shm, 1 KiB: predicted '$got', want '$want'"; }

# shm with the run's copy rates (membw, one thread's memcpy GB/s a round):
# the best stands for the bandwidth, copy and reduction rates (a 4 MiB
# row, where they decide the prediction); -w keeps the bandwidth
mkdir "$d/shmbw"
cp "$d/shm/p2p.lat" "$d/shm/p2p.wake" "$d/shmbw/"
printf '9.5\n12.5\n11\n' >"$d/shmbw/membw"
hccl_rows "$d/shmbw/raw.allreduce.2.1" "4194304 500.00 8.4"
o=$(validate "$d/shmbw" -n 2 -o allreduce) || true
grep -q "^copy 12.5 GB/s: one thread's memcpy of 16 MiB, best of the rounds, .* (the bandwidth, copy, reduction and zero-copy rates)" <<<"$o" ||
	{ out=$o; fail "shm: the copy rate is not the best round's 12.5 GB/s"; }
pred() { # the 4 MiB row's, with the options given
	shm_pred "$d/shmbw/raw.allreduce.2.1" allreduce 4194304 "$@"
}
want=$(pred --bw 12.5 --copy 12.5 --gamma 12.5 --zc 12.5) || true
lib=$(pred) || true
got=$(predicted allreduce 4194304)
[ -n "$want" ] && [ "$got" = "$want" ] && [ "$want" != "$lib" ] ||
	{ out=$o; fail "shm with membw, 4 MiB: predicted '$got', want '$want' (the library's rates: '$lib')"; }
o=$(validate "$d/shmbw" -n 2 -o allreduce -w 3) || true
grep -q "^copy 12.5 GB/s: .*(the copy, reduction and zero-copy rates; -w gave the bandwidth)" <<<"$o" ||
	{ out=$o; fail "shm -w 3: the bandwidth is not -w's"; }
want=$(pred --bw 3 --copy 12.5 --gamma 12.5 --zc 12.5) || true
got=$(predicted allreduce 4194304)
[ -n "$want" ] && [ "$got" = "$want" ] ||
	{ out=$o; fail "shm -w 3, 4 MiB: predicted '$got', want '$want'"; }

# shm, 4 ranks on 2 CPUs, a folder of before the barrier probe: the wake
# from the run's exchange steps, pair 0's by default there ((10.5 - 0.5) /
# (4 / 2)^2); -W slowest ((40.5 - 0.5) / 4)
printf '4 xchg 12\n4 xchg-slowest 40.5\n4 xchg 10.5\n' >>"$d/shm/p2p.wake"
sed 's/0.50 /9.00 /' "$d/shm/raw.allgather.2.1" >"$d/shm/raw.allgather.4.1"
o=$(validate "$d/shm" -n "2 4" -o allgather -c 2) || true
grep -q "^wake 2.5 us x (4/2 ranks per CPU)^2: 4 ranks' 1 KiB exchange step (pair0)" <<<"$o" ||
	{ out=$o; fail "shm: the wake is not pair 0's (10.5 - 0.5) / 4 = 2.5 us"; }
o=$(validate "$d/shm" -n "2 4" -o allgather -c 2 -W slowest) || true
grep -q "^wake 10 us x (4/2 " <<<"$o" ||
	{ out=$o; fail "shm -W slowest: the wake is not (40.5 - 0.5) / 4 = 10 us"; }

# shm, the barrier probe (sim_validate.sh's own runs): a step is a
# barrier over its ceil(log2 N) steps, and the barrier wins over the
# exchange steps: 4 ranks 10 us (2 steps: 5), 8 ranks 60 us (3 steps:
# 20), 2 ranks 0.25 (1 step): w = (4.75 x 4 + 19.75 x 16) / 272 = 1.2316
printf '2 barrier 0.3\n2 barrier 0.25\n4 barrier 10\n8 barrier 60\n8 barrier 61\n' >>"$d/shm/p2p.wake"
cp "$d/shm/raw.allgather.4.1" "$d/shm/raw.allgather.8.1"
o=$(validate "$d/shm" -n "2 4 8" -o allgather -c 2) || true
grep -q "^wake 1.232 us x (4/2 ranks per CPU)^2: a step of 4 ranks' HcclBarrier 5 us - 2 ranks' 0.25 us (fitted" <<<"$o" ||
	{ out=$o; fail "shm: the wake is not the barrier steps' 1.232 us at 4 ranks"; }
grep -q "^wake 1.232 us x (8/2 ranks per CPU)^2: a step of 8 ranks' HcclBarrier 20 us" <<<"$o" ||
	{ out=$o; fail "shm: the wake is not the barrier steps' 1.232 us at 8 ranks"; }
o=$(validate "$d/shm" -n "2 4 8" -o allgather -c 2 -E) || true
grep -q "^wake 1.188 us x (4/2 " <<<"$o" && grep -q "^wake 1.234 us x (8/2 " <<<"$o" ||
	{ out=$o; fail "shm -E: wakes 4.75 / 4 and 19.75 / 16 expected"; }
echo "PASS"
