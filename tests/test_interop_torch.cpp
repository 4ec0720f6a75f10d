// The PyTorch parity helper (examples/exercises/06-match-pytorch/export_module.py) run for
// real: both layouts, N = B, the module settings it passes on, and the README's snippet. It
// needs PyTorch for /usr/bin/python3 (make check installs Debian's python3-torch); without it
// the test says it is skipped.

#include <catch2/catch.hpp>

#include "helpers.h"

namespace test_interop_torch {

namespace {

constexpr double parity_tolerance = 1e-5;  // output and attention weights, max abs difference

const char* const torch_python = "/usr/bin/python3";
const char* const helper_folder = "../examples/exercises/06-match-pytorch";

bool torch_present() {
    return test::run_command(std::string(torch_python) + " -c 'import torch, numpy' 2>/dev/null")
               .status == 0;
}

// The two differences the helper or the snippet printed: the first two numbers after `after`.
std::vector<double> differences(const std::string& output, const std::string& after) {
    const std::size_t at = output.find(after);
    REQUIRE(at != std::string::npos);
    static const std::regex number("[0-9.]+e[-+][0-9]+|[0-9]+\\.[0-9]+");
    std::vector<double> found;
    const std::string rest = output.substr(at + after.size());
    for (auto it = std::sregex_iterator(rest.begin(), rest.end(), number);
         it != std::sregex_iterator() && found.size() < 2; ++it) {
        found.push_back(std::stod(it->str()));
    }
    REQUIRE(found.size() == 2);
    return found;
}

// Python `code` run in the helper's folder, where it imports export_module: its output.
test::RunResult run_beside_helper(const std::string& code) {
    const std::string script = std::filesystem::absolute(test::temp_path("beside.py")).string();
    std::ofstream(script) << code;
    const test::RunResult run =
        test::run_command("cd " + std::string(helper_folder) + " && PYTHONPATH=. " + torch_python +
                          " " + script + " 2>&1");
    std::remove(script.c_str());
    return run;
}

// The README's ```python block that imports the helper.
std::string readme_snippet() {
    const std::string readme = test::read_text("../README.md");
    const std::size_t import = readme.find("from export_module import");
    REQUIRE(import != std::string::npos);
    const std::size_t begin = readme.rfind("```python\n", import) + 10;
    return readme.substr(begin, readme.find("```", import) - begin);
}

}  // namespace

TEST_CASE("export_module.py reproduces nn.MultiheadAttention in either layout", "[torch]") {
    if (!torch_present()) {
        WARN("skipped: PyTorch is not installed for " << torch_python
                                                      << " (make check installs python3-torch)");
        return;
    }
    // each line: the helper's command line, run by its main() in one Python (one torch import)
    const std::vector<std::string> runs = {
        "--batch 3 --seq-len 7",
        "--batch 4 --seq-len 4",  // N = B: a wrong layout would broadcast without an error
        "--seq-first --batch 3 --seq-len 7",
        "--seq-first --batch 4 --seq-len 4",
        "--seq-first --batch 4 --seq-len 4 --no-bias --add-bias-kv --add-zero-attn",
        "--seq-first --batch 4 --seq-len 4 --kdim 8",
        "--batch 4 --seq-len 4 --kdim 8",
        "--scratch --batch 4 --seq-len 4"};
    std::string code = "import sys, export_module as e\nfor args in [";
    for (const std::string& args : runs) code += "'" + args + " --d-model 64 --heads 8',";
    code += "]:\n    sys.argv = ['export_module.py', '--mha', '" +
            std::filesystem::absolute(test::mha_binary()).string() +
            "'] + args.split()\n    print('run', args, flush=True)\n"
            "    print('exit', e.main(), flush=True)\n";
    const test::RunResult run = run_beside_helper(code);
    INFO(run.output);
    REQUIRE(run.status == 0);
    for (const std::string& args : runs) {
        CAPTURE(args);
        const std::size_t at = run.output.find("run " + args + " ");
        REQUIRE(at != std::string::npos);
        const std::string part = run.output.substr(at, run.output.find("exit", at) + 6 - at);
        CHECK_THAT(part, Catch::EndsWith("exit 0"));
        for (const double difference : differences(part, "largest difference from PyTorch"))
            CHECK(difference < parity_tolerance);
    }
}

TEST_CASE("the README's batch_first=False snippet runs and agrees", "[torch]") {
    if (!torch_present()) {
        WARN("skipped: PyTorch is not installed for " << torch_python);
        return;
    }
    const std::string folder = test::temp_path("readme-parity");
    std::filesystem::create_directories(folder);
    const std::string script = folder + "/snippet.py";
    std::ofstream(script) << readme_snippet();
    const test::RunResult run = test::run_command(
        "cd " + folder + " && PYTHONPATH=" + std::filesystem::absolute(helper_folder).string() +
        " MHA=" + std::filesystem::absolute(test::mha_binary()).string() + " " + torch_python +
        " snippet.py 2>&1");
    std::filesystem::remove_all(folder);
    INFO(run.output);
    REQUIRE(run.status == 0);
    for (const double difference : differences(run.output, "("))
        CHECK(difference < parity_tolerance);
}

// The README's one command for parity: a batch_first=False module, run from the repository's
// root as the README says, finding build/mha beside it (here MHA names the binary under test).
TEST_CASE("the README's one-command parity check runs on a batch_first=False module", "[torch]") {
    if (!torch_present()) {
        WARN("skipped: PyTorch is not installed for " << torch_python);
        return;
    }
    const std::string readme = test::read_text("../README.md");
    const std::string prompt = "$ python3 examples/exercises/06-match-pytorch/export_module.py";
    const std::size_t at = readme.find(prompt);
    REQUIRE(at != std::string::npos);
    const std::string arguments =
        readme.substr(at + prompt.size(), readme.find('\n', at) - at - prompt.size());
    CHECK_THAT(arguments, Catch::Contains("--seq-first"));
    const test::RunResult run = test::run_command(
        "cd .. && MHA=" + std::filesystem::absolute(test::mha_binary()).string() + " " +
        torch_python + " examples/exercises/06-match-pytorch/export_module.py" + arguments +
        " 2>&1");
    INFO(run.output);
    REQUIRE(run.status == 0);
    for (const double difference : differences(run.output, "largest difference from PyTorch"))
        CHECK(difference < parity_tolerance);
}

TEST_CASE("export_module.py refuses what mha cannot reproduce, in one line", "[torch]") {
    if (!torch_present()) {
        WARN("skipped: PyTorch is not installed for " << torch_python);
        return;
    }
    // each module given to compare(): the one line of its ValueError
    const std::string code =
        "import torch; from export_module import compare\n"
        "for m in (torch.nn.MultiheadAttention(16, 4, kdim=8, vdim=8).eval(),\n"
        "          torch.nn.MultiheadAttention(16, 4, dropout=0.1)):\n"
        "    try: compare(m, torch.randn(5, 2, 16), '.')\n"
        "    except ValueError as refused: print(refused)\n";
    const test::RunResult run = run_beside_helper(code);
    CHECK(run.status == 0);
    CHECK(run.output ==
          "kdim=8, vdim=8 differ from embed_dim=16: give key=... and value=... to export() and "
          "compare()\nthe module is in training mode with dropout=0.1; call module.eval() first "
          "(mha computes the module in eval mode)\n");
    // files another export wrote: another x, or weights the module has since changed
    const test::RunResult stale = run_beside_helper(
        "import os, tempfile, torch; from export_module import export, compare\n"
        "m = torch.nn.MultiheadAttention(16, 4).eval(); x = torch.randn(5, 2, 16)\n"
        "d = os.path.join(tempfile.mkdtemp(), 'p'); export(m, x, d)\n"
        "for change in (lambda: torch.randn(5, 2, 16), lambda: (m.out_proj.weight.add_(1), x)[1]):\n"
        "    with torch.no_grad(): y = change()\n"
        "    try: compare(m, y, d)\n"
        "    except ValueError as refused: print(str(refused).replace(d, 'DIR'))\n");
    CHECK(stale.status == 0);
    CHECK(stale.output ==
          "DIR/x.npy is not the x given to compare(): call export(module, x, 'DIR') with the "
          "same tensors first\nDIR/weights.npz does not hold the module's current "
          "out_proj.weight: call export(module, x, 'DIR') again first\n");
    // no mha anywhere: one line naming where it looked
    const test::RunResult missing =
        test::run_command(std::string(torch_python) + " " + helper_folder +
                          "/export_module.py --mha /nonexistent/mha 2>&1");
    CHECK(missing.status == 2);
    CHECK(missing.output ==
          "export_module.py: cannot find mha ('/nonexistent/mha'): build it with make, put it on "
          "PATH, set MHA=/path/to/mha or give --mha\n");
}

}  // namespace test_interop_torch
