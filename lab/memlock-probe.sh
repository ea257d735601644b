#!/bin/sh
# Runs inside a lab node: starts a busybox container through the node's real
# containerd with the base runtime spec the containerd_memlock role wrote, and
# prints the memlock limit the container got (`ulimit -l`, KiB).
set -eu
spec=${1:-/etc/containerd/rdma-base-spec.json}
work=/opt/gpunet-lab/memlock-probe
mkdir -p "$work/rootfs/bin"
[ -x "$work/rootfs/bin/busybox" ] || cp /bin/busybox "$work/rootfs/bin/busybox"
python3 - "$spec" "$work" <<'PY'
import json, sys
spec = json.load(open(sys.argv[1]))
spec['root'] = {'path': sys.argv[2] + '/rootfs', 'readonly': True}
spec['process']['args'] = ['/bin/busybox', 'sh', '-c', 'ulimit -l']
spec['process']['terminal'] = False
json.dump(spec, open(sys.argv[2] + '/run-spec.json', 'w'))
PY
ctr run --rm --config "$work/run-spec.json" "gpunet-memlock-probe-$$"
