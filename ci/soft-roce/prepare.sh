#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Prepares the Soft-RoCE test VM: installs the Debian packages that are
# missing, downloads and unpacks Debian's stock kernel (the one that ships
# rdma_rxe.ko), and builds the initramfs (static busybox, the modules rxe
# and 9p need, vm-init.sh as /init). Everything is cached under
# build/soft-roce/ (or $OHC_SOFTROCE_CACHE): a second run only checks.
#
# usage: ci/soft-roce/prepare.sh [--quiet]
# Output: $cache/current.env, a shell fragment with VM_KERNEL, VM_INITRD,
# VM_KVER for run-vm.sh.
#
# Overrides:
#   OHC_SOFTROCE_CACHE       cache folder (default <repo>/build/soft-roce)
#   OHC_SOFTROCE_KERNEL_PKG  versioned kernel package to use, e.g.
#                            linux-image-6.1.0-57-amd64 (default: what
#                            linux-image-amd64 depends on)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
cache=${OHC_SOFTROCE_CACHE:-$top/build/soft-roce}
quiet=0
[ "${1:-}" = --quiet ] && quiet=1

# Bump when the initramfs layout changes in a way the hashes below miss.
layout=4

# Modules the VM needs; their dependencies are added from modules.dep.
# crc32_generic is not a declared dependency of rdma_rxe, but without it
# `rdma link add` fails with ENOENT (rxe allocates the crc32 shash).
want_modules=(virtio_pci 9pnet_virtio 9p crc32_generic rdma_rxe rdma_ucm
	veth virtio_net sch_netem sch_prio cls_u32)

pkgs=(qemu-system-x86 busybox-static rdma-core ibverbs-providers
	ibverbs-utils perftest iproute2 kmod cpio)

say() { [ "$quiet" = 1 ] || echo "prepare: $*" >&2; }
die() {
	echo "prepare: ERROR: $*" >&2
	exit 1
}

[ "$(id -u)" -eq 0 ] || SUDO=sudo
SUDO=${SUDO:-}
apt_updated=0
apt_update() {
	[ "$apt_updated" = 1 ] && return 0
	say "apt-get update"
	$SUDO apt-get update -qq || die "apt-get update failed (no access to Debian's package registry?)"
	apt_updated=1
}

# --- 1. packages -----------------------------------------------------------
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	say "installing ${missing[*]}"
	apt_update
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
		--no-install-recommends "${missing[@]}" >/dev/null ||
		die "apt-get install ${missing[*]} failed"
fi
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 not found after installing qemu-system-x86"
[ -x /bin/busybox ] || die "/bin/busybox missing (package busybox-static)"
if ldd /bin/busybox >/dev/null 2>&1; then
	die "/bin/busybox is dynamically linked; install busybox-static (it replaces busybox)"
fi

mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9 || die "cannot lock $cache/.lock"

# --- 2. kernel ---------------------------------------------------------------
# "linux-image-amd64" depends on "linux-image-6.1.0-NN-amd64 (= VERSION)".
# apt-cache takes seconds here, so the answer is kept until the package
# lists change.
resolve_kernel_pkg() {
	apt-cache show --no-all-versions "${1:-linux-image-amd64}" 2>/dev/null |
		awk -v want="$1" '
		want == "" && /^Depends:/ {
			for (i = 2; i <= NF; i++)
				if ($i ~ /^linux-image-[0-9]/) {
					v = $(i + 2); sub(/\)?,?$/, "", v)
					print $i, v; exit
				}
		}
		want != "" && /^Version:/ { print want, $2; exit }'
}
resolved=$cache/kernel.resolved
kpkg=${OHC_SOFTROCE_KERNEL_PKG:-}
if [ -z "$kpkg" ] && [ -s "$resolved" ] &&
	[ -z "$(find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -newer "$resolved" 2>/dev/null)" ]; then
	read -r kpkg kverpkg <"$resolved"
else
	r=$(resolve_kernel_pkg "$kpkg")
	if [ -z "$r" ]; then
		apt_update
		r=$(resolve_kernel_pkg "$kpkg")
	fi
	[ -n "$r" ] || die "cannot resolve the kernel package (apt-cache show ${kpkg:-linux-image-amd64} found no versioned linux-image package)"
	read -r kpkg kverpkg <<<"$r"
	[ -n "${OHC_SOFTROCE_KERNEL_PKG:-}" ] || echo "$kpkg $kverpkg" >"$resolved"
