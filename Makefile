# Minnow: `make` builds Release into build/ (build/bin/minnow, build/lib/minnow/plugins/),
# `make test` builds and runs every test, `make demo` runs the main job on a bundled model.
BUILD ?= build
CMAKE_FLAGS ?=
export CCACHE_DIR ?= $(HOME)/.cache/ccache
# Paths under the checkout hash as relative ones, so a fresh clone elsewhere (CI, worktrees)
# reuses the cache.
export CCACHE_BASEDIR ?= $(CURDIR)

.PHONY: all deps configure build test test-release test-sanitize demo bench install clean fuzz fuzz-smoke test-asan test-tsan asan-configure

all: build

deps:
	@scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD)

# `make test` (and CI): every test of the Release tree, then the sanitizer suite in the ASan
# tree, then each fuzzer for FUZZ_SMOKE_SECONDS after replaying its regression inputs.
# Run one after the other (not as parallel prerequisites), so `make -j test` does too.
test:
	@$(MAKE) --no-print-directory test-release
	@$(MAKE) --no-print-directory test-sanitize
	@$(MAKE) --no-print-directory fuzz-smoke

test-release: build
	@cd $(BUILD) && ctest --output-on-failure --timeout 900

# Hardening (tests/fuzz, docs/SECURITY.md). One clang ASan+UBSan tree serves the fuzzers
# and `make test-asan`; without clang, test-asan uses g++ and the fuzzers are skipped.
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
FUZZ_SECONDS ?= 300
FUZZ_SMOKE_SECONDS ?= 20
CLANGXX := $(shell command -v clang++-14 2>/dev/null)
ifneq ($(CLANGXX),)
ifneq ($(wildcard /usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a),)
ASAN_CMAKE = -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_C_COMPILER=clang-14 -DMINNOW_FUZZ=ON
endif
endif

# -O1 with line tables: about half the compile time of -O3, still fast enough for the
# tests and fuzzers, and sanitizer reports name file:line.
ASAN_OPT = -O1 $(if $(ASAN_CMAKE),-gline-tables-only,-g1)
asan-configure: deps
	@cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=$(ASAN_OPT)" \
	  "-DCMAKE_C_FLAGS_RELEASE=$(ASAN_OPT)" -DMINNOW_SANITIZE=ON $(ASAN_CMAKE) $(CMAKE_FLAGS) >/dev/null

ASAN_ENV = ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1
# The part of `make test` that runs in the ASan tree: only the targets the sanitizer suite
# needs (tests/CMakeLists.txt, MINNOW_SANITIZER_SUITE), not the apps or model-level suites.
test-sanitize: asan-configure
	@cmake --build $(ASAN_BUILD) --target sanitizer_suite
	@cd $(ASAN_BUILD) && $(ASAN_ENV) ctest --output-on-failure --timeout 1800 -R "$$(cat sanitizer_tests.regex)"

fuzz fuzz-smoke: SECS = $(if $(filter fuzz-smoke,$@),$(FUZZ_SMOKE_SECONDS),$(FUZZ_SECONDS))
fuzz fuzz-smoke:
	@if [ -z "$(ASAN_CMAKE)" ]; then echo "fuzz: skipped: clang++-14 with libFuzzer not found (apt-get install clang-14 libclang-rt-14-dev)"; else \
	  $(MAKE) --no-print-directory asan-configure && cmake --build $(ASAN_BUILD) --target fuzz_all && \
	  for t in $$(tr ';' ' ' < $(ASAN_BUILD)/fuzz/targets.txt); do tests/fuzz/run_fuzz.sh replay $(ASAN_BUILD) $$t >/dev/null 2>&1 || \
	    { echo "fuzz: regression inputs of $$t fail:"; tests/fuzz/run_fuzz.sh replay $(ASAN_BUILD) $$t 2>&1 | tail -30; exit 1; }; done && \
	  tests/fuzz/run_fuzz.sh fuzz $(ASAN_BUILD) $(SECS); fi

test-asan: asan-configure
	@cmake --build $(ASAN_BUILD)
	@cd $(ASAN_BUILD) && $(ASAN_ENV) ctest --output-on-failure --timeout 1800

# ThreadSanitizer (g++): the unit suite (the sanitizer suite's tests less the fuzz
# replays), -O1 like the ASan tree, against oneTBB built with TSan from Debian's source of
# the installed version (scripts/tsan-tbb.sh, once per tree): no suppressions.
test-tsan: deps
	@mkdir -p $(TSAN_BUILD)
	@tbb=$$(scripts/tsan-tbb.sh $(CURDIR)/$(TSAN_BUILD)/tbb-tsan) && \
	  cmake -S . -B $(TSAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -g1" \
	  "-DCMAKE_C_FLAGS_RELEASE=-O1 -g1" -DMINNOW_TSAN=ON -DMINNOW_TSAN_TBB_LIBDIR=$$tbb \
	  -DMINNOW_ASAN_FORMAT_TEST=OFF $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(TSAN_BUILD) --target sanitizer_suite
	@cd $(TSAN_BUILD) && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
	  ctest --output-on-failure --timeout 1800 -R "$$(cat sanitizer_tests.regex)"

demo: build
	@scripts/demo.sh $(BUILD)

# ONNX Runtime vs Minnow (BENCHMARKS.md). First use installs the bench packages (torch,
# torchvision, onnx: bench/install-deps.sh) and onnxruntime-node from npm into a cache.
bench: build
	@bench/compare.sh $(BUILD)

# make install PREFIX=/opt/minnow
PREFIX ?= /usr/local
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD)
