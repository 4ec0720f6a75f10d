// The Catch2 runner: every other tests/*.cpp file adds its TEST_CASEs to it.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
