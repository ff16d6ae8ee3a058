# Basalt: the two commands of the README, plus developer conveniences.
#   make test     install missing packages, configure, build, run the default test suite
#   make cluster  install missing packages, build, start a local cluster with a demo table
# Build directories live inside the clone (ignored by git); ccache keeps its cache outside it.

BUILD_DIR ?= build
CMAKE_FLAGS ?=
CTEST_FLAGS ?= --output-on-failure --timeout 600
# Default suite: unit tests, cluster tests (real daemon processes, tests/) and the install test
# (find_package(Basalt) from an outside project). Longer stress and soak tests carry other labels.
CTEST_LABELS ?= unit|cluster|install
JOBS ?= $(shell nproc)
# Tests run three per core: most cluster tests wait on timeouts, elections and fsyncs (two per core
# left the cores 25-30% idle; four per core saturated them; docs/testing.md).
TEST_JOBS ?= $(shell echo $$(( $$(nproc) * 3 )))
# `make perf`: full (the issue's sizes, ~6 min for W1-W5 plus W6) or small (seconds; what the default suite runs).
PERF_SCALE ?= full
TSBS_SCALE ?= full

.PHONY: all deps configure build test cluster chaos test-all asan tsan tsa bench perf tsbs format clean

all: build

deps:
	@scripts/install-deps.sh

$(BUILD_DIR)/build.ninja:
	cmake -S . -B $(BUILD_DIR) -G Ninja $(CMAKE_FLAGS)

configure: deps $(BUILD_DIR)/build.ninja

build: configure
	ninja -C $(BUILD_DIR) -j $(JOBS)

test: build
	cd $(BUILD_DIR) && ctest $(CTEST_FLAGS) -j $(TEST_JOBS) -L '$(CTEST_LABELS)'

# A local cluster (1 master, 3 tablet servers) in .basalt-cluster/ with a demo table
# (scripts/demo-cluster.sh prints how to use and stop it).
cluster: build
	BIN_DIR=$(BUILD_DIR)/bin scripts/demo-cluster.sh

# The 30-minute chaos run with 3 masters (tests/chaos_test.cc; docs/testing.md "Chaos runs").
# BASALT_CHAOS_SEED=<seed> replays a run; BASALT_CHAOS_SECONDS changes its length.
chaos: build
	cd $(BUILD_DIR) && ctest $(CTEST_FLAGS) -L chaos

# Every test, whatever its label.
test-all: build
	cd $(BUILD_DIR) && ctest $(CTEST_FLAGS) -j $(TEST_JOBS)

# Sanitizer builds, each in its own directory.
asan: deps
	$(MAKE) test BUILD_DIR=build-asan CMAKE_FLAGS="-DBASALT_SANITIZE='address;undefined' -DCMAKE_BUILD_TYPE=Debug -DBASALT_BUILD_BENCHMARKS=OFF"

tsan: deps
	$(MAKE) test BUILD_DIR=build-tsan CMAKE_FLAGS="-DBASALT_SANITIZE=thread -DBASALT_BUILD_BENCHMARKS=OFF"

# clang-14 with -Wthread-safety -Werror=thread-safety: checks the ABSL_GUARDED_BY annotations
# (g++ ignores them). Compile only: thread_safety_check builds the object file of every source of
# ours (benchmarks included) and links only the three programs the cluster tests start; build
# type None compiles without -O or -g. It compiles file by file (no unity build), so it also
# catches a source that compiles only next to the other files of its unity batch (a missing
# include, a name it takes from a neighbour).
tsa: deps
	CC=clang-14 CXX=clang++-14 cmake -S . -B build-tsa -G Ninja -DBASALT_THREAD_SAFETY_ANALYSIS=ON \
	  -DCMAKE_BUILD_TYPE=None -DBASALT_BUILD_BENCHMARKS=ON -DBASALT_UNITY_BUILD=OFF
	ninja -C build-tsa -j $(JOBS) thread_safety_check

# Every benchmark prints JSON: Google Benchmark programs (common_bench) with
# --benchmark_format=json, the others one JSON object per line by themselves.
bench: build
	$(BUILD_DIR)/bench/common_bench --benchmark_format=json
	@for b in $(BUILD_DIR)/bench/*_bench; do \
	  case $$b in */common_bench) ;; *) echo "== $$b"; $$b ;; esac; done

# The workloads W1-W6 of docs/performance.md against fresh local clusters (bench/perf.py): progress
# on stderr, one JSON object with every figure and the machine on stdout.
perf: build
	python3 bench/perf.py --scale=$(PERF_SCALE) --bin_dir=$(BUILD_DIR)/bin

tsbs: build
	python3 bench/tsbs/run.py --scale=$(TSBS_SCALE) --bin_dir=$(BUILD_DIR)/bin

format:
	@git ls-files '*.h' '*.cc' | xargs clang-format -i

clean:
	rm -rf build build-asan build-tsan build-tsa
