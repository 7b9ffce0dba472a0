#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# headers.clang: every public header, alone, compiles with clang as strict
# C11 and C++11 (the build itself uses one compiler only).
# usage: check_clang.sh <clang> <clang++> <include-dir>
set -eu
cc=$1
cxx=$2
inc=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

fail=0
n=0
for path in $(cd "$inc" && find . -name '*.h' | sed 's|^\./||' | sort); do
	printf '#include <%s>\n#include <%s>\nint ohc_tu(void);\n' \
		"$path" "$path" > "$tmp/tu.c"
	printf 'int ohc_tu(void)\n{\n\treturn 0;\n}\n' >> "$tmp/tu.c"
	cp "$tmp/tu.c" "$tmp/tu.cpp"
	if ! "$cc" -std=c11 -Wall -Wextra -pedantic -Wstrict-prototypes \
		-Werror -I"$inc" -c "$tmp/tu.c" -o "$tmp/tu.o"; then
		echo "FAIL (C11): $path" >&2
		fail=1
	fi
	if ! "$cxx" -std=c++11 -Wall -Wextra -pedantic -Werror -I"$inc" \
		-c "$tmp/tu.cpp" -o "$tmp/tu.o"; then
		echo "FAIL (C++11): $path" >&2
		fail=1
	fi
	n=$((n + 1))
done
[ "$n" -gt 0 ] || { echo "no headers found in $inc" >&2; exit 1; }
[ "$fail" -eq 0 ] && echo "$n headers compile with clang as C11 and C++11"
exit "$fail"
