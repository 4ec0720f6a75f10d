// The KV cache ledger of --shapes-only --decode T, for presets and config.json files, against
// byte counts worked out by hand from the formulas: float32 K and V per token, local layers,
// MLA's latent, KIVI's codes with scales and zero points, whole blocks, and what fits.

#include <catch2/catch.hpp>

#include <string>

#include "app/run/kv_ledger.h"
#include "helpers.h"
#include "io/checkpoint/config.h"

namespace test_kv_ledger {

using namespace mha;

namespace {

// The ledger of a committed test config.json at T with the default settings (2 GiB).
KvLedger family_ledger(const std::string& family, std::size_t T, std::size_t block_size = 0) {
    const std::string path = "data/checkpoints/" + family + "/config.json";
    LedgerSettings settings;
    settings.length = T;
    settings.block_size = block_size;
    settings.max_memory = std::uint64_t(1) << 31;
    return kv_ledger(config_ledger_model(checkpoint::parse_config(test::read_text(path), path)),
                     settings);
}

// One kind of layer: its layers, and its float32, int8 and int4 bytes a layer at T.
void check_row(const KvLedgerRow& row, const std::vector<std::size_t>& layers,
               std::uint64_t per_token, std::uint64_t float32, std::uint64_t int8,
               std::uint64_t int4) {
    CHECK(row.layers == layers);
    CHECK(row.per_token == per_token);
    CHECK(row.float32 == float32);
    CHECK(row.int8 == int8);
    CHECK(row.int4 == int4);
}

// The ledger's part of a run's output, flattened to single spaces: a failed check prints it
// alone, not the trace of thousands of tokens before it.
std::string ledger_of(const std::string& args) {
    const test::RunResult run = test::run_mha(args);
    REQUIRE(run.status == 0);
    const std::size_t at = run.output.find("KV cache ledger");
    return at == std::string::npos ? "no ledger" : test::flat(run.output.substr(at));
}

// DeepSeek-V2-Lite's MLA sizes as the preset runs them: h = 16, d_h = d_v = 2048/16,
// d_c = 512, d_R = 64.
MlaSizes v2_lite() { return seeded_mla_sizes(2048, 16, 512, 64); }

}  // namespace

TEST_CASE("Llama 3 8B's KV cache at its context of 8192, by hand", "[ledger]") {

    // Public figure: 2·32 layers·8 K/V heads·128·2 bytes = 128 KiB a token in bf16, so
    // 256 KiB (262,144 bytes) in float32; 8,192 a layer.
    // At T = 8192: 67,108,864 bytes a layer, ·32 = 2 GiB.
    // int8: codes 2·8192·8·128 = 16,777,216 bytes; groups of 32: K (8192/32)·8·128 =
    //   262,144 and V 8192·8·(128/32) = 262,144, two floats each: 4,194,304 bytes;
    //   20,971,520 a layer, ·32 = 640 MiB. int4: half the codes, 12,582,912 a layer, 384 MiB.
    // In 2 GiB: 2^31 / 2^31 = 1 sequence in float, 2^31 / 671,088,640 = 3.2 -> 3 in int8,
    //   2^31 / 402,653,184 = 5.3 -> 5 in int4.
    const std::string out = ledger_of("--preset llama3-8b --shapes-only --decode 8192");
    CHECK_THAT(out, Catch::Contains("KV cache ledger of Llama 3 8B at T = 8192 (context 8192), "
                                    "one sequence, in bytes of float32"));
    CHECK_THAT(out, Catch::Contains("32 layers 8x128 8,192 67,108,864 20,971,520 12,582,912"));
    CHECK_THAT(out, Catch::Contains("all 32 262,144 2,147,483,648 671,088,640 402,653,184"));
    CHECK_THAT(out, Catch::Contains("The model: 256 KiB a token; at T 2 GiB in float32, "
                                    "640 MiB in int8, 384 MiB in int4."));
    CHECK_THAT(out, Catch::Contains("fits --max-memory 2 GiB: 1 in float32, 3 in int8, 5 in "
                                    "int4 (the cache alone)"));
}

TEST_CASE("GPT-2's KV cache at its context, within --max-memory 1G, by hand", "[ledger]") {

    // 12 layers, 12 heads of 64: a token and layer 2·12·64·4 = 6,144 bytes; at 1024:
    // 6,291,456 a layer, 72 MiB. int8: codes 1,572,864, groups K 32·12·64 + V 1024·12·2 =
    // 49,152 · 8 = 393,216: 1,966,080 a layer; int4: 786,432 + 393,216 = 1,179,648.
    // In 2^30 bytes: / 75,497,472 = 14.2 -> 14; / 23,592,960 = 45.5 -> 45;
    // / 14,155,776 = 75.9 -> 75.
    const std::string out = ledger_of("--preset gpt2 --shapes-only --decode 1024 --max-memory 1G");
    CHECK_THAT(out, Catch::Contains("12 layers 12x64 6,144 6,291,456 1,966,080 1,179,648"));
    CHECK_THAT(out, Catch::Contains("at T 72 MiB in float32, 22.5 MiB in int8, 13.5 MiB in int4"));
    CHECK_THAT(out, Catch::Contains("fits --max-memory 1 GiB: 14 in float32, 45 in int8, 75 in "
                                    "int4"));
}

TEST_CASE("a ledger at any T up to the context, and none beyond it", "[ledger]") {
    // GPT-2 at T = 100: 6,144 · 100 = 614,400 bytes a layer.
    CHECK_THAT(ledger_of("--preset gpt2 --shapes-only --decode 100"),
               Catch::Contains("12 layers 12x64 6,144 614,400"));
    const test::RunResult beyond =
        test::run_mha("--config data/checkpoints/gemma2/config.json --shapes-only --decode 129");
    CHECK(beyond.status == 2);
    CHECK_THAT(beyond.output,
               Catch::Contains("mha: error: --decode 129 is longer than "
                               "data/checkpoints/gemma2/config.json's context of 128 positions"));
    LedgerModel model{"M", 8, {LayerCache{1, 4, 0, 0, 0}}, 0, 0};
    LedgerSettings settings;
    settings.length = 9;
    REQUIRE_THROWS_WITH(kv_ledger(model, settings),
                        "--decode 9 is longer than M's context of 8 positions");
}

TEST_CASE("the ledger is for a decode's dry run only", "[ledger]") {
    CHECK_THAT(test::run_mha("--preset gpt2 --shapes-only").output,
               !Catch::Contains("KV cache ledger"));
    CHECK_THAT(test::run_mha("-b 1 -d 16 -H 2 --decode 4 --shapes-only").output,
               !Catch::Contains("KV cache ledger"));
    CHECK_THAT(test::run_mha("--config data/checkpoints/llama2/config.json --shapes-only").output,
               !Catch::Contains("KV cache ledger"));
}

TEST_CASE("one small config.json per family, by hand", "[ledger]") {
    // KIVI's default: K grouped per channel along the tokens (32, or the cached positions if
    // fewer), V per token along d_k (32, or d_k if narrower); a group keeps 2 floats (8 bytes).
    SECTION("gpt2: 2 layers of 4 heads of 8 at T = 16, its context") {
        // a token 2·4·8·4 = 256; at 16: 4,096. int8: codes 4·16·8 = 512 each of K and V;
        // K groups of 16: 512/16·8 = 256; V groups of 8: 512/8·8 = 512. 1,792; int4 1,280.
        const KvLedger k = family_ledger("gpt2", 16);
        REQUIRE(k.rows.size() == 1);
        check_row(k.rows[0], {0, 1}, 256, 4096, 1792, 1280);
        CHECK(k.total.float32 == 8192);
    }
    SECTION("llama: 2 layers, 4 K/V heads of 8 at T = 64") {
        // codes 4·64·8 = 2,048; K 2048/32·8 = 512; V 2048/8·8 = 2,048: 6,656; int4 4,608.
        const KvLedger k = family_ledger("llama2", 64);
        REQUIRE(k.rows.size() == 1);
        check_row(k.rows[0], {0, 1}, 256, 16384, 6656, 4608);
    }
    SECTION("mistral: every layer local, window 4") {
        // 4 positions of 2·2·8·4 = 128: 512. codes 2·4·8 = 64; K groups of 4: 64/4·8 = 128;
        // V groups of 8: 64. int8 320, int4 32 + 128 + 32 + 64 = 256.
        const KvLedger k = family_ledger("mistral", 64);
        REQUIRE(k.rows.size() == 1);
        CHECK(k.rows[0].window == 4);
        CHECK(k.rows[0].cached == 4);
        check_row(k.rows[0], {0, 1}, 128, 512, 320, 256);
    }
    SECTION("qwen2: layer 0 global, layer 1 local with window 5") {
        // global: 64·128 = 8,192; codes 1,024 each, K 256, V 1,024: 3,328; int4 2,304.
        // local: 5·128 = 640; codes 80 each, K groups of 5: 128, V 80: 368; int4 288.
        const KvLedger k = family_ledger("qwen2", 64);
        REQUIRE(k.rows.size() == 2);
        check_row(k.rows[0], {0}, 128, 8192, 3328, 2304);
        check_row(k.rows[1], {1}, 128, 640, 368, 288);
        CHECK(k.total.float32 == 8832);
    }
    SECTION("qwen3: 2 K/V heads of 16") {
        // codes 2·64·16 = 2,048; K 512; V groups of 16: 1,024. 5,632; int4 3,584.
        const KvLedger k = family_ledger("qwen3", 64);
        check_row(k.rows[0], {0, 1}, 256, 16384, 5632, 3584);
    }
    SECTION("gemma2: even layers local (window 4), layer 1 global") {
        // local: 4·256 = 1,024; codes 2·4·16 = 128, K 128/4·8 = 256, V 128/16·8 = 64: 576;
        // int4 64 + 256 + 64 + 64 = 448. global as qwen3.
        const KvLedger k = family_ledger("gemma2", 64);
        REQUIRE(k.rows.size() == 2);
        check_row(k.rows[0], {0, 2}, 256, 1024, 576, 448);
        check_row(k.rows[1], {1}, 256, 16384, 5632, 3584);
        CHECK(k.total.float32 == 2 * 1024 + 16384);
        CHECK(k.per_token == 3 * 256);
    }
    SECTION("gemma3 (text_config): layers 0 and 1 local (window 5), layer 2 global") {
        // 1 K/V head of 16: a token 128. local: 640; codes 80, K 80/5·8 = 128, V 80/16·8 = 40:
        // 328. global: 8,192; codes 1,024, K 256, V 512: 2,816; int4 1,792.
        const KvLedger k = family_ledger("gemma3", 64);
        REQUIRE(k.rows.size() == 2);
        check_row(k.rows[0], {0, 1}, 128, 640, 328, 248);
        check_row(k.rows[1], {2}, 128, 8192, 2816, 1792);
    }
}

TEST_CASE("--config prints the ledger with its local layers", "[ledger]") {
    const std::string out =
        ledger_of("--config data/checkpoints/gemma2/config.json --shapes-only --decode 64");
    CHECK_THAT(out, Catch::Contains("2 local 2x16, last 4 256 1,024 576 448") &&
                        Catch::Contains("1 global 2x16 256 16,384 5,632 3,584") &&
                        Catch::Contains("all 3 768 18,432 6,784 4,480") &&
                        Catch::Contains("Local layers (0, 2) keep the last 4 tokens: at T = 64 "
                                        "each holds 4."));
}

TEST_CASE("Gemma 2 2B's local layers cache at most the window", "[ledger]") {
    // 13 local layers of 4096 positions and 13 global of 8192, 2·4·256·4 = 8,192 a token:
    // 33,554,432 and 67,108,864 a layer; 13·(both) = 1,308,622,848.
    const std::string out = ledger_of("--preset gemma2-2b --shapes-only --decode 8192");
    CHECK_THAT(out, Catch::Contains("13 local 4x256, last 4096 8,192 33,554,432") &&
                        Catch::Contains("13 global 4x256 8,192 67,108,864") &&
                        Catch::Contains("all 26 212,992 1,308,622,848") &&
                        Catch::Contains("Local layers (0, 2, ..., 24) keep the last 4096 tokens"));
}

TEST_CASE("paged: whole blocks a layer and the last block's unused bytes", "[ledger]") {
    // GPT-2 at T = 7 in blocks of 4: 2 blocks, 8·6,144 = 49,152 bytes a layer against
    // 43,008 used: 6,144 unused; 12 layers 589,824 and 73,728. In 1 MiB: 1,048,576 / 589,824
    // = 1.8 -> 1 paged, / 516,096 = 2.03 -> 2 unpaged.
    const std::string out =
        ledger_of("--preset gpt2 --shapes-only --decode 7 --kv-block-size 4 --max-memory 1M");
    CHECK_THAT(out, Catch::Contains("12 layers 2 49,152 6,144") &&
                        Catch::Contains("all 12 589,824 73,728") &&
                        Catch::Contains("1 MiB: 2 in float32") && Catch::Contains(", 1 paged"));
    // gemma2's config in blocks of 16: a local layer's 4 positions take one block of
    // 16·256 = 4,096 bytes, 3,072 unused; the global layer's 64 take 4, none unused.
    const KvLedger k = family_ledger("gemma2", 64, 16);
    CHECK(k.rows[0].blocks == 1);
    CHECK(k.rows[0].paged == 4096);
    CHECK(k.rows[0].unused == 3072);
    CHECK(k.rows[1].blocks == 4);
    CHECK(k.rows[1].unused == 0);
    CHECK(k.total.paged == 2 * 4096 + 16384);
}

TEST_CASE("int8 and int4 with the quantisation options given", "[ledger]") {
    // Mistral 7B at T = 5000, every layer local (4096 positions), groups of 64, the last 100
    // tokens in float: K per channel: (3996 / 64 = 62 groups) 3,968 positions quantised, 128
    // float; V per token: 3,996 quantised, 100 float. Codes 8·128·(3968 + 3996) = 8,155,136;
    // scales K 62·8·128·8 = 507,904, V 3996·8·2·8 = 511,488; floats (128 + 100)·8·128·4 =
    // 933,888. int8 10,108,416; int4 codes 4,077,568: 6,030,848.
    const std::string out = ledger_of("--preset mistral-7b --shapes-only --decode 5000 "
                                      "--kv-quant int8 --kv-quant-group 64 --kv-residual 100");
    CHECK_THAT(out, Catch::Contains("32 local 8x128, last 4096 8,192 33,554,432 10,108,416 "
                                    "6,030,848") &&
                        Catch::Contains("groups of 64, the last 100 tokens in float"));
}

TEST_CASE("a group that does not divide d_k: refused if given, else int8 and int4 left out",
          "[ledger]") {
    LedgerModel model{"M", 64, {LayerCache{2, 80, 0, 0, 0}}, 0, 0};
    LedgerSettings settings;
    settings.length = 64;
    const KvLedger k = kv_ledger(model, settings);
    CHECK_FALSE(k.quantised);
    CHECK_THAT(k.quant_note, Catch::Contains("the default group 32 does not divide d_k = 80"));
    CHECK(k.total.float32 == 64 * 2 * 2 * 80 * 4);
    settings.quant.group = 24;
    settings.group_given = true;
    REQUIRE_THROWS_WITH(kv_ledger(model, settings),
                        "--kv-quant-group 24 does not divide d_k = 80: V is grouped along d_k, "
                        "within each token's vector");
    settings.quant.group = 16;
    settings.quant.residual = 65;
    REQUIRE_THROWS_WITH(kv_ledger(model, settings),
                        "--kv-residual 65 is larger than the cache: --decode 64 caches 64 positions");
    const test::RunResult run =
        test::run_mha("--config data/checkpoints/gemma2/config.json --shapes-only --decode 64 "
                      "--kv-quant int8 --kv-quant-axis token --kv-quant-group 3");
    CHECK(run.status == 2);
    CHECK_THAT(run.output, Catch::Contains("mha: error: --kv-quant-group 3 does not divide d_k = 16"));
}

TEST_CASE("MLA's latent against MHA with the same heads (DeepSeek-V2-Lite)", "[ledger]") {
    const Sizes s{1, 4096, 4096, 2048, 2048, 2048, 16, 16, 128};
    LedgerSettings settings;
    settings.length = 4096;
    settings.max_memory = std::uint64_t(1) << 31;
    const KvLedger k = kv_ledger(preset_ledger_model(find_preset("deepseek-v2-lite"), s, v2_lite()),
                                 settings);
    // (d_c + d_R)·4 = (512 + 64)·4 = 2,304 bytes a token and layer, shared by the 16 heads;
    // MHA: 2·16·128·4 = 16,384. At 4096: 9,437,184 a layer, ·27 = 254,803,968.
    // int8 (the latent grouped as K, per channel in 32s): codes 4096·576 = 2,359,296, scales
    // 2,359,296/32·8 = 589,824: 2,949,120; int4 1,179,648 + 589,824 = 1,769,472.
    // In 2 GiB: 2,147,483,648 / 254,803,968 = 8.4 -> 8.
    REQUIRE(k.rows.size() == 1);
    const KvLedgerRow& row = k.rows[0];
    CHECK(row.latent == 512);
    CHECK(row.rope == 64);
    check_row(row, row.layers, 2304, 9437184, 2949120, 1769472);
    CHECK(row.layers.size() == 27);
    CHECK(k.mha_per_token == 16384);
    CHECK(k.total.float32 == 254803968);
    CHECK(k.fits.float32 == 8);
}

TEST_CASE("--format json carries the ledger as an object", "[ledger]") {
    const test::RunResult run =
        test::run_mha("--config data/checkpoints/gemma2/config.json --shapes-only --decode 64 "
                      "--kv-block-size 16 --format json");
    REQUIRE(run.status == 0);
    CHECK_THAT(run.output,
               Catch::Contains("\"kv_ledger\":{\"model\":\"data/checkpoints/gemma2/config.json\","
                               "\"dtype\":\"float32\",\"T\":64,\"context\":128,\"layers\":3,"
                               "\"rows\":[{\"layers\":[0,2],\"kv_heads\":2,\"head_dim\":16,"
                               "\"latent\":0,\"rope\":0,\"window\":4,\"cached\":4,\"per_token\":256,"
                               "\"float32\":1024,\"int8\":576,\"int4\":448,\"blocks\":1,"
                               "\"paged\":4096,\"unused\":3072}") &&
                   Catch::Contains("\"total\":{\"float32\":18432,\"int8\":6784,\"int4\":4480,"
                                   "\"paged\":24576}"));
    CHECK_THAT(test::run_mha("--preset gpt2 --shapes-only --decode 4 --format markdown").output,
               Catch::Contains("### KV cache ledger"));
}

TEST_CASE("a dry decode shows its first token's steps and its last's", "[ledger]") {
    // GPT-2 decodes a token in 3 steps (2 cache, 9 softmax, 14 project): of T = 6, tokens
    // 2..5 are left out, 4·3 = 12 steps, and token 6's first step says so.
    const test::RunResult run = test::run_mha("--preset gpt2 --shapes-only --decode 6");
    REQUIRE(run.status == 0);
    const std::string out = test::flat(run.output);
    CHECK_THAT(out, Catch::Contains("token 1 of 6: projects only x_t") &&
                        Catch::Contains("tokens 2 to 5 (4 of them) took the same steps as "
                                        "tokens 1 and 6, each against one more cached position: "
                                        "this dry run leaves their 12 steps out") &&
                        Catch::Contains("token 6 of 6 done"));
    for (const char* gone : {"token 2 of 6", "token 5 of 6"}) CHECK_THAT(out, !Catch::Contains(gone));
    // the line comes right before token 6's steps
    CHECK(out.find("leaves their 12 steps out") < out.find("token 6 of 6: projects"));
    // three tokens: the lone middle one is shown, not replaced by a longer line
    CHECK_THAT(test::run_mha("--preset gpt2 --shapes-only --decode 3").output,
               Catch::Contains("token 2 of 3 done") && !Catch::Contains("leaves their"));
    // JSON lists the steps kept, 1 input + 2 tokens · 3, without the line
    const std::string json =
        test::run_mha("--preset gpt2 --shapes-only --decode 6 --format json").output;
    CHECK_THAT(json, !Catch::Contains("leaves their"));
    std::size_t steps = 0;
    for (std::size_t at = json.find("{\"step\""); at != std::string::npos;
         at = json.find("{\"step\"", at + 1))
        ++steps;
    CHECK(steps == 7);
}

}  // namespace test_kv_ledger
