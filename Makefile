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

.PHONY: help setup test lint ruff ansible-lint sanity core219 unit integration compat molecule demo demo-down bench bench-smoke build clean

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

compat: setup
	tools/dev/compat.sh

core219: setup
	tools/dev/core219.sh

molecule: setup
	tools/dev/molecule.sh

test: setup lint sanity core219 compat molecule unit integration bench-smoke

demo: setup
	tools/dev/demo.sh $(NODES)

demo-down: setup
	tools/pod/podctl down

bench: setup
	bench/run.sh

# the playbook benchmark on 2 nodes, one run each, checked (so that it cannot rot); not a figure to quote
bench-smoke: setup
	mkdir -p build
	bench/run.sh --only site --only window --scale-nodes 2 --repeat 1 --wait-idle 0 --json build/bench-smoke.json
	python3 bench/smoke_check.py build/bench-smoke.json

build: setup
	mkdir -p build
	ansible-galaxy collection build --force --output-path build/ .

clean:
	rm -rf build tests/output .ansible .ruff_cache
