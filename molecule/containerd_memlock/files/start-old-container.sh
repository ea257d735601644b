#!/bin/sh
# Starts a container through containerd with the default spec (memlock from the
# daemon, before the role runs), standing in for a pod that was running already.
set -eu
mkdir -p /opt/memlock-test/rootfs/bin
cp /bin/busybox /opt/memlock-test/rootfs/bin/busybox
ctr oci spec > /opt/memlock-test/old-spec.json
python3 - <<'PY'
import json
spec = json.load(open('/opt/memlock-test/old-spec.json'))
spec['root'] = {'path': '/opt/memlock-test/rootfs', 'readonly': True}
spec['process']['args'] = ['/bin/busybox', 'sleep', '3600']
spec['process']['terminal'] = False
json.dump(spec, open('/opt/memlock-test/old-spec.json', 'w'))
PY
ctr --namespace k8s.io run -d --config /opt/memlock-test/old-spec.json old-pod-container
touch /opt/memlock-test/old-started
