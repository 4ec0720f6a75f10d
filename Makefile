# mha: multi-head attention, step by step. GNU make; C++17, standard library only.
# Override CXX / CXXFLAGS as usual: make CXX=clang++

CXX      ?= g++
CXXFLAGS ?= -O3 -g
CXXSTD   := -std=c++17
# no FP traps are watched, so g++ may vectorise the selects in the kernels' exp (results unchanged)
FPFLAGS  := -fno-trapping-math
WARNINGS := -Wall -Wextra -Wpedantic -Wshadow
CPPFLAGS += -Isrc -MMD -MP
LDLIBS   += -pthread

BUILD := build

# NATIVE=1: kernels tuned for this machine's CPU (-march=native), built apart in build-native/
ifdef NATIVE
CXXFLAGS += -march=native
BUILD := build-native
endif
LIB_SRC  := $(wildcard src/*/*.cpp)
TEST_SRC := $(wildcard tests/*.cpp)
LIB_OBJ  := $(LIB_SRC:%.cpp=$(BUILD)/%.o)
TEST_OBJ := $(TEST_SRC:%.cpp=$(BUILD)/%.o)

CATCH2_HEADER := /usr/include/catch2/catch.hpp

.PHONY: all test clean strict catch2 bench

# all: the command-line tool, build/mha
all: $(BUILD)/mha

$(BUILD)/mha: $(BUILD)/src/main.o $(LIB_OBJ)
	$(CXX) $(CXXFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/mha_tests: $(TEST_OBJ) $(LIB_OBJ)
	$(CXX) $(CXXFLAGS) -o $@ $^ $(LDLIBS)

# the test objects need Catch2 before they compile
$(TEST_OBJ): | catch2

$(BUILD)/%.o: %.cpp
	@mkdir -p $(@D)
	$(CXX) $(CXXSTD) $(FPFLAGS) $(CPPFLAGS) $(CXXFLAGS) $(WARNINGS) -c $< -o $@

# test: the Catch2 suite (installs Debian's catch2 first when it is missing)
test: catch2 $(BUILD)/mha_tests $(BUILD)/mha
	cd tests && MHA_BIN=../$(BUILD)/mha ../$(BUILD)/mha_tests

# bench: time the six benchmark sizes (mha bench --help); BENCH_ARGS="--compare-torch" adds PyTorch
bench: $(BUILD)/mha
	./$(BUILD)/mha bench $(BENCH_ARGS)

# catch2: make sure Catch2 v2's single header is there, installing it as root with apt-get
catch2:
	@tests/ensure-catch2 $(CATCH2_HEADER)

# strict: rebuild everything with warnings as errors
strict: clean
	$(MAKE) all $(BUILD)/mha_tests CXXFLAGS="$(CXXFLAGS) -Werror"

# clean: remove everything the build made
clean:
	rm -rf build build-native

-include $(LIB_OBJ:.o=.d) $(TEST_OBJ:.o=.d) $(BUILD)/src/main.d
