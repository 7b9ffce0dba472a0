#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# headers.declared_functions: test/api/declared_functions.txt must equal
# what tools/list_declared_functions.sh prints for the current headers
# (regenerate it with that script after changing a header).
# usage: check_declared_functions.sh <source-root>
set -eu
root=$1
out=$(mktemp)
trap 'rm -f "$out"' EXIT INT TERM

sh "$root/tools/list_declared_functions.sh" "$root" > "$out"
if ! diff -u "$root/test/api/declared_functions.txt" "$out"; then
	echo "test/api/declared_functions.txt is stale: run" \
		"tools/list_declared_functions.sh > test/api/declared_functions.txt" >&2
	exit 1
fi
n=$(wc -l < "$out")
# Sanity: the listing cannot be empty or lose a whole library.
grep -q '^hccl HcclAllReduce$' "$out"
grep -q '^ascendcl aclrtMalloc$' "$out"
grep -q '^msprofiler aclprofStart$' "$out"
echo "$n declared functions, list up to date"
