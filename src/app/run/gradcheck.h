#pragma once
// --gradcheck: the double-precision reference's analytic gradients (core/reference.h)
// against central finite differences of L = Σ output ∘ dO, one table row per tensor, under
// the names the gradients are saved under.

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "app/cli/config.h"
#include "core/reference.h"
#include "io/weights.h"

namespace mha {

// A gradient passes when |analytic − numeric| is at most this at every checked element.
inline constexpr double gradcheck_tolerance = 1e-7;
// Tensors are checked whole when the whole check fits gradcheck_budget_seconds; otherwise
// this many seeded elements of each tensor (all of a smaller one).
inline constexpr std::size_t gradcheck_sample = 16;
inline constexpr double gradcheck_budget_seconds = 1.0;

// Everything L depends on, in double; dO is drawn by run_gradcheck.
struct GradcheckProblem {
    DoubleWeights weights;
    DoubleInputs inputs;
    Masks masks;
    ForwardOptions options;
    Sizes sizes;               // as check_pass gives them (M without the appended positions)
    DoubleTensor grad_output;  // (B, N, d_model) dO
};

// One row of the table: one tensor as --save names it, its parts (in_proj_weight: W_q, W_k,
// W_v) checked as one.
struct GradcheckRow {
    std::string name;
    Shape shape;              // as the file holds it (inputs: batch-first until the caller says)
    std::size_t checked = 0;  // elements compared
    double analytic = 0.0;    // ∂L/∂x at the element with the largest difference
    double numeric = 0.0;     // (L(x + ε) − L(x − ε)) / 2ε there
    double max_diff = 0.0;    // NaN when either side was NaN
};

// The step of the central difference at value x: 1e-5 · max(1, |x|).
double gradcheck_step(double x);

// Compares `analytic` (the gradients of problem's L, whatever computed them) with central
// differences of reference_output: every element when `every_element`, else
// gradcheck_sample seeded elements of each tensor. Rows: input, key, value (those present),
// then one per entry of `names` (io/weights.h: the state dict's arrays, in its order).
std::vector<GradcheckRow> gradcheck_rows(const GradcheckProblem& problem,
                                         const DoubleGradients& analytic,
                                         const StateDictNames& names, bool every_element,
                                         std::uint64_t seed);

// The table and a summary line; 0 when every row is within gradcheck_tolerance, else 1.
// `sampling` words what was checked for the header ("every element").
int print_gradcheck(std::ostream& out, const std::vector<GradcheckRow>& rows,
                    const std::string& sampling);

// --explain: why the row-sum form of the softmax backward equals the full Jacobian form,
// with the numbers of `row`.
void explain_softmax_backward(std::ostream& out, const SoftmaxRow& row);

// mha --gradcheck: the problem the options describe, checked; the exit status.
int run_gradcheck(const Config& config, std::ostream& out);

}  // namespace mha
