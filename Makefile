# npuops.ascend developer targets. `make demo` and `make test` do all set-up on a fresh machine.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

REPO := $(CURDIR)
VENV := $(REPO)/.venv
# This checkout's own ansible_collections root, outside the repository (see tools/dev/collections_root.sh);
# set NPUOPS_COLLECTIONS_ROOT or COLLECTIONS_ROOT to use another one.
ifeq ($(origin COLLECTIONS_ROOT),undefined)
COLLECTIONS_ROOT := $(shell "$(REPO)/tools/dev/collections_root.sh" "$(REPO)")
endif
ifeq ($(COLLECTIONS_ROOT),)
$(error tools/dev/collections_root.sh printed no collections root)
endif
NODES ?= 4

export PATH := $(VENV)/bin:$(PATH)
export NPUOPS_COLLECTIONS_ROOT := $(COLLECTIONS_ROOT)
export ANSIBLE_COLLECTIONS_PATH := $(COLLECTIONS_ROOT)
export ANSIBLE_NOCOLOR := 1
export NO_COLOR := 1
export PY_COLORS := 0
export LC_ALL := C.UTF-8

.PHONY: help setup test lint ruff ansible-lint sanity core219 unit integration integration-1 integration-2 compat molecule-1 molecule-2 molecule demo demo-down bench bench-smoke build clean

help:
	@echo "make demo    - set up, bring up a 4-node simulated PoD, run playbooks/site.yml, print the stage report"
	@echo "make test    - every check: ruff, ansible-lint, ansible-test sanity, molecule, pytest"
	@echo "make setup   - system packages + .venv (idempotent)"
	@echo "make lint | sanity | core219 | unit | integration | compat | molecule | bench | bench-smoke | build"

setup:
	@tools/dev/setup.sh

ruff: setup
	ruff check .

ansible-lint: setup
	ansible-lint --profile production

lint: ruff ansible-lint

sanity: setup
	tools/dev/sanity.sh

unit: setup
	pytest -q tests/unit tests/sim

integration: setup
	pytest -q tests/integration

# make test runs the integration tests in two lanes side by side (tools/dev/test.sh), each with a session PoD of its own:
# the second lane has these files (the modules with PoDs of their own, and the runs in parts), the first the rest, each
# in the order of the file names.
INTEGRATION_2 = tests/integration/test_audit.py tests/integration/test_diagnose.py tests/integration/test_link_quality.py tests/integration/test_lost_nodes.py \
	tests/integration/test_measure_each_stage.py tests/integration/test_module_examples.py tests/integration/test_products.py \
	tests/integration/test_run_in_parts.py tests/integration/test_stage4_parts.py tests/integration/test_window_domains.py

integration-1: setup
	pytest -q --durations=30 $(filter-out $(INTEGRATION_2),$(sort $(wildcard tests/integration/test_*.py)))

integration-2: setup
	NPUOPS_IT_PREFIX=$${NPUOPS_IT_PREFIX_2:-127.0.18} pytest -q --durations=30 $(INTEGRATION_2)

compat: setup
	tools/dev/compat.sh

core219: setup
	tools/dev/core219.sh

molecule: setup
	tools/dev/molecule.sh

# make test runs the molecule scenarios in two lanes side by side (tools/dev/test.sh), each scenario on addresses of its own
MOLECULE_1 = a3 check_mode default
MOLECULE_2 = faults roce_change_window

molecule-1: setup
	tools/dev/molecule.sh $(MOLECULE_1)

molecule-2: setup
	tools/dev/molecule.sh $(MOLECULE_2)

# every check, in six lanes side by side (tools/dev/test.sh: checks, molecule-1, molecule-2, integration-1, integration-2,
# bench); each target also runs alone
test: setup
	tools/dev/test.sh

demo: setup
	tools/dev/demo.sh $(NODES)

demo-down: setup
	tools/pod/podctl down

bench: setup
	bench/run.sh

# the playbook benchmark on 2 nodes, one run each, checked (so that it cannot rot); not a figure to quote. Its health
# part (health_check.yml against the check script over pdsh) is the lightest that runs the whole harness; the site
# and window parts run by hand (bench/run.sh --only site, docs/performance.md)
bench-smoke: setup
	mkdir -p build
	bench/run.sh --only health --scale-nodes 2 --repeat 1 --wait-idle 0 --json build/bench-smoke.json
	python3 bench/smoke_check.py --part health build/bench-smoke.json

build: setup
	mkdir -p build
	ansible-galaxy collection build --force --output-path build/ .

