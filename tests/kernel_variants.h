#pragma once
// Shared by the kernel tests: run a test case once per kernel variant this CPU runs.

#include <catch2/catch.hpp>

#include "core/kernels/kernels.h"

namespace test {

// Switches the kernels to one variant for a scope, then back to the one in use.
class UsingVariant {
public:
    explicit UsingVariant(mha::KernelVariant v) : saved_(mha::kernel_variant()) {
        mha::use_kernel_variant(v);
    }
    ~UsingVariant() { mha::use_kernel_variant(saved_); }
    UsingVariant(const UsingVariant&) = delete;
    UsingVariant& operator=(const UsingVariant&) = delete;

private:
    mha::KernelVariant saved_;
};

}  // namespace test

// Every variant this CPU runs, as a Catch2 generator: the test case runs once per variant.
#define EACH_VARIANT()                                                                        \
    const mha::KernelVariant variant = GENERATE(from_range(mha::runnable_kernel_variants())); \
    CAPTURE(mha::kernel_variant_name(variant));                                               \
    const test::UsingVariant using_variant(variant)
