#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# install.*: an install prefix used the ways users use it, never with
# LD_LIBRARY_PATH. Each mode installs the build tree into its own
# temporary prefix (cmake --install --prefix) and then:
#   layout          the CANN names in lib64/, headers, package files; a
#                   $ORIGIN run path (nothing absolute) on every library
#                   and program; an installed tool runs, also after the
#                   prefix moved; hccl.pc's flags, --static included
#   cann_sample     examples/cann_sample built by its CANN-style Makefile
#                   with only ASCEND_DIR set, run by mpirun on 4 ranks; its
#                   traces parse, every rank ran every op, lanes in order;
#                   hccl_prof_merge's timeline passes the same checks
#   readme_example  the README's example built by each of the README's
#                   cc command lines, run
#   cmake_consumer  a CMake project linking only OpenHCCL::hccl, run
#
# usage: install_test.sh MODE SOURCE_DIR BUILD_DIR LIBDIR SANITIZE \
#        CHECK_TRACE
# Exit 77 (ctest: skipped) with the reason when the build cannot serve.
set -euo pipefail
mode=$1 src=$2 build=$3 libdir=$4 sanitize=$5 check_trace=$6

if [ "$libdir" != lib64 ]; then
	echo "SKIP: configured with CMAKE_INSTALL_LIBDIR=$libdir;" \
		"the CANN layout these tests use is lib64"
	exit 77
fi
case $mode in
cann_sample | readme_example | cmake_consumer)
	if [ "$sanitize" = ON ]; then
		echo "SKIP: sanitizer build: a program built outside the" \
			"project would need the ASan runtime preloaded"
		exit 77
	fi ;;
esac

if [ "$mode" = cann_sample ]; then
	command -v mpirun >/dev/null ||
		{ echo "SKIP: no mpirun (ci/deps.sh bench installs Open MPI)"; exit 77; }
	[ -e "/usr/lib/$(gcc -dumpmachine)/openmpi/include/mpi.h" ] ||
		{ echo "SKIP: no Open MPI headers where the sample's Makefile" \
			"looks (MPI_HOME)"; exit 77; }
fi

