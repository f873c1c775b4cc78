# fleetsim: the two commands of the quick start, and the rest.
#
#   make run     install what is missing, build the fleetsim executable alone
#                (no tests, benchmarks or CUDA module), run scenarios/quickstart.json
#   make test    install what is missing (also the tests' own packages:
#                TEST_PACKAGES, see deps-test), build, run every test, then the
#                sanitizer build (clang, at -O1, so its suite stays quick) and
#                its tests (line tables only, -g1: enough for the sanitizers'
#                stack traces, half the compile time of full debug info),
#                then each fuzz target for 15 s, built in the same tree (the
#                libraries compiled once for both: 11 min on 2 cores, where
#                GCC's sanitizer build alone took 20 and the fuzz build its own)
#   make bench   Google Benchmarks + the 1M-request scenario (wall, RSS, rates),
#                the planner on 1,000 configurations (R = 1 and R = 5),
#                calibration figures, the Vidur transfer errors, the engine
#                profiles' errors on published serving figures, and a fit of
#                three measured SGLang batches judged on 91 others
#   make fuzz    each fuzz target for 60 s
#
# make run and the plain build need only DEBIAN_PACKAGES (make deps); the
# release build's tests also need TEST_PACKAGES (make deps-test): Open MPI,
# Chromium with Node and npm (the HTML report check, tests/browser/), and
# Debian's Jupyter, pandas and matplotlib (/usr/bin/jupyter, /usr/bin/python3;
# a python3 earlier on PATH is not used). As root, what is missing is
# installed with apt-get; otherwise the apt-get line to run is printed.
#
# Build folders: build/ (release + CUDA when nvcc is found), build-asan/,
# build-fuzz/ (clang).

JOBS      ?= $(shell nproc)
BUILD     ?= build
CMAKE_ARGS ?=
FUZZ_SECONDS ?= 15

DEBIAN_PACKAGES := cmake make g++ clang-14 libclang-rt-14-dev libboost-graph-dev libeigen3-dev \
                   nlohmann-json3-dev libcli11-dev libgtest-dev libbenchmark-dev
# What the release build's tests need beyond DEBIAN_PACKAGES (make deps-test).
# Node and npm come from Debian's nodejs and npm only when no npm is on PATH:
# a Node from elsewhere (NodeSource's nodejs bundles npm) conflicts with
# Debian's npm package.
TEST_PACKAGES := openmpi-bin libopenmpi-dev chromium jupyter-core jupyter-nbconvert python3-notebook \
                 python3-nbconvert python3-pandas python3-matplotlib
NODE_PACKAGES := $(if $(shell command -v npm 2>/dev/null),,nodejs npm)
FUZZERS := fuzz_scenario fuzz_trace_azure fuzz_trace_mooncake fuzz_trace_csv fuzz_trace_burstgpt \
           fuzz_trace_splitwise fuzz_trace_servegen fuzz_profile fuzz_engine_profile fuzz_observe fuzz_plan

.PHONY: deps deps-test configure build build-fleetsim run test test-unit test-asan test-fuzz fuzz bench clean

# $(call install_missing,PACKAGES,WHO): installs (as root) the Debian
# packages of PACKAGES that are not installed, or says which are missing.
define install_missing
	@missing=""; for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing:$$missing"; \
	    (apt-get update -qq || true) && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	  else \
	    echo "$(2) need these Debian packages:$$missing"; \
	    echo "run as root: apt-get install$$missing"; exit 1; \
	  fi; \
	fi
endef

