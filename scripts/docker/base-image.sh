#!/usr/bin/env bash
# Makes a Node 20 base image without an image registry, laid out like the official node:20-bookworm-slim (node and npm
# in /usr/local, a `node` user with uid/gid 1000): a Debian bookworm minbase root made by debootstrap from Debian's
# packages, this machine's `node` binary and npm copied in, then `docker import`. Cached by tag: when the image exists it
# does nothing (FORCE=1 makes it again). Needs root, debootstrap, a running Docker daemon and Node 20 on this machine.
#
#   scripts/docker/base-image.sh [tag]        default tag: mercato-node20-bookworm-offline:local
#   DEBIAN_MIRROR=http://…/debian             the Debian mirror (default: the one in /etc/apt, else deb.debian.org)
#
# Then: docker build --build-arg BASE_IMAGE=mercato-node20-bookworm-offline:local …
set -euo pipefail

tag="${1:-mercato-node20-bookworm-offline:local}"
if [ -z "${FORCE:-}" ] && docker image inspect "$tag" >/dev/null 2>&1; then
  echo "base image $tag exists (FORCE=1 to make it again)"
  exit 0
fi

node_bin="$(command -v node)"
node_version="$("$node_bin" --version)"
case "$node_version" in
  v20.*) ;;
  *) echo "base-image: this machine's node is $node_version; the image needs Node 20" >&2; exit 1 ;;
esac
npm_dir="$(npm root -g)/npm"
[ -f "$npm_dir/bin/npm-cli.js" ] || { echo "base-image: npm not found at $npm_dir" >&2; exit 1; }
command -v debootstrap >/dev/null || { echo "base-image: debootstrap is not installed (apt-get install -y debootstrap)" >&2; exit 1; }

mirror="${DEBIAN_MIRROR:-}"
if [ -z "$mirror" ]; then
  mirror="$(grep -hoE '^(URIs:|deb) +https?://[^ ]+/debian/?( |$)' /etc/apt/sources.list /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list 2>/dev/null \
    | head -1 | awk '{print $2}' || true)"
  mirror="${mirror:-http://deb.debian.org/debian}"
fi

work="$(mktemp -d /tmp/mercato-base-image.XXXXXX)"
root="$work/rootfs"
unmount_all() { # debootstrap mounts /proc and /sys inside the root while it works; never remove through a mount
  for m in $(awk -v r="$root" 'index($2, r) == 1 { print $2 }' /proc/mounts | sort -r); do umount -l "$m" || true; done
}
cleanup() { unmount_all; rm -rf --one-file-system "$work"; }
trap cleanup EXIT
started=$(date +%s)
echo "base-image: debootstrap bookworm (minbase) from $mirror"
debootstrap --variant=minbase bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1 || {
  tail -30 "$work/debootstrap.log" >&2
  exit 1
}

echo "base-image: copying node $node_version and npm $(npm --version) into /usr/local"
install -m 0755 "$node_bin" "$root/usr/local/bin/node"
mkdir -p "$root/usr/local/lib/node_modules"
cp -a "$npm_dir" "$root/usr/local/lib/node_modules/npm"
ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"
chroot "$root" /bin/sh -c 'groupadd --gid 1000 node && useradd --uid 1000 --gid node --shell /bin/bash --create-home node'
chroot "$root" /usr/local/bin/node --version >/dev/null
# this machine's trust store, so npm inside a build trusts what the machine trusts (a proxy's own CA, if any): node
# reads it through NODE_EXTRA_CA_CERTS, on top of its bundled CAs
ca_env=()
if [ -s /etc/ssl/certs/ca-certificates.crt ]; then
  mkdir -p "$root/etc/ssl/certs"
  cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
  ca_env=(--change 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt')
fi

unmount_all
# what the official slim image also leaves out
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb "$root"/var/log/*.log

echo "base-image: docker import as $tag"
tar -C "$root" --numeric-owner --one-file-system -c . | docker import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change "ENV NODE_VERSION=${node_version#v}" \
  "${ca_env[@]}" \
  --change "LABEL org.opencontainers.image.description=\"Debian bookworm minbase with Node $node_version, made offline by scripts/docker/base-image.sh\"" \
  --change 'CMD ["node"]' \
  - "$tag" >/dev/null
echo "base-image: $tag made in $(( $(date +%s) - started ))s ($(docker image inspect -f '{{.Size}}' "$tag" | awk '{printf "%.0f MB", $1/1e6}'))"
