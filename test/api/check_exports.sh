#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every function the public headers declare is defined and exported by the
# library that must carry it, and nothing else leaks: libhccl exports only
# Hccl*/Hcom*, libascendcl only acl* plus the private ohc_rt_* interface and
# the logger (ohc_log*), libmsprofiler only aclprof*.
# usage: check_exports.sh declared_functions.txt libhccl.so libascendcl.so \
#        libmsprofiler.so
set -euo pipefail
list=$1 hccl=$2 acl=$3 prof=$4
fail=0
exports() { nm -D --defined-only "$1" | awk '$2 ~ /^[TtWiV]$/ {print $3}' | sed 's/@.*//' | sort -u; }
hccl_syms=$(exports "$hccl")
acl_syms=$(exports "$acl")
prof_syms=$(exports "$prof")
while read -r lib fn; do
	case $lib in
	hccl) syms=$hccl_syms ;;
	ascendcl) syms=$acl_syms ;;
	msprofiler) syms=$prof_syms ;;
	*) continue ;;
	esac
	if ! grep -qx "$fn" <<<"$syms"; then
		echo "MISSING: $fn is declared but not exported by lib$lib"
		fail=1
	fi
done <"$list"
extra=$(grep -v -E '^(Hccl|Hcom)' <<<"$hccl_syms" || true)
[ -z "$extra" ] || { echo "LEAKED from libhccl: $extra"; fail=1; }
extra=$(grep -v -E '^(acl|ohc_rt_|ohc_log)' <<<"$acl_syms" || true)
[ -z "$extra" ] || { echo "LEAKED from libascendcl: $extra"; fail=1; }
extra=$(grep -v -E '^aclprof' <<<"$prof_syms" || true)
[ -z "$extra" ] || { echo "LEAKED from libmsprofiler: $extra"; fail=1; }
# one runtime: the profiler's calls live in libmsprofiler alone
extra=$(grep -E '^aclprof' <<<"$acl_syms$hccl_syms" || true)
[ -z "$extra" ] || { echo "aclprof* outside libmsprofiler: $extra"; fail=1; }
n=$(grep -c . "$list")
if [ $fail -eq 0 ]; then
	echo "1 passed, 0 failed: $n declared functions exported, nothing leaked"
else
	echo "0 passed, 1 failed"
fi
exit $fail