deps:
	$(call install_missing,$(DEBIAN_PACKAGES),fleetsim's build and run)

deps-test:
	$(call install_missing,$(TEST_PACKAGES) $(NODE_PACKAGES),fleetsim's tests)

configure: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_ARGS)

build: configure
	@echo "make build: starts at $$(date -u +%T)"
	cmake --build $(BUILD) -j $(JOBS)

# Just the executable: a first run needs neither the tests nor nvcc's work on
# the CUDA backend (libfleetsim_cuda.so, loaded only by GPU commands; make
# build makes it).
build-fleetsim: configure
	cmake --build $(BUILD) -j $(JOBS) --target fleetsim

run: build-fleetsim
	./$(BUILD)/fleetsim run scenarios/quickstart.json --out out/quickstart

# deps-test first: configuring the tests may look for what it installs (MPI).
test-unit: deps-test build
	@echo "make test-unit: tests start at $$(date -u +%T)"
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	@echo "make test-unit: done at $$(date -u +%T)"

# The sanitizer build is clang's, with the fuzz targets beside the suites
# (FLEETSIM_FUZZ adds libFuzzer's coverage instrumentation): a tree
# configured with another compiler is started afresh.
test-asan: deps
	@grep -qs 'CMAKE_CXX_COMPILER:[A-Z]*=.*clang++-14' build-asan/CMakeCache.txt || rm -rf build-asan
	CC=clang-14 CXX=clang++-14 cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-g1 -O1" \
	  -DFLEETSIM_SANITIZE=ON -DFLEETSIM_FUZZ=ON -DFLEETSIM_CUDA=OFF -DFLEETSIM_MPI=OFF -DFLEETSIM_BENCH=OFF
	@echo "make test-asan: build starts at $$(date -u +%T)"
	cmake --build build-asan -j $(JOBS)
	@echo "make test-asan: tests start at $$(date -u +%T)"
	cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j $(JOBS)
	@echo "make test-asan: done at $$(date -u +%T)"

build-fuzz: deps
	CC=clang-14 CXX=clang++-14 cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFLEETSIM_FUZZ=ON -DFLEETSIM_MPI=OFF \
	  -DFLEETSIM_CUDA=OFF -DFLEETSIM_TESTS=OFF -DFLEETSIM_BENCH=OFF
	cmake --build build-fuzz -j $(JOBS) --target $(FUZZERS)

# $(call run_fuzzers,TREE): each fuzz target of TREE for FUZZ_SECONDS.
define run_fuzzers
	@echo "fuzzing ($(1)) starts at $$(date -u +%T)"
	@set -e; for f in $(FUZZERS); do \
	  mkdir -p $(1)/corpus/$$f; \
	  echo "fuzzing $$f for $(FUZZ_SECONDS) s"; \
	  ./$(1)/tests/fuzz/$$f -max_total_time=$(FUZZ_SECONDS) -print_final_stats=0 -artifact_prefix=$(1)/ \
	    $(1)/corpus/$$f tests/fuzz/corpus/$$f 2>$(1)/$$f.log || { tail -40 $(1)/$$f.log; exit 1; }; \
	  grep -E "^#[0-9]+.*DONE" $(1)/$$f.log | tail -1; \
	done
endef

# The fuzz targets alone, at -O2 (make fuzz).
test-fuzz: build-fuzz
	$(call run_fuzzers,build-fuzz)

fuzz:
	$(MAKE) test-fuzz FUZZ_SECONDS=60

test: test-unit test-asan
	$(call run_fuzzers,build-asan)
	@echo "make test: all stages passed at $$(date -u +%T)"

bench: build
	./$(BUILD)/tests/bench/engine_bench --benchmark_min_time=0.2
	./$(BUILD)/tests/bench/perf_model_bench --benchmark_min_time=0.2
	tools/bench.sh $(BUILD)
	tools/calibrate_bench.sh $(BUILD)
	./$(BUILD)/tests/bench/vidur_transfer_bench
	./$(BUILD)/tests/bench/fidelity_bench
	./$(BUILD)/tests/bench/fidelity_bench --set tests/fidelity/data/sglang_a100_qwen3_4b_steps.json --fit-split fit
	tools/plan_bench.sh $(BUILD)

clean:
	rm -rf build build-asan build-fuzz out

# ---- GPU machine bundle ------------------------------------------------------
# make gpu-bundle: fleetsim, the CUDA module libfleetsim_cuda.so beside it,
# kernels_test and gemm_baseline built for Hopper (CUDA on) with static
# libstdc++/libgcc/cudart, stripped, plus the headers
# and GoogleTest archives a rebuild needs, in $(GPU_BUNDLE)/ (objects in
# $(GPU_TREE)/). Carry $(GPU_BUNDLE) to the GPU machine and run
# calibrate/gpu-check.sh OUTDIR there (see cmake/GpuBundle.cmake).
GPU_TREE   ?= build-gpu-tree
GPU_BUNDLE ?= build-gpu

.PHONY: gpu-bundle
gpu-bundle: deps
	@mkdir -p $(GPU_TREE)
	calibrate/gpu-check.sh --stamp > $(GPU_TREE)/SOURCE_STAMP
	cmake -S . -B $(GPU_TREE) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFLEETSIM_CUDA=ON -DFLEETSIM_TESTS=ON \
	  -DFLEETSIM_BENCH=OFF -DFLEETSIM_STATIC_RUNTIME=ON
	cmake --build $(GPU_TREE) -j $(JOBS) --target fleetsim fleetsim_cuda kernels_test gemm_baseline
	cmake -DFLEETSIM_BUNDLE_TREE=$(GPU_TREE) -DFLEETSIM_BUNDLE_DIR=$(GPU_BUNDLE) -P cmake/GpuBundle.cmake
	@echo "$(GPU_BUNDLE)/: $$(du -sh $(GPU_BUNDLE) | cut -f1); source tree that travels with it:" \
	  "$$(git ls-files -co --exclude-standard -z 2>/dev/null | du -ch --files0-from=- 2>/dev/null | tail -n 1 | cut -f1)" \
	  "(the device tool carries 64 MiB in all)"