fi
case "$kpkg" in
*-cloud-amd64) die "$kpkg is the cloud flavour, built without CONFIG_RDMA_RXE; use the plain -amd64 one" ;;
esac

# apt-get download as root warns that it cannot drop to _apt; harmless.
fetch_kernel() {
	(cd "$cache/debs" && apt-get download "$kpkg=$kverpkg" 2>&1 |
		grep -v 'Download is performed unsandboxed' >&2) || true
}
kdir=$cache/kernel/${kpkg}_$kverpkg
if [ ! -f "$kdir/.complete" ]; then
	say "downloading $kpkg $kverpkg"
	rm -rf "$cache/debs" "$kdir" "$kdir.tmp"
	mkdir -p "$cache/debs" "$kdir.tmp"
	fetch_kernel
	deb=$(ls "$cache/debs/${kpkg}_"*.deb 2>/dev/null | head -n1)
	if [ -z "$deb" ] && [ "$apt_updated" = 0 ]; then
		apt_update # the package lists may be older than the mirror
		fetch_kernel
		deb=$(ls "$cache/debs/${kpkg}_"*.deb 2>/dev/null | head -n1)
	fi
	[ -n "$deb" ] || die "apt-get download $kpkg=$kverpkg produced no .deb"
	say "unpacking $(basename "$deb")"
	dpkg -x "$deb" "$kdir.tmp" || die "dpkg -x $deb failed"
	rm -rf "$cache/debs"
	mv "$kdir.tmp" "$kdir"
	touch "$kdir/.complete"
	# Older kernel trees of this cache are no longer needed.
	for old in "$cache"/kernel/*; do
		[ "$old" = "$kdir" ] || rm -rf "$old"
	done
fi
kver=$(ls "$kdir/lib/modules" | head -n1)
[ -n "$kver" ] || die "no lib/modules/<version> in $kdir"
kimg=$kdir/boot/vmlinuz-$kver
[ -f "$kimg" ] || die "no kernel image $kimg"
grep -q '^CONFIG_RDMA_RXE=m' "$kdir/boot/config-$kver" ||
	die "kernel $kver has no CONFIG_RDMA_RXE=m; Soft-RoCE is impossible with it"
# QEMU boots an uncompressed ELF vmlinux with a PVH entry note directly:
# no BIOS real-mode loader and no in-guest decompression, which under TCG
# saves several seconds per boot. Fall back to vmlinuz if it cannot be
# extracted.
boot_img=$kimg
if [ ! -f "$kdir/vmlinux-pvh" ] && [ ! -f "$kdir/vmlinux-pvh.none" ]; then
	extract_vmlinux() {
		local magics=($'\xfd7zXZ' $'\x28\xb5\x2f\xfd' $'\x1f\x8b\x08')
		local tools=(xz zstd gzip)
		local i magic tool off
		for i in 0 1 2; do
			magic=${magics[$i]}
			tool=${tools[$i]}
			command -v "$tool" >/dev/null || continue
			for off in $(LC_ALL=C grep -abo "$magic" "$kimg" 2>/dev/null | cut -d: -f1 | head -n 5); do
				tail -c +$((off + 1)) "$kimg" | "$tool" -dc 2>/dev/null >"$kdir/vmlinux.tmp" || true
				if [ "$(head -c 4 "$kdir/vmlinux.tmp" 2>/dev/null | od -An -c | tr -d ' ')" = 177ELF ] &&
					LC_ALL=C readelf -n "$kdir/vmlinux.tmp" 2>/dev/null | grep -q 'Xen.*0x00000012\|PHYS32_ENTRY\|(0x00000012)'; then
					mv "$kdir/vmlinux.tmp" "$kdir/vmlinux-pvh"
					return 0
				fi
			done
		done
		rm -f "$kdir/vmlinux.tmp"
		return 1
	}
	if extract_vmlinux; then
		say "extracted an uncompressed PVH vmlinux (faster boot)"
	else
		say "no PVH vmlinux could be extracted from $kimg; booting vmlinuz (slower)"
		touch "$kdir/vmlinux-pvh.none"
	fi
fi
[ -f "$kdir/vmlinux-pvh" ] && boot_img=$kdir/vmlinux-pvh
mdir=$kdir/lib/modules/$kver
if [ ! -s "$mdir/modules.dep" ]; then
	say "depmod $kver"
	depmod -b "$kdir" "$kver" || die "depmod -b $kdir $kver failed"
fi

# --- 3. module load order --------------------------------------------------
# modules.dep: "kernel/a/b.ko: kernel/c.ko kernel/d.ko" (all dependencies,
# transitively). Depth-first, dependencies before the module.
mapfile -t order < <(awk -v want="${want_modules[*]}" '
	function norm(p) { sub(/.*\//, "", p); sub(/\.ko.*/, "", p); gsub(/-/, "_", p); return p }
	function visit(m,   n, i, d) {
		if (m in seen) return
		seen[m] = 1
		if (!(m in path)) { print "MISSING " m; bad = 1; return }
		n = split(deps[m], d, " ")
		for (i = n; i >= 1; i--) visit(norm(d[i]))
		print m, path[m]
	}
	{ p = $1; sub(/:$/, "", p); m = norm(p); path[m] = p; $1 = ""; deps[m] = $0 }
	END { n = split(want, w, " "); for (i = 1; i <= n; i++) visit(w[i]); exit bad }
