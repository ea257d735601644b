#!/usr/bin/env bash
# Build the lab's base image (Debian bookworm with python3, systemd and an SSH server)
# once, locally: no image registry is reachable, so the root file system comes from
# debootstrap and is imported into podman. Reused while an image built from the same
# package list exists (the list is the image's label gpunet.lab.packages).
set -euo pipefail

image="${LAB_BASE_IMAGE:-localhost/gpunet-lab-base:bookworm}"
mirror="${LAB_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
# openssh-server: the lab reaches its nodes over SSH, as Ansible reaches a real cluster.
# containerd, runc, busybox-static: the container runtime of most lab and molecule nodes, installed once here instead
# of by apt in every node of every scenario (lab/prepare.yml purges them where a node must have no containerd).
packages="python3,python3-apt,systemd,systemd-sysv,iproute2,kmod,procps,openssh-server,containerd,runc,busybox-static"

if podman image exists "$image"; then
  built="$(podman image inspect -f '{{ index .Labels "gpunet.lab.packages" }}' "$image" 2>/dev/null || true)"
  if [ "$built" = "$packages" ]; then
    echo "lab: base image $image already present"
    exit 0
  fi
  echo "lab: base image $image was built with other packages (${built:-unknown}): rebuilding"
fi

rootfs="$(mktemp -d /var/tmp/gpunet-lab-rootfs.XXXXXX)"
trap 'rm -rf "$rootfs"' EXIT

echo "lab: building $image with debootstrap from $mirror (about a minute)"
debootstrap --variant=minbase \
  --include="$packages" \
  bookworm "$rootfs" "$mirror" >/dev/null
# A container has no console login to wait for and no hardware clock.
rm -f "$rootfs"/etc/systemd/system/getty.target.wants/* \
      "$rootfs"/lib/systemd/system/multi-user.target.wants/getty.target
tar -C "$rootfs" -c . | podman import \
  --change 'CMD ["/sbin/init"]' --change 'STOPSIGNAL SIGRTMIN+3' \
  --change "LABEL gpunet.lab.packages=$packages" - "$image" >/dev/null
echo "lab: imported $image"
