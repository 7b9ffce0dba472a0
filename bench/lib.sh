# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Shell functions the bench scripts share; sourced (bash) by compare.sh,
# sim_validate.sh, scaling.sh and algo_sweep.sh. Defines functions only.

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