' "$mdir/modules.dep") || die "cannot order modules: $(printf '%s\n' "${order[@]}" | grep MISSING | tr '\n' ' ')(not in $mdir/modules.dep)"
declare -A modpath
for i in "${!order[@]}"; do
	read -r m p <<<"${order[$i]}"
	order[$i]=$m
	modpath[$m]=$p
done

# --- 4. initramfs ----------------------------------------------------------
key=$( {
	echo "layout $layout"
	echo "kernel $kpkg $kverpkg $kver"
	printf '%s\n' "${order[@]}"
	sha256sum <"$here/vm-init.sh"
	sha256sum </bin/busybox
} | sha256sum | cut -c1-16)
initrd=$cache/initramfs/initramfs-$kver-$key.cpio
if [ ! -f "$initrd" ]; then
	say "building initramfs ($kver, ${#order[@]} modules, key $key)"
	stage=$(mktemp -d "$cache/stage.XXXXXX")
	trap 'rm -rf "$stage"' EXIT
	mkdir -p "$stage"/{bin,modules,proc,sys,dev,tmp,newroot,results}
	cp /bin/busybox "$stage/bin/busybox"
	ln -s busybox "$stage/bin/sh" # the other applets: busybox --install
	install -m 0755 "$here/vm-init.sh" "$stage/init"
	for m in "${order[@]}"; do
		src=$mdir/${modpath[$m]}
		case "$src" in
		*.ko) cp "$src" "$stage/modules/$m.ko" ;;
		*.ko.xz) xz -dc "$src" >"$stage/modules/$m.ko" ;;
		*.ko.zst) zstd -qdc "$src" >"$stage/modules/$m.ko" ;;
		*.ko.gz) gzip -dc "$src" >"$stage/modules/$m.ko" ;;
		*) die "unknown module file type: $src" ;;
		esac || die "cannot copy module $src"
	done
	printf '%s\n' "${order[@]}" >"$stage/modules.load"
	mkdir -p "$cache/initramfs"
	(cd "$stage" && find . -mindepth 1 | LC_ALL=C sort |
		cpio -o -H newc -R 0:0 --quiet) >"$initrd.tmp" ||
		die "cpio failed"
	mv "$initrd.tmp" "$initrd"
	rm -rf "$stage"
	trap - EXIT
	for old in "$cache"/initramfs/*.cpio; do
		[ "$old" = "$initrd" ] || rm -f "$old"
	done
fi

cat >"$cache/current.env.tmp" <<EOF
VM_KERNEL=$(printf %q "$boot_img")
VM_INITRD=$(printf %q "$initrd")
VM_KVER=$(printf %q "$kver")
VM_KPKG=$(printf %q "$kpkg $kverpkg")
VM_MODULES=$(printf %q "${order[*]}")
EOF
mv "$cache/current.env.tmp" "$cache/current.env"
say "ready: kernel $kver ($kpkg $kverpkg), initramfs $(basename "$initrd")"
