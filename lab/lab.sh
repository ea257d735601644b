#!/usr/bin/env bash
# The lab: simulated GPU nodes as privileged systemd podman containers, each with
# a sysfs fixture tree, driven by the same playbooks as a real cluster.
#   lab/lab.sh run     create/start the nodes, unpack fixtures, run playbooks/site.yml, print the report
#   lab/lab.sh up      create/start the nodes only
#   lab/lab.sh clean   remove the nodes
# Called by `make lab` / `make lab-clean`, which set up the venv and the base image first.
set -euo pipefail
cd "$(dirname "$0")/.."

image="${LAB_BASE_IMAGE:-localhost/gpunet-lab-base:bookworm}"
inventory="inventory/lab"
report_dir="${LAB_REPORT_DIR:-$PWD/rdma-report}"
manifest_dir="${LAB_MANIFEST_DIR:-$PWD/rdma-manifests}"

lab_nodes() {
  ansible-inventory -i "$inventory" --list \
    | python3 -c 'import json,sys; d=json.load(sys.stdin); print("\n".join(sorted(d["_meta"]["hostvars"])))'
}

up() {
  local node
  for node in $(lab_nodes); do
    if ! podman container exists "$node"; then
      # Explicit rlimits: this VM lacks CAP_SYS_RESOURCE and podman's defaults exceed its hard limits.
      podman run -d --name "$node" --hostname "$node" --label gpunet-lab=1 \
        --privileged --systemd=always \
        --ulimit nofile=1024:1024 --ulimit nproc=4096:4096 \
        "$image" /sbin/init >/dev/null
      echo "lab: created $node"
    elif [ "$(podman container inspect -f '{{.State.Running}}' "$node")" != "true" ]; then
      podman start "$node" >/dev/null
      echo "lab: started $node"
    fi
  done
  for node in $(lab_nodes); do
    for _ in $(seq 1 60); do
      state=$(podman exec "$node" systemctl is-system-running 2>/dev/null || true)
      case "$state" in running|degraded) break ;; esac
      sleep 1
    done
    echo "lab: $node systemd ${state:-unknown}"
  done
}

run() {
  up
  ansible-playbook -i "$inventory" lab/prepare.yml
  rc=0
  # The cluster stage renders (no API server here) and validates against the upstream CRDs.
  skip=()
  if [ ! -d "${GPUNET_CRDS_DIR:-}" ]; then
    echo "lab: GPUNET_CRDS_DIR is not set to the upstream CRDs (../shared/crds): skipping the cluster stage"
    skip=(-e gpunet_rdma_cluster=false)
  fi
  ansible-playbook -i "$inventory" playbooks/site.yml "${skip[@]}" -e "rdma_discovery_report_dir=$report_dir" \
    -e "network_operator_manifest_dir=$manifest_dir" -e "spiderpool_manifest_dir=$manifest_dir/spiderpool" \
    -e "rdma_validate_manifest_dir=$manifest_dir/validation" || rc=$?
  echo
  if [ -f "$report_dir/rdma-fleet-report.md" ]; then
    cat "$report_dir/rdma-fleet-report.md"
    echo
    echo "lab: fleet report written to $report_dir/rdma-fleet-report.md and $report_dir/rdma-fleet-report.json"
  fi
  for node in $(lab_nodes); do
    if podman exec "$node" test -f /etc/containerd/rdma-base-spec.json 2>/dev/null; then
      podman cp lab/memlock-probe.sh "$node:/opt/gpunet-lab/memlock-probe.sh"
      echo "lab: $node: a container started through containerd has ulimit -l = $(podman exec "$node" sh /opt/gpunet-lab/memlock-probe.sh) KiB"
    fi
  done
  if [ -d "$manifest_dir" ] && [ ${#skip[@]} -eq 0 ]; then
    echo "lab: Kubernetes manifests rendered to $manifest_dir (Network Operator; spiderpool/; validation/: pods, MPIJob, Volcano Job):"
    find "$manifest_dir" -type f -printf 'lab:   %P\n' | sort
  fi
  echo "lab: nodes left running for inspection (podman exec -it lab-a100-1 bash); remove them with: make lab-clean"
  return "$rc"
}

clean() {
  local ids
  mapfile -t ids < <(podman ps -aq --filter label=gpunet-lab=1 2>/dev/null || true)
  if [ "${#ids[@]}" -gt 0 ]; then
    podman rm -f "${ids[@]}" >/dev/null
    echo "lab: removed ${#ids[@]} lab nodes"
  fi
}

case "${1:-}" in
  up) up ;;
  run) run ;;
  clean) clean ;;
  *) echo "usage: $0 run|up|clean" >&2; exit 2 ;;
esac
