#!/usr/bin/env bash
# Build the lab's base image (Debian bookworm with python3 and systemd) once,
# locally: no image registry is reachable, so the root file system comes from
# debootstrap and is imported into podman. Reused while the image exists.
set -euo pipefail

image="${LAB_BASE_IMAGE:-localhost/gpunet-lab-base:bookworm}"
mirror="${LAB_DEBIAN_MIRROR:-http://deb.debian.org/debian}"

if podman image exists "$image"; then
  echo "lab: base image $image already present"
  exit 0
fi

rootfs="$(mktemp -d /var/tmp/gpunet-lab-rootfs.XXXXXX)"
trap 'rm -rf "$rootfs"' EXIT

echo "lab: building $image with debootstrap from $mirror (about a minute)"
debootstrap --variant=minbase \
  --include=python3,python3-apt,systemd,systemd-sysv,iproute2,kmod,procps \
  bookworm "$rootfs" "$mirror" >/dev/null
# A container has no console login to wait for and no hardware clock.
rm -f "$rootfs"/etc/systemd/system/getty.target.wants/* \
      "$rootfs"/lib/systemd/system/multi-user.target.wants/getty.target
tar -C "$rootfs" -c . | podman import \
  --change 'CMD ["/sbin/init"]' --change 'STOPSIGNAL SIGRTMIN+3' - "$image" >/dev/null
echo "lab: imported $image"