unset LD_LIBRARY_PATH LIBRARY_PATH CPATH C_INCLUDE_PATH PKG_CONFIG_PATH
tmp=$(mktemp -d /tmp/ohc_install_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
P=$tmp/ascend
cmake --install "$build" --prefix "$P" >"$tmp/install.log" ||
	{ cat "$tmp/install.log"; exit 1; }

fail=0
bad() {
	echo "FAIL: $*"
	fail=1
}

# Every library our programs need resolves, ours from inside $2.
check_ldd() {
	local f=$1 prefix=$2 out
	out=$(ldd "$f" 2>&1) || { bad "ldd $f: $out"; return; }
	if grep -q "not found" <<<"$out"; then
		bad "$f: $(grep "not found" <<<"$out" | tr -s ' \t' ' ')"
	fi
	for lib in libhccl.so.1 libascendcl.so libmsprofiler.so; do
		local where
		where=$(awk -v l="$lib" '$1 == l {print $3}' <<<"$out")
		if [ -n "$where" ] && [ "${where#"$prefix"/}" = "$where" ]; then
			bad "$f: $lib resolves to $where, outside $prefix"
		fi
	done
}

run_layout() {
	local f rp
	for f in lib64/libhccl.so lib64/libhccl.so.1 lib64/libhcomm.so \
		lib64/libascendcl.so lib64/libacl_rt.so lib64/libmsprofiler.so \
		lib64/pkgconfig/hccl.pc share/cmake/OpenHCCL/OpenHCCLConfig.cmake \
		include/acl/acl.h include/acl/acl_prof.h include/hccl/hccl.h \
		include/hccl/hccl_version.h share/doc/openhccl/LICENSE \
		share/doc/openhccl/CHANGELOG.md bin/all_reduce_test \
		bin/hccl_doctor bin/hccl_simulate bin/hccl_prof_merge; do
		[ -e "$P/$f" ] || bad "missing $f"
	done
	[ "$(readlink -f "$P/lib64/libhcomm.so")" = \
		"$(readlink -f "$P/lib64/libhccl.so")" ] ||
		bad "libhcomm.so is not libhccl.so"
	[ "$(readlink -f "$P/lib64/libacl_rt.so")" = \
		"$(readlink -f "$P/lib64/libascendcl.so")" ] ||
		bad "libacl_rt.so is not libascendcl.so"
	# a relative run path on every ELF file, nothing else in it
	for f in "$P"/lib64/*.so* "$P"/bin/*; do
		[ -L "$f" ] && continue
		rp=$(readelf -d "$f" | sed -n 's/.*(R[UN]*PATH).*\[\(.*\)\]/\1/p')
		case $rp in
		'$ORIGIN' | '$ORIGIN/../lib64') ;;
		*) bad "$f: run path '$rp' (want \$ORIGIN-relative)" ;;
		esac
		check_ldd "$f" "$P"
	done
	readelf -d "$P/lib64/libhccl.so.1" | grep -q 'NEEDED.*libascendcl.so' ||
		bad "libhccl does not name libascendcl"
	# an installed tool runs, and still does once the prefix moved
	for where in "$P" "$tmp/moved"; do
		[ "$where" = "$P" ] || mv "$P" "$where"
		out=$("$where/bin/all_reduce_test" -np 2 -b 8 -e 1K -f 8 -n 2 \
			-w 1 2>&1) || bad "all_reduce_test in $where: $out"
		grep -q "success" <<<"$out" ||
			bad "all_reduce_test in $where: no success: $out"
		"$where/bin/hccl_prof_merge" --help >/dev/null ||
			bad "hccl_prof_merge --help in $where"
	done
	mv "$tmp/moved" "$P"
	# hccl.pc: relocatable flags; its private requirements resolve
	export PKG_CONFIG_PATH=$P/lib64/pkgconfig
	out=$(pkg-config --cflags --libs hccl) || bad "pkg-config: $out"
	for want in "-I$P/lib64/pkgconfig/../../include" \
		"-L$P/lib64/pkgconfig/../../lib64" -lhccl -lascendcl; do
		grep -q -- " $want\( \|$\)" <<<" $out" ||
			bad "pkg-config --cflags --libs: no $want in '$out'"
	done
	out=$(pkg-config --static --libs hccl) || bad "pkg-config --static"
	for want in -libverbs -lnuma -ljansson -lpthread; do
		grep -q -- " $want\( \|$\)" <<<" $out" ||
			bad "pkg-config --static --libs: no $want in '$out'"
	done
	[ "$(pkg-config --modversion hccl)" = \
		"$(sed -n 's/^#define OPENHCCL_VERSION_STRING "\(.*\)"/\1/p' \
			"$src/include/hccl/hccl_version.h")" ] ||
		bad "hccl.pc's version is not hccl_version.h's"
}

run_cann_sample() {
	local n=4 out ops
	cp -r "$src/examples/cann_sample" "$tmp/sample"
	rm -f "$tmp/sample/hccl_cann_sample"
	out=$(make -C "$tmp/sample" ASCEND_DIR="$P" 2>&1) ||
		{ bad "make: $out"; return; }
	check_ldd "$tmp/sample/hccl_cann_sample" "$P"
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
	out=$(cd "$tmp" && timeout 200 mpirun --oversubscribe \
		--mca btl self,vader -n $n ./sample/hccl_cann_sample \
		"$tmp/prof" 2>&1) || { bad "mpirun: $out"; return; }
	[ "$(grep -c ' ok$' <<<"$out")" = $n ] ||
		bad "not every rank reported ok: $out"
	ops="HcclAllReduce HcclBroadcast HcclAllGather HcclReduceScatter
		HcclAlltoAll HcclSend HcclRecv HcclBarrier"
	# shellcheck disable=SC2086 # the op names are words
	"$check_trace" -n $n "$tmp/prof" $n $ops rt:memcpy || fail=1
	"$P/bin/hccl_prof_merge" -o "$tmp/merged.json" "$tmp/prof" || fail=1
	# shellcheck disable=SC2086
	"$check_trace" -n 1 "$tmp/merged.json" $n $ops || fail=1
	# bad inputs are refused, naming the file
	echo '{"traceEvents": [' >"$tmp/broken.json"
	echo '{"traceEvents": []}' >"$tmp/foreign.json"
	for f in broken foreign; do
		if out=$("$P/bin/hccl_prof_merge" -o "$tmp/m2.json" "$tmp/prof" \
			"$tmp/$f.json" 2>&1) || ! grep -q "$f.json" <<<"$out"; then
			bad "hccl_prof_merge took $f.json: $out"
		fi
	done
}

# "rank 3: data[0] = 6" from the README's example, run without help.
run_example() {
	local out
	out=$("$1" 2>&1) || { bad "$1: $out"; return; }
	grep -q 'rank 3: data\[0\] = 6' <<<"$out" || bad "$1 printed: $out"
}

run_readme_example() {
	local lines n=0 line
	lines=$(sed -n '/^Build it against an install prefix/,/^```$/p' \
		"$src/README.md" | grep -E '^(cc example\.c|export PKG_CONFIG)')
	cp "$src/examples/allreduce_example.c" "$tmp/example.c"
	while IFS= read -r line; do
		line=${line//\/opt\/ohc/$P}
		case $line in
		export*) eval "$line" ;;
		cc*)
			n=$((n + 1))
			rm -f "$tmp/a.out"
			(cd "$tmp" && eval "$line") || { bad "README: $line"; continue; }
			run_example "$tmp/a.out"
			;;
		esac
	done <<<"$lines"
	[ $n = 2 ] || bad "the README's build block has $n cc lines, not 2"
}

run_cmake_consumer() {
	local out
	out=$(cmake -S "$src/test/install/consumer" -B "$tmp/consumer" \
		-DCMAKE_PREFIX_PATH="$P" \
		-DEXAMPLE_SOURCE="$src/examples/allreduce_example.c" 2>&1) ||
		{ bad "cmake configure: $out"; return; }
	out=$(cmake --build "$tmp/consumer" 2>&1) ||
		{ bad "cmake build: $out"; return; }
	check_ldd "$tmp/consumer/consumer" "$P"
	run_example "$tmp/consumer/consumer"
}

case $mode in
layout) run_layout ;;
cann_sample) run_cann_sample ;;
readme_example) run_readme_example ;;
cmake_consumer) run_cmake_consumer ;;
*) echo "unknown mode $mode" >&2; exit 2 ;;
esac
[ $fail = 0 ] && echo "install.$mode: passed"
exit $fail
