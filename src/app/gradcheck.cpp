// --gradcheck: central differences of L against the reference's gradients, the table, the
// refusal of sizes too large for --max-time, and --explain's derivation of the softmax backward.

#include "app/gradcheck.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <set>

#include "app/layout.h"
#include "app/problem.h"
#include "app/time_guard.h"
#include "core/error.h"
#include "core/pass/shape_checks.h"
#include "io/init.h"

namespace mha {

namespace {

constexpr std::uint32_t grad_output_stream = 6;  // io/init.cpp's streams are 1-4
constexpr std::uint32_t sample_stream = 7;
// Multiply-adds per second of the reference's plain double loops on one thread: it sustained
// 8e8 at the default sizes on a shared 2-core machine; a lower rate errs towards too long.
constexpr double reference_macs_per_second = 5e8;

// A tensor L depends on: where it lives in the perturbed copy, and its analytic gradient.
struct Slot {
    const std::string* name;
    DoubleTensor* value;
    const DoubleTensor* gradient;
};

std::vector<Slot> slots_of(GradcheckProblem& p, const DoubleGradients& g,
                           const ParameterNames& names) {
    static const std::string input = "input", key = "key", value = "value";
    std::vector<Slot> slots = {{&input, &p.inputs.x_q, &g.input},
                               {&key, &p.inputs.x_k, &g.key},
                               {&value, &p.inputs.x_v, &g.value}};
    DoubleWeights& w = p.weights;
    const DoubleWeights& d = g.params;
    const std::vector<Slot> weights = {
        {&names.w_q, &w.w_q, &d.w_q},          {&names.w_k, &w.w_k, &d.w_k},
        {&names.w_v, &w.w_v, &d.w_v},          {&names.w_o, &w.w_o, &d.w_o},
        {&names.b_q, &w.b_q, &d.b_q},          {&names.b_k, &w.b_k, &d.b_k},
        {&names.b_v, &w.b_v, &d.b_v},          {&names.b_o, &w.b_o, &d.b_o},
        {&names.q_norm, &w.q_norm, &d.q_norm}, {&names.k_norm, &w.k_norm, &d.k_norm},
        {&names.bias_k, &w.bias_k, &d.bias_k}, {&names.bias_v, &w.bias_v, &d.bias_v}};
    slots.insert(slots.end(), weights.begin(), weights.end());
    slots.erase(
        std::remove_if(slots.begin(), slots.end(), [](const Slot& s) { return s.value->absent(); }),
        slots.end());
    return slots;
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

// Adds one checked element to the row of its name.
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

GradcheckRow& row_named(std::vector<GradcheckRow>& rows, const std::string& name,
                        const Shape& shape) {
    for (GradcheckRow& row : rows) {
        if (row.name != name) continue;
        row.shape[0] += shape[0];  // a further part, stacked along dimension 0
        return row;
    }
    rows.push_back({name, shape});
    return rows.back();
}

std::string scientific(double value, int digits) {
    char text[32];
    std::snprintf(text, sizeof text, "%.*e", digits, value);
    return text;
}

std::string padded(const std::string& text, std::size_t width) {
    return text + std::string(width > text.size() ? width - text.size() : 0, ' ');
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

// Element counts of the tensors the check perturbs.
std::vector<std::size_t> slot_sizes(const GradcheckProblem& p) {
    GradcheckProblem copy = p;
    const DoubleGradients none;
    const ParameterNames names;
    std::vector<std::size_t> sizes;
    for (const Slot& slot : slots_of(copy, none, names)) sizes.push_back(slot.value->values.size());
    return sizes;
}

GradcheckProblem problem_of(const Problem& problem, std::uint64_t seed) {
    GradcheckProblem p{to_double(problem.weights),
                       to_double(problem.inputs),
                       problem.masks,
                       problem.options,
                       check_pass(problem.weights, problem.inputs, problem.masks, problem.options),
                       {}};
    const Sizes& s = p.sizes;
    p.grad_output.shape = {s.batch, s.seq_len, s.d_model};
    Random random(seed, grad_output_stream);
    p.grad_output.values.resize(s.batch * s.seq_len * s.d_model);
    for (double& value : p.grad_output.values) value = random.normal();
    return p;
}

// The input rows' shapes in the files' layout: (N, B, E) seq-first, (N, E) unbatched.
void shapes_in_layout(std::vector<GradcheckRow>& rows, InputLayout layout) {
    for (GradcheckRow& row : rows) {
        if (row.name != "input" && row.name != "key" && row.name != "value") continue;
        if (layout == InputLayout::SeqFirst) std::swap(row.shape[0], row.shape[1]);
        if (layout == InputLayout::Unbatched) row.shape.erase(row.shape.begin());
    }
}

}  // namespace

ParameterNames torch_parameter_names(const Weights& w) {
    const std::size_t E = w.d_model();
    const bool packed = w.q_width() == E && w.kv_width() == E && w.kdim() == E && w.vdim() == E;
    return {packed ? "in_proj_weight" : "q_proj_weight",
            packed ? "in_proj_weight" : "k_proj_weight",
            packed ? "in_proj_weight" : "v_proj_weight",
            "out_proj.weight",
            "in_proj_bias",
            "in_proj_bias",
            "in_proj_bias",
            "out_proj.bias",
            "q_norm.weight",
            "k_norm.weight",
            "bias_k",
            "bias_v"};
}

double gradcheck_step(double x) { return 1e-5 * std::max(1.0, std::fabs(x)); }

std::vector<GradcheckRow> gradcheck_rows(const GradcheckProblem& problem,
                                         const DoubleGradients& analytic,
                                         const ParameterNames& names, bool every_element,
                                         std::uint64_t seed) {
    GradcheckProblem perturbed = problem;
    Random random(seed, sample_stream);
    std::vector<GradcheckRow> rows;
    for (const Slot& slot : slots_of(perturbed, analytic, names)) {
        GradcheckRow& row = row_named(rows, *slot.name, slot.value->shape);
        for (std::size_t e : elements_to_check(slot.value->values.size(), every_element, random)) {
            double& x = slot.value->values[e];
            const double original = x;
            const double above = original + gradcheck_step(original);
            const double below = original - gradcheck_step(original);
            x = above;
            const DoubleTensor out_above = output_of(perturbed);
            x = below;
            const DoubleTensor out_below = output_of(perturbed);
            x = original;
            record(row, slot.gradient->values[e],
                   loss_difference(out_above, out_below, problem.grad_output) / (above - below));
        }
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
            text += c + 1 == line.size() ? line[c] : padded(line[c], widths[c]) + " | ";
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
    softmax_backward_rowsum(row.p.data(), row.dp.data(), rowsum.data(), m);
    softmax_backward_jacobian(row.p.data(), row.dp.data(), jacobian.data(), m);
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
    GradcheckProblem p = problem_of(problem, config.seed);
    std::size_t all = 0, sampled = 0;
    for (std::size_t count : slot_sizes(p)) {
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
    std::vector<GradcheckRow> rows = gradcheck_rows(
        p, reference.grads, torch_parameter_names(problem.weights), every_element, config.seed);
    shapes_in_layout(rows, problem.layout);
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
