// The command line end to end: the default run, the trace, and every kind of
// bad input getting one line on stderr and exit status 2.

#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <regex>
#include <set>

#include "app/bench/bench.h"
#include "app/classroom/grade.h"
#include "app/classroom/quiz.h"
#include "app/classroom/quiz_questions.h"
#include "app/cli/cli.h"
#include "app/cli/presets.h"
#include "app/tokenize/tokenize_command.h"
#include "app/train/train.h"
#include "helpers.h"

namespace test_cli {

TEST_CASE("with no arguments it runs the classic example") {
    const test::RunResult r = test::run_mha("");
    REQUIRE(r.status == 0);
    CHECK_THAT(r.output, Catch::Contains("B=2") && Catch::Contains("N=8") &&
                             Catch::Contains("d_model=256") && Catch::Contains("h=4"));
    CHECK_THAT(r.output, Catch::Contains("parameters: 263,168 = 4·256² + 4·256"));
    CHECK_THAT(r.output, Catch::Contains("(B=2, N=8, d_model=256)"));
    CHECK_THAT(r.output, Catch::Contains("wall time"));
}

TEST_CASE("--trace shows the 14 steps with the classic shapes") {
    const test::RunResult r = test::run_mha("--trace");
    REQUIRE(r.status == 0);
    for (const char* shape :
         {"(B=2, N=8, d_model=256)", "(B=2, N=8, h=4, d_k=64)", "(B=2, h=4, N=8, d_k=64)",
          "(B=2, h=4, N=8, M=8)", "strides (2048, 64, 256, 1)", "non-contiguous"}) {
        CHECK_THAT(r.output, Catch::Contains(shape));
    }
    for (const char* expression :
         {"Q.view(B, N, h, d_k)", "Q.transpose(1, 2)", "Q @ K.transpose(-2, -1)",
          "torch.softmax(scores, dim=-1)", "context.contiguous()",
          "concat = context.view(B, N, d_model)"}) {
        CHECK_THAT(r.output, Catch::Contains(expression));
    }
}

TEST_CASE("--format json is one document with a steps array") {
    const test::RunResult r = test::run_mha("--format json -n 3 -d 8 -H 2", false);
    REQUIRE(r.status == 0);
    CHECK(r.output.front() == '{');
    CHECK_THAT(r.output, Catch::Contains("\"steps\":[") && Catch::Contains("\"copied_bytes\":") &&
                             Catch::Contains("\"macs\":") &&
                             Catch::Contains("\"strides\":[24,4,8,1]"));
}

TEST_CASE("--name=value, short options and -xVALUE all parse") {
    const test::RunResult a =
        test::run_mha("--batch=1 --seq-len 3 -d 8 -H2 --seed=7 -t 1 --format=json", false);
    const test::RunResult b =
        test::run_mha("-b 1 -n3 --d-model=8 --heads 2 --seed 7 --threads=1 --format json", false);
    REQUIRE(a.status == 0);
    const auto body = [](const std::string& s) { return s.substr(0, s.find("\"wall_time_ms\"")); };
    CHECK(body(a.output) == body(b.output));
}

TEST_CASE("--help and --version exit 0 and document the options") {
    const test::RunResult help = test::run_mha("--help");
    CHECK(help.status == 0);
    for (const char* flag :
         {"--batch",       "--seq-len",    "--kv-len",      "--d-model",    "--heads",
          "--seed",        "--threads",    "--causal",      "--no-bias",    "--trace",
          "--values",      "--step",       "--format",      "--weights",    "--input",
          "--key",         "--value",      "--mask",        "--mask-means", "--key-padding-mask",
          "--save",        "--max-memory", "--masked-rows", "--text",       "--demo-heads",
          "--heatmap",     "--summary",    "--head",        "--color",      "--export-svg",
          "--ablate-head", "--no-scale"}) {
        CHECK_THAT(help.output, Catch::Contains(flag));
    }
    const test::RunResult version = test::run_mha("-V");
    CHECK(version.status == 0);
    CHECK_THAT(version.output, Catch::StartsWith("mha "));
}

TEST_CASE("bad input: one line on stderr, exit status 2") {
    const auto [args, message] = GENERATE(table<std::string, std::string>({
        {"--batch abc", "--batch expects a whole number, got 'abc'"},
        {"--batch 0", "--batch must be at least 1, got 0"},
        {"--heads -3", "--heads expects a whole number, got '-3'"},
        {"--seq-len 99999999999999999999999", "--seq-len expects a whole number"},
        {"--seed 18446744073709551616", "too large"},
        {"--d-model 100 --heads 3", "not divisible by heads 3"},
        {"--threads 100000", "--threads must be at most 256"},
        {"--frobnicate", "unknown option '--frobnicate'"},
        {"-x", "unknown option '-x'"},
        {"stray", "unexpected argument 'stray'"},
        {"--heads", "--heads needs a value"},
        {"--trace=yes", "--trace takes no value"},
        {"--format xml", "--format expects one of html, json, markdown, text, got 'xml'"},
        {"--mask-means maybe --mask m.npy", "--mask-means expects one of block, keep"},
        {"--mask-means keep", "no --mask was given"},
        {"--input data/parity/float_mask/query.npy --mask data/parity/float_mask/mask.npy "
         "--mask-means keep",
         "--mask-means keep applies to bool and integer masks only"},
        {"--key k.npy", "--key and --value go together"},
        {"--key k.npy --value v.npy", "need --input"},
        {"--weights missing.npz", "missing.npz"},
        {"--input missing.npy", "missing.npy"},
        {"--weights data/parity/self_bias/weights.npz --no-bias",
         "the state dict decides the bias"},
        {"--input data/parity/self_bias/query.npy --seq-len 9", "--seq-len 9 disagrees with"},
        {"--weights data/parity/self_bias/weights.npz -d 32", "--d-model 32 disagrees with"},
        {"--weights data/parity/self_bias/weights.npz --heads 3", "not divisible by heads 3"},
        {"--input data/parity/self_bias/query.npy --mask data/parity/mask_per_head/mask.npy "
         "--mask-means block",
         "attn_mask"},
        {"--input data/parity/cross/query.npy --key-padding-mask "
         "data/parity/padding/key_padding_mask.npy",
         "key_padding_mask"},
        {"--weights data/parity/wide/weights.npz -H 8 --input data/parity/self_bias/query.npy",
         "expected shape"},
        {"-b 100000 -n 100000", "more than --max-memory"},
        {"-b 4294967296 -n 4294967296 -m 4294967296 -H 4294967296 -d 4294967296",
         "does not fit in 64 bits"},
        {"--max-memory lots", "--max-memory expects a size like 512M or 2G"},
        {"--save ''", "--save expects a file name"},
        {"--save /nonexistent-dir/out.npz", "/nonexistent-dir/out.npz"},
    }));
    test::check_rejected(args, message);
}

TEST_CASE("a fully masked row warns on stderr and still succeeds") {
    const test::RunResult r = test::run_mha("-b 1 -n 3 -m 2 -d 8 -H 2 --causal");
    CHECK(r.status == 0);
    CHECK_THAT(r.output, Catch::Contains("mha: warning: 2 query row(s) have every key blocked"));
}

TEST_CASE("--max-memory refuses before allocating and accepts what fits") {
    CHECK(test::run_mha("-n 64 --max-memory 1M").status == 2);
    CHECK(test::run_mha("-n 64 --max-memory 64M").status == 0);
}

TEST_CASE("every example script runs") {
    const auto [script, shows] = GENERATE(table<std::string, std::string>({
        {"classic.sh", "14  project"},
        {"cross_attention.sh", "14  project"},
        {"values.sh", "14  project"},
        {"demo_heads.sh", "head 3: even"},
        {"gqa_decode.sh", "token 4 of 4 done"},
        {"gpt3_shapes.sh", "nothing was computed or allocated"},
        {"block.sh", "14  project"},
    }));
    CAPTURE(script);
    const test::RunResult r = test::run_command("cd .. && MHA=tests/" + test::mha_binary() +
                                                " sh examples/" + script + " 2>&1");
    CHECK(r.status == 0);
    CHECK_THAT(r.output, Catch::Contains(shows));
}

TEST_CASE("mha, mha bench and mha quiz share one grammar: --name=value, -x, --") {
    const auto [args, status, shows] = GENERATE(table<std::string, int, std::string>({
        {"bench --repeat=0", 2, "mha: error: --repeat must be at least 1, got 0\n"},
        {"bench --threads=999", 2, "mha: error: --threads must be at most 256, got 999\n"},
        {"bench --quick=yes", 2, "mha: error: --quick takes no value, got '--quick=yes'\n"},
        {"bench -- --quick", 2,
         "mha: error: unknown bench option '--quick' (see mha bench --help)\n"},
        {"quiz --count=1 --seed=3 --questions", 0, "Question 1 of 1"},
        {"quiz -h", 0, "Usage: mha quiz"},
        {"quiz --count=0", 2, "mha: error: quiz --count must be at least 1, got 0\n"},
        {"quiz -- --questions", 2,
         "mha: error: unknown quiz option '--questions' (see mha quiz --help)\n"},
        {"-b 1 -n 2 -d 8 -H 2 --", 0, "B=1  N=2"},
        {"-b 1 -- --trace", 2,
         "mha: error: unexpected argument '--trace'; options start with -- (see mha --help)\n"},
        {"--form=per-head -b 1 -n 2 -d 8 -H 2", 0, "per head"},
        {"--form packed --per-head", 2, "are different forms of the pass; choose one"},
    }));
    CAPTURE(args);
    const test::RunResult r = test::run_mha(args);
    CHECK(r.status == status);
    CHECK_THAT(r.output, Catch::Contains(shows));
}

TEST_CASE("mha bench --repeat=3 runs") {
    const test::RunResult r = test::run_mha("bench --quick --repeat=3 --json", false);
    REQUIRE(r.status == 0);
    CHECK_THAT(r.output, Catch::Contains("\"repeat\":3"));
}

TEST_CASE("--form names the forms the four variant options choose") {
    const auto [form, option] = GENERATE(table<std::string, std::string>({
        {"fused-qkv", "--fused-qkv"},
        {"per-head", "--per-head"},
        {"decode", "--decode 3"},
        {"block", "--block pre"},
        {"packed", ""},
    }));
    CAPTURE(form);
    const std::string sizes = " -b 1 -n 3 -d 8 -H 2 -t 1 --format json";
    const test::RunResult by_name = test::run_mha("--form " + form + sizes, false);
    const test::RunResult by_option = test::run_mha(option + sizes, false);
    REQUIRE(by_name.status == 0);
    const auto body = [](const std::string& s) { return s.substr(0, s.find("\"wall_time_ms\"")); };
    CHECK(body(by_name.output) == body(by_option.output));
}

TEST_CASE("the score options are one group: given() names them by flag and apply() fills Masks") {
    const mha::Config c = mha::parse_args(
        {"--alibi", "--window", "3", "--sink-tokens", "1", "--softcap", "30", "--scale-base", "2"});
    const std::vector<std::string> given = c.scores.given();
    CHECK(given == std::vector<std::string>{"--alibi", "--window", "--sink-tokens", "--softcap",
                                            "--scale-base"});
    // each is a row of mha's table, in the order --help lists them
    std::vector<std::size_t> rows;
    const std::vector<mha::OptionInfo>& options = mha::mha_command().options;
    for (const std::string& flag : given) {
        const auto row = std::find_if(options.begin(), options.end(),
                                      [&flag](const mha::OptionInfo& o) { return o.name == flag; });
        REQUIRE(row != options.end());
        rows.push_back(std::size_t(row - options.begin()));
    }
    CHECK(std::is_sorted(rows.begin(), rows.end()));
    mha::Masks masks;
    c.scores.apply(masks);
    CHECK(masks.alibi);
    CHECK(masks.window == 3);
    CHECK(masks.sinks == 1);
    CHECK(masks.softcap == 30.0);
    CHECK(mha::parse_args({}).scores.given().empty());
}

namespace {

std::set<std::string> words_of(const std::string& text) {
    std::set<std::string> words;
    std::istringstream in(text);
    for (std::string word; in >> word;) words.insert(word);
    return words;
}

std::set<std::string> names_of(const mha::CommandInfo& command) {
    std::set<std::string> names;
    for (const mha::OptionInfo& option : command.options) {
        if (!option.name.empty()) names.insert(option.name);
    }
    return names;
}

// The part of the man page between two headings: ".SH BENCH" ... ".SH QUIZ".
std::string man_part(const std::string& man, const std::string& from, const std::string& to) {
    const std::size_t start = from.empty() ? 0 : man.find(from);
    REQUIRE(start != std::string::npos);
    return man.substr(start, man.find(to, start) - start);
}

// Each option entry of a man page part (the line after .TP): long name -> that line.
std::map<std::string, std::string> man_entries(const std::string& part) {
    std::map<std::string, std::string> entries;
    const std::regex entry("\\.TP\\n(\\.B[RI]? .*)\\n");
    for (auto it = std::sregex_iterator(part.begin(), part.end(), entry);
         it != std::sregex_iterator(); ++it) {
        const std::string line = (*it)[1].str();
        std::smatch name;
        if (!std::regex_search(line, name, std::regex("\\\\-\\\\-((?:[a-z]|\\\\-)+)"))) continue;
        entries["--" + std::regex_replace(name[1].str(), std::regex("\\\\-"), "-")] = line;
    }
    return entries;
}

}  // namespace

TEST_CASE("the man page documents exactly the options of each command's table", "[docs]") {
    const std::string man = test::read_text("../docs/mha.1");
    const std::pair<const mha::CommandInfo*, std::string> parts[] = {
        {&mha::mha_command(), man_part(man, "", ".SH BENCH")},
        {&mha::bench_command(), man_part(man, ".SH BENCH", ".SH TRAIN")},
        {&mha::train_command(), man_part(man, ".SH TRAIN", ".SH QUIZ")},
        {&mha::quiz_command(), man_part(man, ".SH QUIZ", ".SH GRADE")},
        {&mha::grade_command(), man_part(man, ".SH GRADE", ".SH TOKENIZE")},
        {&mha::tokenize_command(), man_part(man, ".SH TOKENIZE", ".SH EXIT STATUS")},
    };
    for (const auto& [command, part] : parts) {
        CAPTURE(command->name);
        const std::map<std::string, std::string> entries = man_entries(part);
        std::set<std::string> documented;
        for (const auto& entry : entries) documented.insert(entry.first);
        CHECK(documented == names_of(*command));
        for (const mha::OptionInfo& option : command->options) {
            if (option.name.empty() || option.short_name == 0) continue;
            CAPTURE(option.name);
            REQUIRE(entries.count(option.name) == 1);
            CHECK_THAT(entries.at(option.name),
                       Catch::Contains(std::string("\\-") + option.short_name + " "));
        }
    }
}

TEST_CASE("the bash completion offers exactly each command's options and choices", "[docs]") {
    const std::string completion = test::read_text("../docs/mha.bash");
    const auto listed = [&completion](const std::string& variable) {
        std::smatch list;
        REQUIRE(
            std::regex_search(completion, list, std::regex("local " + variable + "=\"([^\"]*)\"")));
        return words_of(list[1].str());
    };
    CHECK(listed("options") == names_of(mha::mha_command()));
    CHECK(listed("bench_options") == names_of(mha::bench_command()));
    CHECK(listed("quiz_options") == names_of(mha::quiz_command()));
    CHECK(listed("grade_options") == names_of(mha::grade_command()));
    CHECK(listed("train_options") == names_of(mha::train_command()));
    CHECK(listed("tokenize_options") == names_of(mha::tokenize_command()));

    std::map<std::string, std::vector<std::string>> fixed;  // option -> the words it completes
    for (const mha::CommandInfo* command :
         {&mha::mha_command(), &mha::bench_command(), &mha::quiz_command(), &mha::grade_command(),
          &mha::train_command(), &mha::tokenize_command()}) {
        for (const mha::OptionInfo& option : command->options) {
            if (!option.choices().empty() && !option.optional_value())  // --causal=: own case
                fixed[option.name] = option.choices();
        }
    }
    for (const mha::Preset& preset : mha::presets()) fixed["--preset"].push_back(preset.name);
    for (const auto& topic : mha::topic_names()) fixed["--topics"].push_back(topic.first);
    for (const auto& [option, choices] : fixed) {
        CAPTURE(option);
        std::smatch words;
        REQUIRE(std::regex_search(
            completion, words,
            std::regex(option + "\\) COMPREPLY=\\(\\$\\(compgen -W \"([^\"]*)\"")));
        CHECK(words_of(words[1].str()) == std::set<std::string>(choices.begin(), choices.end()));
    }
    // every option that takes a value has a case, so its value is not completed as an option
    for (const mha::CommandInfo* command :
         {&mha::mha_command(), &mha::bench_command(), &mha::quiz_command(), &mha::grade_command(),
          &mha::train_command(), &mha::tokenize_command()}) {
        for (const mha::OptionInfo& option : command->options) {
            if (option.value.empty() || option.optional_value())
                continue;  // a flag: its next word is free
            CAPTURE(option.name);
            CHECK(std::regex_search(completion, std::regex("[ |(]" + option.name + "[|)]")));
        }
    }
}

TEST_CASE("a near miss gets a suggestion; a far one does not") {
    const std::vector<std::string> names = {"--trace", "--threads", "--text", "--heads"};
    CHECK(mha::did_you_mean("--tarce", names) == "; did you mean '--trace'?");
    CHECK(mha::did_you_mean("--THREADS", names) == "; did you mean '--threads'?");
    CHECK(mha::did_you_mean("--thread", names) == "; did you mean '--threads'?");
    CHECK(mha::did_you_mean("--frobnicate", names).empty());
    CHECK(mha::did_you_mean("--xy", names).empty());  // too short to guess
}

TEST_CASE("did you mean: options, subcommands and presets") {
    const auto [args, message] = GENERATE(table<std::string, std::string>({
        {"--tarce", "unknown option '--tarce'; did you mean '--trace'? (see mha --help)"},
        {"--heads=4 --kv-haeds 2", "unknown option '--kv-haeds'; did you mean '--kv-heads'?"},
        {"qiuz", "unknown command 'qiuz'; did you mean 'quiz'? (see mha --help)"},
        {"bnech --quick", "unknown command 'bnech'; did you mean 'bench'?"},
        {"--trace train",
         "'train' is a command: it comes first, as in 'mha train --help'; options before it are "
         "not its options"},
        {"bench --reapet 3",
         "unknown bench option '--reapet'; did you mean '--repeat'? (see mha bench --help)"},
        {"quiz --cuont=3",
         "unknown quiz option '--cuont'; did you mean '--count'? (see mha quiz --help)"},
        {"--preset gpt-2", "got 'gpt-2'; did you mean 'gpt2'?"},
        {"--preset Llama3-8", "got 'Llama3-8'; did you mean 'llama3-8b'?"},
    }));
    test::check_rejected(args, message);
}

TEST_CASE("a far miss gets no suggestion") {
    for (const char* args : {"--frobnicate", "8", "--preset falcon-40b", "quiz stray"}) {
        CAPTURE(args);
        const test::RunResult r = test::run_mha(args);
        CHECK(r.status == 2);
        CHECK_THAT(r.output, !Catch::Contains("did you mean"));
    }
}

TEST_CASE("preset names are read in any case") {
    const test::RunResult upper = test::run_mha("--preset GPT2 --shapes-only --format json", false);
    const test::RunResult lower = test::run_mha("--preset gpt2 --shapes-only --format json", false);
    REQUIRE(upper.status == 0);
    const auto body = [](const std::string& s) { return s.substr(0, s.find("\"wall_time_ms\"")); };
    CHECK(body(upper.output) == body(lower.output));
    CHECK_THAT(upper.output, Catch::Contains("\"d_model\":768"));
}

TEST_CASE("every example of mha --help and mha bench --help runs", "[docs]") {
    std::size_t examples = 0;
    for (const std::string& help : {mha::help_text(), mha::help_text(mha::bench_command())}) {
        std::istringstream lines(help.substr(help.find("Examples:")));
        for (std::string line; std::getline(lines, line);) {
            if (line.rfind("  mha ", 0) != 0) continue;
            const std::string command = line.substr(6, line.find("  ", 6) - 6);
            if (command.find("w.npz") != std::string::npos) continue;  // needs a user's files
            CAPTURE(command);
            const test::RunResult r =
                test::run_command(test::mha_binary() + " " + command + " </dev/null 2>&1");
            INFO(r.output);
            // the quiz with nobody answering fails its score (1); nothing is an error (2)
            CHECK(r.status == (command == "quiz" ? 1 : 0));
            ++examples;
        }
    }
    CHECK(examples >= 8);
}

}  // namespace test_cli
