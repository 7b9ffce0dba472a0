#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The hccl_test tools under a real one-node Slurm (Debian's slurmctld and
# slurmd, started here, stopped on every exit): `srun --mpi=pmi2 -n 4
# all_reduce_test` passes its check, with the root info handed out over
# PMI (no MPI); a failed check and a killed rank make srun exit non-zero,
# the killed rank within seconds; srun --mpi=pmix runs them through MPI
# when they are built with it; without a PMI channel they say what to do.
# About 20 s. Needs root (the daemons run
# as root with auth/none; see shared notes/slurm.md).
# usage: test/tools/slurm.sh BUILD_DIR
set -euo pipefail
build=$(cd "${1:?usage: $0 BUILD_DIR}" && pwd)
cd "$(dirname "$0")/../.."
bash ci/deps.sh slurm
tools=$build/tools
[ -x "$tools/all_reduce_test" ] || { echo "no $tools/all_reduce_test" >&2; exit 1; }

d=$(mktemp -d /tmp/ohc-slurm.XXXXXX)
h=$(hostname -s)
ctld="" slurmd=""
stop() {
	local st=$?
	scancel --user=root >/dev/null 2>&1 || true
	for p in $ctld $slurmd; do kill -TERM "$p" 2>/dev/null || true; done
	for _ in $(seq 50); do
		alive=""
		for p in $ctld $slurmd; do
			kill -0 "$p" 2>/dev/null && alive=1
		done
		[ -z "$alive" ] && break
		sleep 0.1
	done
	for p in $ctld $slurmd; do kill -KILL "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	if [ $st != 0 ]; then
		echo "--- slurmctld log"; tail -n 20 "$d/log/slurmctld.log" 2>/dev/null || true
		echo "--- slurmd log"; tail -n 20 "$d/log/slurmd.log" 2>/dev/null || true
	fi
	rm -rf "$d"
	exit $st
}
trap stop EXIT INT TERM
mkdir -p "$d/state" "$d/spool" "$d/log"
cat >"$d/slurm.conf" <<CONF
ClusterName=ohctest
SlurmctldHost=$h(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=6817
SlurmdPort=6818
AuthType=auth/none
CredType=cred/none
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/slurmd.pid
SlurmctldLogFile=$d/log/slurmctld.log
SlurmdLogFile=$d/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
MpiDefault=pmi2
MailProg=/bin/true
ReturnToService=2
SlurmdParameters=config_overrides
NodeName=$h NodeAddr=127.0.0.1 CPUs=64 State=UNKNOWN
PartitionName=debug Nodes=$h Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
CONF
export SLURM_CONF=$d/slurm.conf
slurmctld -D -i -f "$SLURM_CONF" >"$d/log/ctld.out" 2>&1 &
ctld=$!
slurmd -D -f "$SLURM_CONF" >"$d/log/slurmd.out" 2>&1 &
slurmd=$!
for i in $(seq 100); do
	[ "$(sinfo -h -N -o %t 2>/dev/null)" = idle ] && break
	[ "$i" = 100 ] && { echo "FAIL: the node never became idle"; exit 1; }
	sleep 0.2
done
echo "slurm: node $h idle"

fail=0
run() { # run SECONDS srun-args...: srun's output into $d/out, its status
	local t=$1
	shift
	st=0
	timeout "$t" srun "$@" >"$d/out" 2>&1 || st=$?
	cat "$d/out"
}

# 1. four tasks, root info over PMI-2's channel, every size checked
run 60 --mpi=pmi2 -n 4 "$tools/all_reduce_test" -b 8 -e 1M -f 4 -n 5 -w 1 \
	--csv "$d/rows.csv"
# 8 B to 512 KiB by 4: 9 sizes
rows=$(grep -c ',success$' "$d/rows.csv" || true)
if [ $st != 0 ] || [ "$rows" != 9 ] || ! grep -q '^all_reduce_test,4,' "$d/rows.csv" ||
	[ "$(grep -c '| success ' "$d/out")" != 9 ]; then
	echo "FAIL: srun -n 4 all_reduce_test: exit $st, $rows of 9 rows passed"
	fail=1
else
	echo "ok: srun --mpi=pmi2 -n 4 all_reduce_test: 9 sizes checked at 4 ranks"
fi
# rank 0 alone printed the table
n=$(grep -c '^the minbytes is' "$d/out" || true)
[ "$n" = 1 ] || { echo "FAIL: $n headers, want 1 (rank 0's)"; fail=1; }

# 2. another collective, a rooted one
run 60 --mpi=pmi2 -n 3 "$tools/broadcast_test" -b 1K -e 64K -f 8 -n 2 -w 1 -r 2
if [ $st != 0 ] || [ "$(grep -c '| success ' "$d/out")" != 3 ]; then
	echo "FAIL: srun -n 3 broadcast_test -r 2: exit $st"
	fail=1
else
	echo "ok: srun -n 3 broadcast_test -r 2"
fi

# 2b. srun --mpi=pmix: the tools built with Open MPI get the root info
# through MPI_Bcast (Open MPI speaks PMIx); without MPI they say so
if ldd "$tools/all_reduce_test" | grep -q libmpi; then
	run 60 --mpi=pmix -n 2 "$tools/all_reduce_test" -b 8 -e 64K -f 8 -n 2 -w 1
	if [ $st != 0 ] || [ "$(grep -c '| success ' "$d/out")" != 5 ]; then
		echo "FAIL: srun --mpi=pmix -n 2 all_reduce_test: exit $st"
		fail=1
	else
		echo "ok: srun --mpi=pmix -n 2 all_reduce_test (through MPI)"
	fi
fi

# 3. a failed check: non-zero exit, the failing rank named
run 60 --mpi=pmi2 -n 4 "$tools/all_reduce_test" -b 4K -e 4K -n 1 \
	--corrupt_rank 2
if [ $st = 0 ] || ! grep -q 'local rank_id 2, check result failed' "$d/out"; then
	echo "FAIL: a failed check under srun: exit $st"
	fail=1
else
	echo "ok: a failed check under srun exits $st"
fi

# 4. a rank that dies: the step ends within seconds, non-zero
t0=$(date +%s%N)
run 60 --mpi=pmi2 -n 4 "$tools/all_reduce_test" -b 8 -e 1M -f 2 -n 20 \
	--kill_rank 1
ms=$((($(date +%s%N) - t0) / 1000000))
if [ $st = 0 ] || [ $st = 124 ] || [ $ms -gt 15000 ]; then
	echo "FAIL: a killed rank under srun: exit $st after $ms ms"
	fail=1
else
	echo "ok: a killed rank under srun: exit $st after $ms ms"
fi

# 5. no PMI channel (--mpi=none): the tools say what to do
run 30 --mpi=none -n 2 "$tools/all_reduce_test" -b 8 -e 8
if [ $st = 0 ] || ! grep -q -e 'without a PMI channel (PMI_FD) to share the root info: run srun --mpi=pmi2' "$d/out"; then
	echo "FAIL: srun --mpi=none: exit $st, no advice"
	fail=1
else
	echo "ok: srun --mpi=none is refused with advice"
fi

# 6. the README's recipe for a user program: rank from Slurm's
# environment, root info through a file (no PMI, no MPI)
run 60 --mpi=none -n 4 "$build/examples/launch_example" "$d"
if [ $st != 0 ] || [ "$(grep -c 'data\[0\] = 6 (expect 6) ok' "$d/out")" != 4 ] ||
	ls "$d"/hccl-root.* >/dev/null 2>&1; then
	echo "FAIL: srun -n 4 launch_example: exit $st"
	fail=1
else
	echo "ok: srun -n 4 launch_example (root info through a file)"
fi

left=$(ls /dev/shm 2>/dev/null | grep -i -E 'ohc|hccl' || true)
[ -z "$left" ] || { echo "FAIL: left in /dev/shm: $left"; fail=1; }
[ $fail = 0 ] && echo "slurm.sh: all passed"
exit $fail
