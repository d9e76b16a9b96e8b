# quack — the two commands are `make run` and `make test`; see README.md.
.PHONY: all deps debug release test run bench fuzz format clean

BUILD_DEBUG   ?= build/debug
BUILD_RELEASE ?= build/release
FUZZ_SECONDS  ?= 30
JOBS          ?= $(shell nproc)

all: release

deps:
	@./scripts/deps.sh

# Debug build with ASan+UBSan and libFuzzer targets (clang).
debug: deps
	@cmake -S . -B $(BUILD_DEBUG) -G Ninja -DCMAKE_BUILD_TYPE=Debug \
	  -DCMAKE_C_COMPILER=clang -DQK_SANITIZE=ON -DQK_FUZZ=ON \
	  -DQK_FUZZ_SECONDS=$(FUZZ_SECONDS) >/dev/null
	@cmake --build $(BUILD_DEBUG) -j $(JOBS)

# Release build (-O2 -g) for the demo and benchmarks.
release: deps
	@cmake -S . -B $(BUILD_RELEASE) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g -DNDEBUG" >/dev/null
	@cmake --build $(BUILD_RELEASE) -j $(JOBS)

# The whole suite under ASan+UBSan through CTest (the gcc Release build must
# also compile warning-free: it is what `make run` and the benchmarks use);
# tests labelled "slow" (tests/sim/test_slow_*.c: minutes of simulated time)
# run from the Release build instead, where they take ~10x less time.
test: debug release
	cd $(BUILD_DEBUG) && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j $(JOBS) -LE slow
	cd $(BUILD_RELEASE) && ctest --output-on-failure -j $(JOBS) -L slow

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
