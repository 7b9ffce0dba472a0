# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Shell functions the bench scripts share; sourced (bash) by compare.sh,
# sim_validate.sh, scaling.sh, algo_sweep.sh, verbs_p2p.sh and
# verbs_lat.sh. Defines functions only.

# ohc_bench_tool_of OP: the hccl_test tool of a collective (compare.sh's
# names: allreduce allgather reduce_scatter broadcast reduce alltoall
# scatter); an unknown one is an error (exit 2).
ohc_bench_tool_of() {
	case $1 in
	allreduce) echo all_reduce_test ;;
	allgather) echo all_gather_test ;;
	reduce_scatter) echo reduce_scatter_test ;;
	broadcast) echo broadcast_test ;;
	reduce) echo reduce_test ;;
	alltoall) echo alltoall_test ;;
	scatter) echo scatter_test ;;
	*) echo "${0##*/}: unknown collective $1" >&2; exit 2 ;;
	esac
}

# ohc_bench_why STATUS ERRFILE [OUTFILE]: why a run failed, on one line:
# its exit status (124: timed out, with OUTFILE's last line, where its
# output stopped) and the first error lines of ERRFILE, not the frames of
# a backtrace.
ohc_bench_why() {
	{
		if [ "$1" = 124 ]; then
			echo "timed out (exit 124), output stopped after:"
			tail -n 1 "${3:-/dev/null}" 2>/dev/null | cut -c1-60
		else
			echo "exit $1:"
		fi
		grep -vE '^ *[0-9]+ +/|\[0x|^\[[^]]*\] \[ *[0-9]+\]' "$2" |
			grep -m3 -iE 'error|fail|fatal|not supported|unreachable|what\(\)|abort' |
			sed 's/^ *//' | cut -c1-200
	} | paste -sd' '
}

# ohc_bench_prepared_ldpath DIR: the library path of a folder made by
# `scaling.sh --prepare DIR`: its lib64/, then the Open MPI bundle's
# (env.sh: lib, and lib/compat where the host lacks libz or libudev), as
# our tools link libmpi too (they also run under mpirun).
ohc_bench_prepared_ldpath() {
	# shellcheck disable=SC1091 # the bundle is made by --prepare
	echo "$1/lib64:$(unset LD_LIBRARY_PATH
		. "$1/ompi/env.sh" >/dev/null; echo "$LD_LIBRARY_PATH")"
}

# ohc_bench_need_vm: true where a verbs benchmark cannot run here (no
# RDMA device, and not inside the Soft-RoCE VM already): it builds here
# (ohc_bench_verbs_build) and reruns itself in the VM.
ohc_bench_need_vm() {
	[ -z "${OHC_VM_MODE:-}" ] && ! ls /sys/class/infiniband/* >/dev/null 2>&1
}

# ohc_bench_verbs_build TOP BUILD: ohc_verbs_p2p_bench built (Release) in
# BUILD and the VM's kernel prepared (ci/soft-roce/prepare.sh); prints
# BUILD's absolute path, the folder the VM is given writable.
ohc_bench_verbs_build() {
	cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build "$2" -j"$(nproc)" --target ohc_verbs_p2p_bench >/dev/null
	bash "$1/ci/soft-roce/prepare.sh" >/dev/null
	(cd "$2" && pwd)
}
