#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# ctest build.layering: the build refuses an include of a layer a layer
# does not see (src/CMakeLists.txt, OHC_SEES_<layer>). For every pair of
# layers it plants a probe in the layer's probe target (same include path
# and flags as the layer's sources) and builds it: the probe must compile
# exactly when the other layer is visible. One real upward #include per
# layer must fail with "No such file". The probes are emptied at the end.
# usage: layering.sh BUILD_DIR SRC_DIR LAYER:SEEN,SEEN... ...
set -u
build=$1 src=$2
shift 2
layers=
for spec in "$@"; do layers="$layers ${spec%%:*}"; done
log=$(mktemp)
fail=0
trap 'rm -f "$log"' EXIT

header_of() { # one header of a layer, as a layer's sources name it
	for h in "$src/$1"/*.h "$src/$1"/*/*.h; do
		[ -f "$h" ] && { echo "${h#"$src"/}"; return; }
	done
}

build_probe() { # layer text: 0 if the probe compiles
	printf '%s\n' "$2" >"$build/src/layers/probe/$1.c"
	cmake --build "$build" --target "ohc_probe_$1" >"$log" 2>&1
}

for spec in "$@"; do
	layer=${spec%%:*}
	sees=" $layer $(echo "${spec#*:}" | tr , ' ') "
	planted=
	for other in $layers; do
		hdr=$(header_of "$other")
		[ -n "$hdr" ] || continue
		case $sees in *" $other "*) want=0 ;; *) want=1 ;; esac
		build_probe "$layer" "#if !__has_include(\"$hdr\")
#error $hdr is not visible from $layer
#endif"
		got=$?
		[ "$got" = 0 ] || got=1
		if [ "$got" != "$want" ]; then
			echo "FAIL: $layer sees $other: expected $([ $want = 0 ] && echo yes || echo no)"
			cat "$log"
			fail=1
		fi
		if [ "$want" = 1 ] && [ -z "$planted" ]; then
			planted=$hdr
			if build_probe "$layer" "#include \"$hdr\""; then
				echo "FAIL: $layer compiled #include \"$hdr\""
				fail=1
			elif ! grep -q "$hdr: No such file" "$log"; then
				echo "FAIL: $layer: #include \"$hdr\" failed otherwise:"
				cat "$log"
				fail=1
			else
				echo "ok: $layer: #include \"$hdr\" refused:" \
					"$(grep -o "[^ ]*$hdr: No such file.*" "$log" | head -1)"
			fi
		fi
	done
	echo "ok: $layer sees only:$sees"
	build_probe "$layer" "/* written by ctest build.layering */" ||
		{ echo "FAIL: the empty probe of $layer"; fail=1; }
done
exit $fail
