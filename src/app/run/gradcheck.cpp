// --gradcheck: central differences of L against the reference's gradients, the table, the
// refusal of sizes too large for --max-time, and --explain's derivation of the softmax backward.

#include "app/run/gradcheck.h"

#include <algorithm>
#include <cmath>
#include <ostream>
#include <set>

#include "app/run/layout.h"
#include "app/run/problem.h"
#include "app/run/time_guard.h"
#include "core/error.h"
#include "core/pass/shape_checks.h"
#include "io/init.h"
#include "show/format.h"
#include "show/text_layout.h"

namespace mha {

namespace {

constexpr std::uint32_t sample_stream = 6;  // io/init.cpp's streams are 1-5
// Multiply-adds per second of the reference's plain double loops on one thread: it sustained
// 8e8 at the default sizes on a shared 2-core machine; a lower rate errs towards too long.
constexpr double reference_macs_per_second = 5e8;

// One row's tensor as L sees it: its parts in the perturbed copy, stacked in this order, each
// with its analytic gradient.
struct Checked {
    std::string name;
    Shape shape;
    std::vector<std::pair<DoubleTensor*, const DoubleTensor*>> parts;  // (value, gradient)

    std::size_t count() const {
        std::size_t n = 0;
        for (const auto& part : parts) n += part.first->values.size();
        return n;
    }
};

// The inputs (those present), then the state dict's arrays in `names`' order.
std::vector<Checked> checked_tensors(GradcheckProblem& p, const DoubleGradients& g,
                                     const StateDictNames& names) {
    std::vector<Checked> tensors;
    const auto add_input = [&](const char* name, DoubleTensor& x, const DoubleTensor& grad) {
        if (!x.absent()) tensors.push_back({name, x.shape, {{&x, &grad}}});
    };
    add_input("input", p.inputs.x_q, g.input);
    add_input("key", p.inputs.x_k, g.key);
    add_input("value", p.inputs.x_v, g.value);
    for (const StateDictEntry& entry : names) {
        Checked tensor{entry.name, entry.shape, {}};
        for (const WeightPart part : entry.parts) {
            const auto member = weight_member<DoubleWeights>(part);  // the state dict's part
            tensor.parts.push_back({&(p.weights.*member), &(g.params.*member)});
        }
        tensors.push_back(std::move(tensor));
    }
    return tensors;
}

DoubleTensor output_of(const GradcheckProblem& p) {
    return reference_output(p.weights, p.inputs, p.masks, p.options, p.sizes);
}

// L(above) − L(below) = Σ (output_above − output_below) ∘ dO, the outputs subtracted first:
// most of each output cancels before anything is summed, so less rounding is left than in
// the difference of the two sums
double loss_difference(const DoubleTensor& above, const DoubleTensor& below,
                       const DoubleTensor& grad_output) {
    double sum = 0.0;
    for (std::size_t i = 0; i < above.values.size(); ++i)
        sum += (above.values[i] - below.values[i]) * grad_output.values[i];
    return sum;
}

// The elements of a tensor of `count` to check: all, or `gradcheck_sample` distinct seeded ones
// in increasing order.
std::vector<std::size_t> elements_to_check(std::size_t count, bool every_element, Random& random) {
    if (every_element || count <= gradcheck_sample) {
        std::vector<std::size_t> all(count);
        for (std::size_t i = 0; i < count; ++i) all[i] = i;
        return all;
    }
    std::set<std::size_t> chosen;
    while (chosen.size() < gradcheck_sample) {  // two 24-bit draws: any index below 2^48
        const double draw = std::floor(random.uniform() * 16777216.0) * 16777216.0 +
                            std::floor(random.uniform() * 16777216.0);
        chosen.insert(std::size_t(std::fmod(draw, double(count))));
    }
    return {chosen.begin(), chosen.end()};
}

// Adds one checked element to its row.
void record(GradcheckRow& row, double analytic, double numeric) {
    const double diff = std::fabs(analytic - numeric);
    ++row.checked;
    const bool worse = std::isnan(diff) ? !std::isnan(row.max_diff) : diff > row.max_diff;
    if (row.checked == 1 || worse) {
        row.max_diff = diff;
        row.analytic = analytic;
        row.numeric = numeric;
    }
}

// Multiply-adds of one reference forward (steps 1-3, 6 and 10, 14).
std::uint64_t forward_macs(const GradcheckProblem& p) {
    const Sizes& s = p.sizes;
    const std::uint64_t m =
        s.kv_len + (p.weights.bias_k.absent() ? 0 : 1) + (p.options.add_zero_attn ? 1 : 0);
    return std::uint64_t(s.batch) *
           (std::uint64_t(s.seq_len) * s.d_model * s.inner() * 2 +
            std::uint64_t(s.kv_len) * (s.kdim + s.vdim) * s.kv_heads * s.d_k() +
            std::uint64_t(s.heads) * s.seq_len * m * s.d_k() * 2);
}

// Element counts of the tensors the check perturbs, one per row.
std::vector<std::size_t> checked_counts(const GradcheckProblem& p, const StateDictNames& names) {
    GradcheckProblem copy = p;
    const DoubleGradients none;
    std::vector<std::size_t> counts;
    for (const Checked& tensor : checked_tensors(copy, none, names))
        counts.push_back(tensor.count());
    return counts;
}

GradcheckProblem problem_of(const Problem& problem) {
    GradcheckProblem p{to_double(problem.weights),
                       to_double(problem.inputs),
                       problem.masks,
                       problem.options,
                       check_pass(problem.weights, problem.inputs, problem.masks, problem.options),
                       {}};
    p.grad_output = to_double(problem.grad_output);  // --backward's seeded dO
    return p;
}

// The rows named and shaped as --save writes the gradients: the inputs in the files' layout
// ((N, B, E) seq-first, (N, E) unbatched), the weights under --weights-prefix's names.
void as_saved(std::vector<GradcheckRow>& rows, InputLayout layout, const std::string& prefix) {
    for (GradcheckRow& row : rows) {
        if (row.name != "input" && row.name != "key" && row.name != "value") {
            row.name = prefix + row.name;
        } else if (layout == InputLayout::SeqFirst) {
            std::swap(row.shape[0], row.shape[1]);
        } else if (layout == InputLayout::Unbatched) {
            row.shape.erase(row.shape.begin());
        }
    }
}

}  // namespace

double gradcheck_step(double x) { return 1e-5 * std::max(1.0, std::fabs(x)); }

std::vector<GradcheckRow> gradcheck_rows(const GradcheckProblem& problem,
                                         const DoubleGradients& analytic,
                                         const StateDictNames& names, bool every_element,
                                         std::uint64_t seed) {
    GradcheckProblem perturbed = problem;
    Random random(seed, sample_stream);
    std::vector<GradcheckRow> rows;
    for (const Checked& tensor : checked_tensors(perturbed, analytic, names)) {
        GradcheckRow row{tensor.name, tensor.shape};
        for (std::size_t e : elements_to_check(tensor.count(), every_element, random)) {
            std::size_t part = 0;  // element e of the stacked parts
            while (e >= tensor.parts[part].first->values.size())
                e -= tensor.parts[part++].first->values.size();
            double& x = tensor.parts[part].first->values[e];
            const double original = x;
            const double above = original + gradcheck_step(original);
            const double below = original - gradcheck_step(original);
            x = above;
            const DoubleTensor out_above = output_of(perturbed);
            x = below;
            const DoubleTensor out_below = output_of(perturbed);
            x = original;
            record(row, tensor.parts[part].second->values[e],
                   loss_difference(out_above, out_below, problem.grad_output) / (above - below));
        }
        rows.push_back(row);
    }
    return rows;
}

int print_gradcheck(std::ostream& out, const std::vector<GradcheckRow>& rows,
                    const std::string& sampling) {
    out << "gradcheck in double: L = sum(output * dO), dO standard normal (--seed)\n"
        << "numeric = (L(x + e) - L(x - e)) / 2e, e = 1e-5 * max(1, |x|), at " << sampling << "\n"
        << "analytic, numeric: dL/dx at each tensor's element with the largest difference\n\n";
    std::vector<std::vector<std::string>> cells = {
        {"name", "shape", "analytic", "numeric", "max diff"}};
    for (const GradcheckRow& row : rows) {
        cells.push_back({row.name, to_string(row.shape), scientific(row.analytic, 9),
                         scientific(row.numeric, 9), scientific(row.max_diff, 1)});
    }
    std::vector<std::size_t> widths(cells[0].size(), 0);
    for (const auto& line : cells) {
        for (std::size_t c = 0; c < line.size(); ++c)
            widths[c] = std::max(widths[c], line[c].size());
    }
    for (const auto& line : cells) {
        std::string text;
        for (std::size_t c = 0; c < line.size(); ++c)
            text += c + 1 == line.size() ? line[c] : padded_right(line[c], widths[c]) + " | ";
        out << text << "\n";
    }
    std::size_t failed = 0;
    const GradcheckRow* worst = nullptr;
    for (const GradcheckRow& row : rows) {
        if (!(row.max_diff <= gradcheck_tolerance)) ++failed;
        if (worst == nullptr || !(row.max_diff <= worst->max_diff)) worst = &row;
    }
    const std::string largest =
        worst == nullptr
            ? ""
            : " (largest difference " + scientific(worst->max_diff, 1) + ", " + worst->name + ")";
    if (failed == 0) {
        out << "\ngradcheck passed: all " << rows.size() << " tensors within "
            << scientific(gradcheck_tolerance, 0) << largest << "\n";
        return 0;
    }
    out << "\ngradcheck FAILED: " << failed << " of " << rows.size()
        << " tensors differ by more than " << scientific(gradcheck_tolerance, 0) << largest << "\n";
    return 1;
}

void explain_softmax_backward(std::ostream& out, const SoftmaxRow& row) {
    const std::size_t m = row.p.size();
    std::vector<double> rowsum(m), jacobian(m);
    softmax_row_backward(row.p.data(), row.dp.data(), rowsum.data(), m);
    softmax_row_backward_jacobian(row.p.data(), row.dp.data(), jacobian.data(), m);
    double diff = 0.0, d = 0.0;
    for (std::size_t j = 0; j < m; ++j) {
        diff = std::max(diff, std::fabs(rowsum[j] - jacobian[j]));
        d += row.dp[j] * row.p[j];
    }
    out << "\nWhy the softmax backward needs no (M, M) matrix\n"
           "  A row of weights p = softmax(s) moves with every score of its row: dp_j/ds_i =\n"
           "  p_i (delta_ij - p_j), the Jacobian diag(p) - p p^T. The full form multiplies it\n"
           "  by dp: ds_i = sum_j (diag(p) - p p^T)_ij dp_j. Split the sum: the diagonal gives\n"
           "  p_i dp_i, the outer product gives p_i sum_j p_j dp_j. So ds = p * (dp - D) with\n"
           "  one number per row, D = sum_j dp_j p_j: M multiply-adds instead of M^2.\n"
           "  And D needs no dp at all: dp_j = dO_h . V_j and O_h = sum_j p_j V_j, so\n"
           "  D = sum_j p_j (dO_h . V_j) = dO_h . O_h (FlashAttention-2 computes it so).\n";
    if (m == 0) return;
    out << "  In this run (batch 0, head 0, the last query, M = " << m << "):\n"
        << "    largest |row-sum form - Jacobian form| = " << scientific(diff, 1) << "\n"
        << "    D = sum(dp * p) = " << scientific(d, 12)
        << ",  dO_h . O_h = " << scientific(row.d_from_output, 12) << "\n";
}

int run_gradcheck(const Config& config, std::ostream& out) {
    const Problem problem = build_problem(config);
    GradcheckProblem p = problem_of(problem);
    std::size_t all = 0, sampled = 0;
    for (std::size_t count : checked_counts(p, problem.weight_names)) {
        all += count;
        sampled += std::min(count, gradcheck_sample);
    }
    const std::uint64_t macs = forward_macs(p);
    const bool every_element =
        double(all) * 2 * double(macs) <= reference_macs_per_second * gradcheck_budget_seconds;
    const std::uint64_t checked = every_element ? all : sampled;
    check_time((checked * 2 + 3) * macs, 1, reference_macs_per_second, config.max_time,
               "--gradcheck runs two double-precision forwards per checked element on one "
               "thread; smaller sizes check faster");
    const ReferenceGradResult reference =
        reference_forward_backward(p.weights, p.inputs, p.masks, p.options, p.sizes, p.grad_output);
    if (reference.fully_masked_rows > 0 && !p.options.zero_masked_rows) {
        throw Error("--gradcheck: " + std::to_string(reference.fully_masked_rows) +
                    " query row(s) have every key blocked, so the output and its gradients are "
                    "NaN, as in PyTorch; --masked-rows zero gives those rows zeros");
    }
    std::vector<GradcheckRow> rows =
        gradcheck_rows(p, reference.grads, problem.weight_names, every_element, config.seed);
    as_saved(rows, problem.layout, config.weights_prefix);
    const int status =
        print_gradcheck(out, rows,
                        every_element ? "every element"
                                      : std::to_string(gradcheck_sample) +
                                            " seeded elements of each tensor (seed " +
                                            std::to_string(config.seed) + ")");
    if (config.explain) explain_softmax_backward(out, reference.row);
    return status;
}

}  // namespace mha
