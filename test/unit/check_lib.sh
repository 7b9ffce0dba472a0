# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Sourced by the check_*.sh tests of this folder: need FILE TARGET stops
# the test when the program FILE (built by TARGET) is missing; $d is a
# temporary folder removed at exit; fail MESSAGE prints MESSAGE and the
# last output the test captured ($out), then exits 1.
need() {
	[ -x "$1" ] || {
		echo "FAIL: no $1 (build $2)"
		exit 1
	}
}
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail() {
	echo "FAIL: $*"
	echo "${out-}"
	exit 1
}
