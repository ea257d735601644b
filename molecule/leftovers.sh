#!/usr/bin/env bash
# Does a molecule scenario have something left from an interrupted run? Exit 0 (yes) or 1 (no).
#
# `make molecule-<scenario>` destroys a scenario first only when this says yes: the scenarios' test_sequence starts
# at create, because a destroy with nothing to destroy costs ~15 s of ansible-playbook per scenario on every clean
# run. Left behind means: molecule's state for the scenario says created (any checkout's ephemeral directory, kept
# under ~/.ansible/tmp/molecule.<project>.<scenario>), or a podman container of one of its platforms exists.
set -euo pipefail
scenario=${1:?usage: molecule/leftovers.sh SCENARIO}
here=$(cd "$(dirname "$0")" && pwd)
shopt -s nullglob
for state in "${HOME}"/.ansible/tmp/molecule.*."${scenario}"/state.yml; do
    grep -qx 'created: true' "$state" && exit 0
done
names=$("${PYTHON:-python3}" -c 'import sys, yaml; print("\n".join(p["name"] for p in yaml.safe_load(open(sys.argv[1])).get("platforms") or []))' \
    "${here}/${scenario}/molecule.yml")
[ -n "$names" ] || exit 1
existing=$(podman ps -a --format '{{.Names}}' 2>/dev/null || true)
grep -qxF -f <(printf '%s\n' "$names") <<<"$existing" && exit 0
exit 1