# The build context of the execution environment (execution-environment.yml) in build/ee-context, with
# the tarball of `make build`. Needs no container engine; building the image does (docs/awx.md).
.PHONY: ee-context
ee-context: build
	@version=$$(sed -n 's/^version: *//p' galaxy.yml); \
	tarball=build/npuops-ascend-$$version.tar.gz; \
	others=$$(ls build/npuops-ascend-*.tar.gz | grep -vxF "$$tarball" || true); \
	if [ -n "$$others" ]; then echo "ee-context: remove the tarballs of other versions from build/: $$others" >&2; exit 1; fi; \
	extra=$$(tar -tzf "$$tarball" | cut -d/ -f1 | sort -u | grep -E '^(\.venv|npuops-reports$$)' || true); \
	if [ -n "$$extra" ]; then echo "ee-context: WARNING: $$tarball holds working-tree files (add them to build_ignore in galaxy.yml):" $$extra >&2; fi; \
	rm -rf build/ee-context; \
	ansible-builder create --file execution-environment.yml --context build/ee-context --output-filename Containerfile; \
	test -f build/ee-context/Containerfile; \
	test -f "build/ee-context/_build/collections/npuops-ascend-$$version.tar.gz"; \
	grep -q 'ansible-galaxy collection install .*/npuops-ascend-' build/ee-context/Containerfile; \
	echo "ee-context: build/ee-context/Containerfile installs npuops.ascend $$version; build the image with" \
	  "ansible-builder build --file execution-environment.yml --context build/ee-context -t npuops-ascend-ee:$$version"

# antsibull-changelog: changelogs/config.yaml, every fragment and changelogs/changelog.yaml (about a second)
.PHONY: changelog-lint
# The module, filter and role reference under docs/reference, generated from the collection (tools/dev/gen_docs.py).
.PHONY: docs docs-check
docs: setup
	$(VENV)/bin/python tools/dev/gen_docs.py

docs-check: setup
	$(VENV)/bin/python tools/dev/gen_docs.py --check

changelog-lint: setup
	antsibull-changelog lint
	antsibull-changelog lint-changelog-yaml changelogs/changelog.yaml

# galaxy-importer, the checks Galaxy runs on an uploaded collection, on the tarball of `make build`, offline:
# the ansible-doc of every plugin and the changelog. Its ansible-test run stays off (it needs a container engine
# and the default test image; `make sanity` runs ansible-test sanity here), and so does its ansible-lint run
# (`make lint` runs ansible-lint with the stricter production profile on the same files). galaxy-importer gets its own venv under build/ with the ansible-core and ansible-lint pins of
# requirements-dev.txt. A WARNING or ERROR line of the importer fails the target; the log and
# importer_result.json are left in build/ (docs/development.md, section Galaxy).
GALAXY_IMPORTER_VERSION := 0.4.44
GALAXY_IMPORTER_VENV := $(REPO)/build/galaxy-importer-venv
.PHONY: galaxy-importer
galaxy-importer: build
	@want="$(GALAXY_IMPORTER_VERSION) $$(sha256sum requirements-dev.txt | cut -c1-16)"; \
	if [ "$$(cat '$(GALAXY_IMPORTER_VENV)/.npuops-setup' 2>/dev/null)" != "$$want" ]; then \
	  echo "galaxy-importer: installing galaxy-importer $(GALAXY_IMPORTER_VERSION) into $(GALAXY_IMPORTER_VENV)"; \
	  rm -rf '$(GALAXY_IMPORTER_VENV)'; \
	  '$(VENV)/bin/python' -m venv '$(GALAXY_IMPORTER_VENV)'; \
	  '$(GALAXY_IMPORTER_VENV)/bin/pip' install -q --disable-pip-version-check -c requirements-dev.txt \
	    'galaxy-importer==$(GALAXY_IMPORTER_VERSION)'; \
	  echo "$$want" > '$(GALAXY_IMPORTER_VENV)/.npuops-setup'; \
	fi
	@version=$$(sed -n 's/^version: *//p' galaxy.yml); \
	cd build; rm -f importer_result.json galaxy-importer.log; \
	env PATH='$(GALAXY_IMPORTER_VENV)/bin':"$$PATH" GALAXY_IMPORTER_RUN_ANSIBLE_TEST=false \
	  GALAXY_IMPORTER_RUN_ANSIBLE_DOC=true GALAXY_IMPORTER_CHECK_CHANGELOG=true \
	  GALAXY_IMPORTER_RUN_ANSIBLE_LINT=false \
	  '$(GALAXY_IMPORTER_VENV)/bin/python' -m galaxy_importer.main "npuops-ascend-$$version.tar.gz" \
	  | tee galaxy-importer.log; \
	test -s importer_result.json; \
	if grep -E '^(WARNING|ERROR|CRITICAL):' galaxy-importer.log >/dev/null; then \
	  echo "galaxy-importer: build/galaxy-importer.log has warnings or errors (above)" >&2; exit 1; \
	fi; \
	'$(GALAXY_IMPORTER_VENV)/bin/python' -c 'import json, sys; r = json.load(open(sys.argv[1])); \
	  bare = sorted("%s %s" % (c["content_type"], c["content_name"]) for c in r["docs_blob"]["contents"] \
	                if c["content_type"] not in ("role", "playbook", "module_utils", "doc_fragments", "action") \
	                and not c["doc_strings"]); \
	  print("galaxy-importer: listed without documentation (tests/unit/plugins/filter/test_plugin_docs.py):", \
	        ", ".join(bare)) if bare else None' importer_result.json; \
	echo "galaxy-importer: npuops-ascend-$$version.tar.gz imports cleanly (build/importer_result.json)"

clean:
	rm -rf build tests/output .ansible .ruff_cache
