// --head-contributions: each head's share of the output, and the check that they sum to it.

#include "app/run/contributions.h"

#include <cmath>
#include <vector>

#include "app/run/variants.h"
#include "core/error.h"
#include "show/format.h"
#include "show/text_layout.h"

namespace mha {

namespace {

// Keeps a copy of step 13's concat (B, N, h·d_k) as the pass reports it, and its width.
class ConcatKeeper final : public Tracer {
public:
    void on_step(const Step& step) override {
        if ((step.kind != StepKind::JoinHeads && step.kind != StepKind::Concat) || !step.value)
            return;
        concat = step.value->to_vector();
        width = step.shape.back();
    }
    std::vector<float> concat;  // (B, N, h·d_k) in C order
    std::size_t width = 0;      // h·d_k
};

}  // namespace

void report_contributions(std::ostream& out, const Config& config, const Problem& problem,
                          const ForwardResult& result) {
    ConcatKeeper keeper;
    run_pass(config, problem, keeper);
    if (keeper.concat.empty() && result.output.numel() > 0) {
        throw Error("--head-contributions found no concat (step 13) in this form of the pass");
    }
    const std::vector<float>& concat = keeper.concat;  // (B, N, h·d_k)
    const Tensor& w_o_tensor = problem.mla ? problem.mla->w_o : problem.weights.w_o;
    const std::vector<float> w_o = w_o_tensor.to_vector();  // (d_model, h·d_k); MLA: h·d_v
    const std::vector<float> b_o =
        problem.weights.b_o.empty() ? std::vector<float>() : problem.weights.b_o.to_vector();
    const std::vector<float> output = result.output.to_vector();  // (B, N, d_model)
    const std::size_t E = problem.info.d_model, h = problem.info.heads;
    const std::size_t W = keeper.width, d_k = W / h;         // the concat's width h·d_k
    const std::size_t rows = W > 0 ? concat.size() / W : 0;  // B·N
    std::vector<double> norms(h, 0.0);
    std::vector<double> sums(output.size(), 0.0);  // sum_i C_i + b_o
    for (std::size_t r = 0; r < rows; ++r) {
        for (std::size_t j = 0; j < E; ++j) {
            sums[r * E + j] = b_o.empty() ? 0.0 : b_o[j];
            for (std::size_t i = 0; i < h; ++i) {
                double part = 0.0;  // C_i[r, j]
                for (std::size_t c = i * d_k; c < (i + 1) * d_k; ++c) {
                    part += double(concat[r * W + c]) * w_o[j * W + c];
                }
                norms[i] += part * part;
                sums[r * E + j] += part;
            }
        }
    }
    double total = 0.0, worst = 0.0;
    for (double& norm : norms) total += (norm = std::sqrt(norm));
    for (std::size_t k = 0; k < output.size(); ++k)
        worst = std::max(worst, std::abs(sums[k] - output[k]));
    out << "\nhead contributions: head i's slice of concat times W_o's columns for it\n";
    for (std::size_t i = 0; i < h; ++i) {
        out << "  head " << i << ": columns " << i * d_k << "-" << (i + 1) * d_k - 1 << ", norm "
            << fixed(norms[i], 4) << ", " << fixed(total > 0 ? 100.0 * norms[i] / total : 0.0, 1)
            << "% of the heads' norms\n";
    }
    write_filled(out,
                 words_of("sum of the " + std::to_string(h) + " contributions" +
                          (b_o.empty() ? "" : " + b_o") + " = output: largest difference " +
                          scientific(worst, 1)),
                 " ", "  ", "  ");
}

}  // namespace mha
