# Two commands do everything: `make demo` and `make test`. Both create the virtualenv
# (.venv) on first use. `make demo` installs only what the demo runs (karpenter-core and the
# KWOK provider, runtime dependencies only); `make test` (and `make venv`) install all five
# packages with the development tools. One stamp file per package set records what is
# installed, so the two never fight over the venv: `make test` after `make demo` adds the
# rest, `make demo` after `make test` installs nothing. pip prints what it fetches and
# installs (no --quiet): a first run shows where the time goes.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
DEMO_STAMP := $(VENV)/.installed-demo
STAMP := $(VENV)/.installed-all
DEMO_PKGS := -e . -e plugins/kwok
PKGS := -e ".[dev]" -e plugins/kwok -e plugins/aws -e plugins/azure -e plugins/gcp
PIP := $(BIN)/python -m pip --disable-pip-version-check

.PHONY: venv demo test lint typecheck unit controlplane helm browser lock bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(DEMO_STAMP): pyproject.toml plugins/kwok/pyproject.toml | $(BIN)/python
	$(PIP) install $(DEMO_PKGS)
	touch $@

# everything the demo needs is part of this set, so it stamps both
$(STAMP): pyproject.toml plugins/*/pyproject.toml | $(BIN)/python
	$(PIP) install --upgrade pip
	$(PIP) install $(PKGS)
	touch $@ $(DEMO_STAMP)

venv: $(STAMP)

# The main job: the real controllers on a simulated cluster (virtual clock), then what the
# scheduler would do for a bundled set of manifests, including a pod that cannot fit.
demo: $(DEMO_STAMP)
	$(BIN)/karpenter simulate examples/quickstart.yaml
	@echo
	$(BIN)/karpenter schedule -f examples/schedule/ -o table
	@echo
	$(BIN)/karpenter validate -f examples/

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check karpenter_core plugins tests bench || true

typecheck: $(STAMP)
	$(BIN)/mypy

# The unit tier alone (pure tests: no Manager, no threads; docs/testing.md), in seconds.
unit: $(STAMP)
	$(BIN)/pytest -n auto -q tests/unit

# A real etcd + kube-apiserver (+ scheduler, controller-manager) built from their Go
# modules at pinned versions and cached under the user's cache directory: a cold build
# takes several minutes, a warm one milliseconds. The integration tests start it.
controlplane: $(STAMP)
	$(BIN)/python tests/integration/controlplane.py build

# helm, built from its Go module at a pinned version and cached the same way, renders the
# chart in tests.
helm: $(STAMP)
	$(BIN)/python tests/deploy/helmtool.py

# Chromium for the HTML report's browser test (tests/wallclock/sim/test_report_browser.py):
# installed with apt-get (Debian's chromium package) when none is found and this runs as
# root; otherwise, or when apt-get fails, a note, and the test skips saying why. It never
# fails the build. The names searched are the test's: $KARPENTER_CHROMIUM, chromium,
# chromium-browser, google-chrome, google-chrome-stable.
CHROMIUM_NAMES := chromium chromium-browser google-chrome google-chrome-stable
browser:
	@for c in $$KARPENTER_CHROMIUM $(CHROMIUM_NAMES); do \
		command -v "$$c" >/dev/null 2>&1 && exit 0; \
	done; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "make browser: installing chromium with apt-get for the HTML report's browser test"; \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } \
			|| echo "make browser: apt-get could not install chromium; the browser test will be skipped"; \
	else \
		echo "make browser: no chromium, and installing one needs root and apt-get; the browser test will be skipped"; \
	fi

# The Docker image's hash-locked requirements, re-resolved from PyPI with pip-tools' pip-compile
# (in a venv of its own, on the image's Python 3.11): after changing a dependency in a
# pyproject.toml (and requirements-image.in), or to take newer releases.
LOCK_PYTHON ?= python3.11
LOCK_VENV := build/lock-venv
lock:
	test -x $(LOCK_VENV)/bin/pip-compile || ( $(LOCK_PYTHON) -m venv $(LOCK_VENV) \
		&& $(LOCK_VENV)/bin/python -m pip install --quiet 'pip-tools>=7.4' )
	for n in image build; do \
		$(LOCK_VENV)/bin/pip-compile --quiet --upgrade --generate-hashes --strip-extras \
			--no-emit-index-url --no-emit-find-links \
			--output-file requirements-$$n.txt requirements-$$n.in || exit 1; \
	done

# Benchmarks print figures; none is part of the test suite.
bench: $(STAMP) controlplane
	$(BIN)/python bench/scheduling.py
	$(BIN)/python bench/e2e.py
	$(BIN)/python bench/serve.py

# The default suite, then the slow one (wheel builds, long end-to-end runs, the HTML report
# in a browser): everything.
# The real control plane is required here: without Go its tests fail instead of skipping.
test: $(STAMP) controlplane helm browser
	$(BIN)/ruff check .
	$(BIN)/mypy
	KARPENTER_REQUIRE_CONTROLPLANE=1 $(BIN)/pytest -n 2 -q
	KARPENTER_REQUIRE_CONTROLPLANE=1 $(BIN)/pytest -n 2 -q -m slow

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache
