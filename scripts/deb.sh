#!/usr/bin/env bash
# Build the Debian package with dpkg-deb (no extra tool to download): a release build of
# pfcswitch and pfcgen, the systemd unit, the configuration (a conffile) and the docs.
# Dependencies come from dpkg-shlibdeps (the librte-* runtime libraries) plus `dpdk`.
#
#   scripts/deb.sh                      # cargo build --release, then target/debian/pfcswitch_<v>_<arch>.deb
#   scripts/deb.sh --bin-dir DIR        # package the binaries already in DIR (no build)
#   scripts/deb.sh --out DIR            # write the .deb (and its staging tree) under DIR
#
# Prints the path of the package on its last line. docs/package.md says what it installs.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d "$HOME/.cargo/bin" ] && export PATH="$HOME/.cargo/bin:$PATH"

bin_dir=""
out=target/debian
while (($#)); do
    case "$1" in
        --bin-dir) bin_dir="$2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        *) echo "usage: scripts/deb.sh [--bin-dir DIR] [--out DIR]" >&2; exit 2 ;;
    esac
done
for tool in dpkg-deb dpkg-shlibdeps help2man; do
    command -v "$tool" >/dev/null || { echo "deb.sh: $tool missing (Debian packages dpkg, dpkg-dev, help2man)" >&2; exit 1; }
done
if [ -z "$bin_dir" ]; then
    cargo build --release --bins >&2
    bin_dir=target/release
fi

# Whoever ships the package names themselves: PFCSW_DEB_MAINTAINER="Name <address>".
maintainer=${PFCSW_DEB_MAINTAINER:-pfcswitch developers <pfcswitch@example.org>}
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
arch=$(dpkg --print-architecture)
name="pfcswitch_${version}_${arch}"
mkdir -p "$out"
out=$(cd "$out" && pwd)
root="$out/$name"
rm -rf "$root" "$out/$name.deb"

# Files.
install -d "$root/usr/bin" "$root/lib/systemd/system" "$root/etc/pfcswitch" \
    "$root/usr/share/doc/pfcswitch/docs" "$root/usr/share/doc/pfcswitch/examples" "$root/DEBIAN"
for b in pfcswitch pfcgen; do
    install -m 0755 "$bin_dir/$b" "$root/usr/bin/$b"
    # The release profile keeps line tables for backtraces; the package does not (as
    # dh_strip: symbols the dynamic linker does not need, .comment and .note).
    strip --strip-unneeded --remove-section=.comment --remove-section=.note "$root/usr/bin/$b"
done
# Manual pages from each command's --help (help2man).
install -d "$root/usr/share/man/man1"
for b in pfcswitch:"software top-of-rack switch on DPDK with a lossless Ethernet class" \
         pfcgen:"PFC-obeying traffic generator on DPDK"; do
    help2man --no-info --name="${b#*:}" "$root/usr/bin/${b%%:*}" | gzip -9n > "$root/usr/share/man/man1/${b%%:*}.1.gz"
    chmod 0644 "$root/usr/share/man/man1/${b%%:*}.1.gz"
done
install -m 0644 packaging/pfcswitch.service "$root/lib/systemd/system/pfcswitch.service"
install -m 0644 packaging/pfcswitch.toml "$root/etc/pfcswitch/pfcswitch.toml"
install -m 0644 README.md "$root/usr/share/doc/pfcswitch/README.md"
install -m 0644 docs/*.md "$root/usr/share/doc/pfcswitch/docs/"
install -m 0644 dpdk-config/*.toml "$root/usr/share/doc/pfcswitch/examples/"
# The configuration schema is the module documentation of src/config/mod.rs.
sed -n 's|^//! \{0,1\}||p' src/config/mod.rs > "$root/usr/share/doc/pfcswitch/config-schema.md"
chmod 0644 "$root/usr/share/doc/pfcswitch/config-schema.md"
year=$(git log -1 --format=%ad --date=format:%Y 2>/dev/null || date +%Y)
cat > "$root/usr/share/doc/pfcswitch/copyright" <<COPYRIGHT
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: pfcswitch

Files: *
Copyright: $year the pfcswitch developers
License: MIT OR Apache-2.0
COPYRIGHT
chmod 0644 "$root/usr/share/doc/pfcswitch/copyright"
# A native package's changelog, in Debian's format: one entry for this build, its date the
# commit's (so two builds of one commit are the same file).
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
when=$(git log -1 --format=%aD 2>/dev/null || date -R)
{
    echo "pfcswitch ($version) unstable; urgency=medium"
    echo
    echo "  * Built by scripts/deb.sh from commit $commit."
    echo
    echo " -- $maintainer  $when"
} | gzip -9n > "$root/usr/share/doc/pfcswitch/changelog.gz"
chmod 0644 "$root/usr/share/doc/pfcswitch/changelog.gz"

# Dependencies: the shared libraries the binaries link (librte-*, libc), by dpkg-shlibdeps,
# which reads a debian/control: give it a minimal one in a scratch directory.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir "$scratch/debian"
printf 'Source: pfcswitch\n\nPackage: pfcswitch\nArchitecture: any\n' > "$scratch/debian/control"
shlibs=$(cd "$scratch" && dpkg-shlibdeps -O "$root/usr/bin/pfcswitch" "$root/usr/bin/pfcgen" 2>/dev/null |
    sed -n 's/^shlibs:Depends=//p')
[ -n "$shlibs" ] || { echo "deb.sh: dpkg-shlibdeps found no dependencies" >&2; exit 1; }

# Control files.
size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
cat > "$root/DEBIAN/control" <<CONTROL
Package: pfcswitch
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $size
Depends: $shlibs, dpdk
Suggests: driverctl
Section: net
Priority: optional
Homepage: https://github.com/pfcswitch/pfcswitch
Description: software top-of-rack switch on DPDK with a lossless Ethernet class
 pfcswitch forwards between DPDK ports with 802.1Qbb Priority Flow Control, a
 shared-buffer MMU with Dynamic Threshold and headroom sized from link speed,
 cable length and MTU. It routes with the Linux kernel as control plane.
 .
 This package installs pfcswitch and the pfcgen traffic generator, the
 pfcswitch.service systemd unit and /etc/pfcswitch/pfcswitch.toml.
CONTROL
echo /etc/pfcswitch/pfcswitch.toml > "$root/DEBIAN/conffiles"
install -m 0755 packaging/deb/postinst packaging/deb/prerm packaging/deb/postrm "$root/DEBIAN/"
(cd "$root" && find . -path ./DEBIAN -prune -o -path ./etc -prune -o -type f -printf '%P\0' |
    sort -z | xargs -0 md5sum) > "$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/control" "$root/DEBIAN/conffiles" "$root/DEBIAN/md5sums"

dpkg-deb --root-owner-group -Zxz --build "$root" "$out/$name.deb" >&2
echo "$out/$name.deb"
