#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's "Environment variables honoured" table against the library's
# configuration table, as `hccl_doctor --config` prints it in an empty
# environment: every variable the library reads has a row, every row names
# a variable the library reads, and each row's default is the library's.
# A row may name several variables ("`A`, `B` | 1, 2 |"); a default may be
# annotated ("-1 (auto)", "64 (0 without CAP_SYS_ADMIN)"): only what comes
# before " (" is compared.
#
# usage: check_readme_env.sh README.md HCCL_DOCTOR
set -euo pipefail
readme=$1
doctor=$2

lib=$(env -i "$doctor" --config |
	sed -n 's/^\([A-Z_][A-Z0-9_]*\) *= \(.*\) *(default) .*$/\1\t\2/p' |
	sed 's/ *$//')
[ -n "$lib" ] || { echo "no variables from $doctor --config" >&2; exit 1; }

# README rows: one "name<TAB>default" line per variable named in the row
doc=$(sed -n '/^## Environment variables honoured/,/^## /p' "$readme" |
	awk -F'|' '/^\| `/ {
		n = split($2, names, ",")
		split($3, defs, ",")
		for (i = 1; i <= n; i++) {
			name = names[i]; gsub(/[ `]/, "", name)
			def = defs[i]; sub(/ \(.*$/, "", def)
			gsub(/^ +| +$/, "", def)
			printf "%s\t%s\n", name, def
		}
	}')
[ -n "$doc" ] || { echo "no table rows in $readme" >&2; exit 1; }

bad=0
while IFS=$'\t' read -r name def; do
	row=$(printf '%s\n' "$doc" | awk -F'\t' -v n="$name" '$1 == n')
	if [ -z "$row" ]; then
		echo "README: no row for $name (default '$def')"
		bad=1
		continue
	fi
	got=$(printf '%s\n' "$row" | cut -f2)
	if [ "$got" != "$def" ]; then
		echo "README: $name defaults to '$got', the library to '$def'"
		bad=1
	fi
done <<<"$lib"
while IFS=$'\t' read -r name _; do
	if ! printf '%s\n' "$lib" | cut -f1 | grep -qx "$name"; then
		echo "README: row for $name, which the library does not read"
		bad=1
	fi
done <<<"$doc"
[ $bad = 0 ] && echo "README env table: $(printf '%s\n' "$lib" | wc -l) variables, all in sync"
exit $bad
