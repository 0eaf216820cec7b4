#!/usr/bin/env bash
# Builds the base image debian:bookworm-slim locally with debootstrap and
# docker import, for machines that reach Debian's package mirror but no
# container registry. Idempotent: an existing image is kept.
# Needs root, debootstrap and a running Docker engine.
set -euo pipefail
image=debian:bookworm-slim
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
if docker image inspect "$image" >/dev/null 2>&1; then
	echo "$image: present"
	exit 0
fi
rootfs=$(mktemp -d)
trap 'rm -rf "$rootfs"' EXIT
echo "$image: building with debootstrap from $mirror"
debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >/dev/null
# What the official slim image also drops: apt lists and docs.
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/*
tar -C "$rootfs" -c . | docker import -c 'CMD ["bash"]' - "$image" >/dev/null
echo "$image: built"
