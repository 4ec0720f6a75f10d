// The KV cache's ledger of a preset's decode (--preset P --shapes-only --decode T), against
// hand computation for a GQA model (Llama 3 8B) and an MHA one (GPT-2).

#include <catch2/catch.hpp>

#include <string>

#include "helpers.h"

TEST_CASE("Llama 3 8B's KV cache at its context of 8192, by hand", "[ledger]") {
    const test::RunResult run = test::run_mha("--preset llama3-8b --shapes-only --decode 8192");
    REQUIRE(run.status == 0);
    // 32 layers, G = 8 K/V heads of d_k = 128. A token and layer: 2·8·128·4 = 8,192 bytes;
    // at T = 8192: 67,108,864 bytes a layer, ·32 = 2 GiB.
    // int8: codes 2·8192·8·128 = 16,777,216 bytes; groups of 32: K (8192/32)·8·128 =
    //   262,144 and V 8192·8·(128/32) = 262,144, two floats each: 4,194,304 bytes;
    //   20,971,520 a layer, ·32 = 640 MiB. int4: half the codes, 12,582,912 a layer, 384 MiB.
    // In 2 GiB: 2^31 / 2^31 = 1 sequence in float, 2^31 / 671,088,640 = 3.2 -> 3 in int8,
    //   2^31 / 402,653,184 = 5.3 -> 5 in int4.
    CHECK_THAT(test::flat(run.output),
               Catch::Contains("KV cache of one sequence (32 layers): 8,192 bytes a token and "
                               "layer in float32; at T = 8192: 67,108,864 bytes a layer, 2 GiB "
                               "for the model; int8: 20,971,520 bytes a layer, 640 MiB for the "
                               "model; int4: 12,582,912 bytes a layer, 384 MiB for the model") &&
                   Catch::Contains("fits --max-memory 2 GiB: 1 in float32, 3 in int8, 5 in "
                                   "int4 (the cache alone)"));
}

TEST_CASE("GPT-2's KV cache at its context, within --max-memory 1G, by hand", "[ledger]") {
    const test::RunResult run =
        test::run_mha("--preset gpt2 --shapes-only --decode 1024 --max-memory 1G");
    REQUIRE(run.status == 0);
    // 12 layers, 12 heads of 64: a token and layer 2·12·64·4 = 6,144 bytes; at 1024:
    // 6,291,456 a layer, 72 MiB. int8: codes 1,572,864, groups K 32·12·64 + V 1024·12·2 =
    // 49,152 · 8 = 393,216: 1,966,080 a layer; int4: 786,432 + 393,216 = 1,179,648.
    // In 2^30 bytes: / 75,497,472 = 14.2 -> 14; / 23,592,960 = 45.5 -> 45;
    // / 14,155,776 = 75.9 -> 75.
    CHECK_THAT(test::flat(run.output),
               Catch::Contains("6,144 bytes a token and layer in float32; at T = 1024: "
                               "6,291,456 bytes a layer, 72 MiB for the model; int8: 1,966,080 "
                               "bytes a layer, 22.5 MiB for the model; int4: 1,179,648 bytes a "
                               "layer, 13.5 MiB for the model") &&
                   Catch::Contains("fits --max-memory 1 GiB: 14 in float32, 45 in int8, 75 in "
                                   "int4"));
}

TEST_CASE("the ledger is for a preset's decode only", "[ledger]") {
    CHECK_THAT(test::run_mha("--preset gpt2 --shapes-only").output,
               !Catch::Contains("KV cache of one sequence"));
    CHECK_THAT(test::run_mha("-b 1 -d 16 -H 2 --decode 4 --shapes-only").output,
               !Catch::Contains("KV cache of one sequence"));
}
