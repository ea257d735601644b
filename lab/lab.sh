#!/usr/bin/env bash
# The lab: simulated GPU nodes as privileged systemd podman containers, each with
# a sysfs fixture tree, driven by the same playbooks as a real cluster, over SSH.
#   lab/lab.sh run     create/start the nodes, unpack fixtures, run playbooks/site.yml, print the report
#   lab/lab.sh up      create/start the nodes only
#   lab/lab.sh clean   remove the nodes
# LAB_SCALE=N starts N times the nodes of every group of inventory/lab/hosts.yml (lab-v100-1 .. lab-v100-2N, ...).
# Called by `make lab` / `make lab-clean`, which set up the venv and the base image first.
set -euo pipefail
cd "$(dirname "$0")/.."

image="${LAB_BASE_IMAGE:-localhost/gpunet-lab-base:bookworm}"
inventory="inventory/lab"
report_dir="${LAB_REPORT_DIR:-$PWD/rdma-report}"
manifest_dir="${LAB_MANIFEST_DIR:-$PWD/rdma-manifests}"
scale="${LAB_SCALE:-1}"
# Written by `up`: every node with its address and the SSH settings (read with the rest of inventory/lab).
generated="$inventory/nodes.generated.yml"
ssh_key="$PWD/.build/lab/ssh/id_ed25519"
# The bond-managed node: as on the A100 nodes of the InfiniBand field report, it is reached over bond0, which runs
# over a ConnectX port (lab/hardware/a100.yml links bond0 to mlx5_bond_0's netdev in the sysfs fixture). Podman
# gives it a second network whose interface inside the node is named bond0; Ansible connects to that address.
bond_node="${LAB_BOND_NODE:-lab-a100-2}"
bond_network=gpunet-lab-mgmt
bond_subnet=10.96.83.0/24
bond_address=10.96.83.26

node_address() {
  if [ "$1" = "$bond_node" ]; then
    echo "$bond_address"
  else
    podman container inspect -f '{{.NetworkSettings.IPAddress}}' "$1"
  fi
}

lab_nodes() {
  python3 lab/lab_inventory.py nodes --scale "$scale"
}

# Ansible reaches the nodes over SSH (key login as root, one ControlPersist connection per node),
# as it reaches a real cluster; podman only creates them.
ssh_setup() {
  local node address addresses
  mkdir -p "$(dirname "$ssh_key")"
  [ -f "$ssh_key" ] || ssh-keygen -q -t ed25519 -N '' -C gpunet-lab -f "$ssh_key"
  addresses="$(mktemp)"
  echo '{}' > "$addresses"
  for node in $(lab_nodes); do
    podman exec "$node" install -d -m 0700 /root/.ssh
    podman cp "$ssh_key.pub" "$node:/root/.ssh/authorized_keys"
    podman exec "$node" chmod 0600 /root/.ssh/authorized_keys
    podman exec "$node" systemctl start ssh
    address="$(node_address "$node")"
    python3 -c 'import json,sys; p,n,a=sys.argv[1:]; d=json.load(open(p)); d[n]=a; json.dump(d,open(p,"w"))' \
      "$addresses" "$node" "$address"
  done
  python3 lab/lab_inventory.py write --scale "$scale" --addresses "$addresses" --key "$ssh_key" --out "$generated"
  rm -f "$addresses"
  for node in $(lab_nodes); do
    address="$(node_address "$node")"
    for _ in $(seq 1 30); do
      if ssh -i "$ssh_key" -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
          -o LogLevel=ERROR -o ConnectTimeout=2 "root@$address" true 2>/dev/null; then
        break
      fi
      sleep 1
    done
  done
  echo "lab: $(lab_nodes | wc -l) nodes reachable over SSH ($generated)"
}

up() {
  local node wanted id name
  wanted="$(lab_nodes)"
  # Nodes of a larger LAB_SCALE than this one's go away, so that the lab is what the inventory says.
  for id in $(podman ps -aq --filter label=gpunet-lab=1 2>/dev/null || true); do
    name="$(podman container inspect -f '{{.Name}}' "$id")"
    if ! grep -qx "$name" <<< "$wanted"; then
      podman rm -f "$id" >/dev/null
      echo "lab: removed $name (not in a LAB_SCALE=$scale lab)"
    fi
  done
  for node in $wanted; do
    networks=()
    if [ "$node" = "$bond_node" ]; then
      podman network exists "$bond_network" || podman network create --subnet "$bond_subnet" "$bond_network" >/dev/null
      networks=(--network podman --network "$bond_network:ip=$bond_address,interface_name=bond0")
      # A node made before it was bond-managed is made again.
      if podman container exists "$node" && ! podman container inspect -f '{{json .NetworkSettings.Networks}}' "$node" \
          | grep -q "\"$bond_network\""; then
        podman rm -f "$node" >/dev/null
      fi
    fi
    if ! podman container exists "$node"; then
      # Explicit rlimits: this VM lacks CAP_SYS_RESOURCE and podman's defaults exceed its hard limits.
      podman run -d --name "$node" --hostname "$node" --label gpunet-lab=1 \
        --privileged --systemd=always "${networks[@]}" \
        --ulimit nofile=1024:1024 --ulimit nproc=4096:4096 \
        "$image" /sbin/init >/dev/null
      echo "lab: created $node"
    elif [ "$(podman container inspect -f '{{.State.Running}}' "$node")" != "true" ]; then
      podman start "$node" >/dev/null
      echo "lab: started $node"
    fi
  done
  for node in $wanted; do
    for _ in $(seq 1 60); do
      state=$(podman exec "$node" systemctl is-system-running 2>/dev/null || true)
      case "$state" in running|degraded) break ;; esac
      sleep 1
    done
    echo "lab: $node systemd ${state:-unknown}"
  done
  ssh_setup
}

run() {
  up
  ansible-playbook -i "$inventory" lab/prepare.yml
  rc=0
  # The cluster stage renders (no API server here) and validates against the upstream CRDs, which the
  # repository carries in tests/crds (GPUNET_CRDS_DIR points elsewhere only when set on purpose).
  export GPUNET_CRDS_DIR="${GPUNET_CRDS_DIR:-$PWD/tests/crds}"
  if [ ! -d "$GPUNET_CRDS_DIR" ]; then
    echo "lab: GPUNET_CRDS_DIR=$GPUNET_CRDS_DIR is not a directory; unset it to use the repository's tests/crds" >&2
    return 1
  fi
  ansible-playbook -i "$inventory" playbooks/site.yml -e "rdma_discovery_report_dir=$report_dir" \
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
  if [ -d "$manifest_dir" ]; then
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
  rm -f "$generated"
  if podman network exists "$bond_network" 2>/dev/null; then
    podman network rm "$bond_network" >/dev/null
  fi
}

case "${1:-}" in
  up) up ;;
  run) run ;;
  clean) clean ;;
  *) echo "usage: $0 run|up|clean" >&2; exit 2 ;;
esac
