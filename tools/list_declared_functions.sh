#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# Print every function declared by the public headers include/hccl/*.h and
# include/acl/{acl.h,acl_rt.h,acl_base.h,acl_prof.h}, one per line as
# "<library> <name>" (hccl, ascendcl or msprofiler), sorted. static
# inline helpers (HcclCommConfigInit) are not exported and are left out.
#
# The compiler does the parsing: GCC's -aux-info writes one prototype per
# declared function together with the file it came from.
#
# usage: tools/list_declared_functions.sh [source-root] > out.txt
# env:   CC  a GCC C compiler (default gcc)
set -eu

root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
root=$(cd "$root" && pwd)
cc=${CC:-gcc}
inc=$root/include

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

{
	for h in "$inc"/hccl/*.h; do
		printf '#include <hccl/%s>\n' "$(basename "$h")"
	done
	printf '#include <acl/acl.h>\n#include <acl/acl_base.h>\n'
	printf '#include <acl/acl_rt.h>\n#include <acl/acl_prof.h>\n'
} > "$tmp/all.c"

"$cc" -std=c11 -I"$inc" -fsyntax-only -aux-info "$tmp/all.aux" "$tmp/all.c"

# Line format: /* <file>:<line>:<flags> */ <declaration>
awk -v inc="$inc/" '
	{
		file = $2
		sub(/:[0-9]+:[A-Z]+$/, "", file)
		if (index(file, inc) != 1)
			next
		rel = substr(file, length(inc) + 1)
		if (rel ~ /^hccl\//)
			lib = "hccl"
		else if (rel ~ /^acl\/(acl|acl_rt|acl_base)\.h$/)
			lib = "ascendcl"
		else if (rel == "acl/acl_prof.h")
			lib = "msprofiler"
		else
			next
		decl = $0
		sub(/^\/\*[^*]*\*\/ */, "", decl)
		if (decl ~ /^static /)
			next
		if (!match(decl, /[A-Za-z_][A-Za-z0-9_]* \(/)) {
			print "cannot parse: " $0 > "/dev/stderr"
			exit 1
		}
		print lib, substr(decl, RSTART, RLENGTH - 2)
	}
' "$tmp/all.aux" | LC_ALL=C sort -u
