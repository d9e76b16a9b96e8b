# SPDX-License-Identifier: MIT
# quack — the two commands are `make run` and `make test`; see README.md.
.PHONY: all deps debug release release-test test run bench fuzz format clean install deb matrix build-check docs

BUILD_DEBUG   ?= build/debug
BUILD_RELEASE ?= build/release
BUILD_MATRIX  ?= build/matrix
PREFIX        ?= /usr/local
# What build-check compiles per compiler (empty = every target, tests too).
CHECK_TARGETS ?= quack quack_shared quack_cli quack_man
# make test runs each fuzz target this long (a smoke run over the seed corpus
# and a little more); `make fuzz FUZZ_SECONDS=600` is the long run.
FUZZ_SECONDS  ?= 5
JOBS          ?= $(shell nproc)
# The ASan phase runs one test more than there are cores: a third of its
# time is real-socket tests waiting on relays, dark periods and idle timeouts
# (tunnel_survival, tunnel_hop, fleet), which leave a core idle.
TEST_JOBS     ?= $(shell echo $$(( $$(nproc) + 1 )))

all: release

deps:
	@./scripts/deps.sh

# Debug build with ASan+UBSan and libFuzzer targets (clang), at -O1 as the
# AddressSanitizer documentation advises: the suite's CPU-bound half runs
# about twice as fast as at -O0 (ASan phase of make test 575 -> 464 s on a
# quiet 2-core machine), -g and no sibling-call optimisation keep the stack
# traces whole. DEBUG_CFLAGS="-O0 -g" make debug for a debugger session.
DEBUG_CFLAGS  ?= -O1 -g -fno-optimize-sibling-calls
debug: deps
	@cmake -S . -B $(BUILD_DEBUG) -G Ninja -DCMAKE_BUILD_TYPE=Debug \
	  -DCMAKE_C_FLAGS_DEBUG="$(DEBUG_CFLAGS)" \
	  -DCMAKE_C_COMPILER=clang -DQK_SANITIZE=ON -DQK_FUZZ=ON -DQK_WERROR=ON \
	  -DQK_FUZZ_SECONDS=$(FUZZ_SECONDS) >/dev/null
	@cmake --build $(BUILD_DEBUG) -j $(JOBS)

# Release build (-O2 -g) for the demo and benchmarks.
release: deps
	@cmake -S . -B $(BUILD_RELEASE) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DQK_WERROR=ON \
	  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g -DNDEBUG" >/dev/null
	@cmake --build $(BUILD_RELEASE) -j $(JOBS)

# What make test uses of the Release tree: the CLI, libquack.so (tests/cli/abi.sh)
# and the slow label's executables (the ASan build compiles every test).
release-test: deps
	@cmake -S . -B $(BUILD_RELEASE) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DQK_WERROR=ON \
	  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g -DNDEBUG" >/dev/null
	@cmake --build $(BUILD_RELEASE) -j $(JOBS) --target quack_cli quack_shared slow_tests

# The whole suite under ASan+UBSan through CTest (the gcc Release build must
# also compile warning-free: it is what `make run` and the benchmarks use);
# tests labelled "slow" (tests/sim/test_slow_*.c: minutes of simulated time)
# run from the Release build instead, where they take ~10x less time.
# build-check first: CMake's Release (-O3) with gcc and with clang, warnings
# as errors, so a warning only one compiler or -O3 sees cannot land; its gcc
# tree is the one tests/cli/install.sh installs from; tests/cli/abi.sh
# compares the release tree's libquack.so (-O2 -g) with abi/libquack.abi.
test: debug release-test build-check
	cd $(BUILD_DEBUG) && QK_INSTALL_BUILD=$(CURDIR)/$(BUILD_MATRIX)/gcc-Release \
	  QK_ABI_BUILD=$(CURDIR)/$(BUILD_RELEASE) \
	  ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j $(TEST_JOBS) -LE slow
	cd $(BUILD_RELEASE) && ctest --output-on-failure -j $(JOBS) -L slow

# Release builds with gcc and clang (library, CLI, man page), -Werror, kept
# in $(BUILD_MATRIX)/<cc>-Release between runs.
build-check: deps
	@./scripts/build-matrix.sh --werror --incremental --compilers "gcc clang" \
	  --types Release --dir $(BUILD_MATRIX) $(if $(CHECK_TARGETS),--targets "$(CHECK_TARGETS)")

# The whole matrix from empty build directories: {gcc, clang} x {Debug,
# Release, RelWithDebInfo, MinSizeRel}, every target; prints a table.
matrix: deps
	@./scripts/build-matrix.sh --dir $(BUILD_MATRIX)/full

# make install PREFIX=DIR (DESTDIR=... works too): library (.so.0 + .a),
# headers, quack.pc, the quack CLI and its man page, from the release build.
install: release
	DESTDIR=$(DESTDIR) cmake --install $(BUILD_RELEASE) --prefix $(PREFIX)

# libquack0, libquack-dev and quack .debs in build/deb (dpkg-buildpackage on
# a copy of the tree; lintian must report no error).
deb: deps
	@./scripts/build-deb.sh build/deb

# The API reference (Doxygen) in $(BUILD_RELEASE)/docs/html: fails on any
# undocumented public symbol, struct field, enum value or macro.
docs: deps
	@cmake -S . -B $(BUILD_RELEASE) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DQK_WERROR=ON \
	  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g -DNDEBUG" >/dev/null
	@cmake --build $(BUILD_RELEASE) --target docs
	@echo "API reference: $(BUILD_RELEASE)/docs/html/index.html"

# The main demo.
run: release
	@./scripts/demo.sh $(BUILD_RELEASE)

# Benchmarks print tables; figures go in docs/perf.md.
bench: release
	@./bench/loopback.sh --size 256M --runs 3

# Each fuzz target for FUZZ_SECONDS (e.g. make fuzz FUZZ_SECONDS=600).
fuzz: debug
	cd $(BUILD_DEBUG) && ctest --output-on-failure -R '^fuzz/' -j $(JOBS)

format:
	@clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf build
