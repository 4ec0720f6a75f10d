// --compare: one layer, seeded the same way, computed at each head count of the list.

#include "app/run/compare.h"

#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "app/run/problem.h"
#include "app/run/variants.h"
#include "show/format.h"
#include "show/text_layout.h"

namespace mha {

namespace {

struct CompareRow {
    std::size_t heads = 0, d_k = 0;
    std::uint64_t parameters = 0, per_head = 0, macs = 0;
    double norm = 0.0;     // ‖output‖ over every element
    double entropy = 0.0;  // mean over (b, h, query) of -sum_j w log w, in nats
    double ms = 0.0;
    RunInfo info;  // sizes and sources, for the heading
};

double frobenius(const Tensor& t) {
    double sum = 0.0;
    for (const float value : t.to_vector()) sum += double(value) * value;
    return std::sqrt(sum);
}

// Mean entropy of the rows of weights (B, h, N, M); rows with NaN (every key blocked) left out.
double mean_entropy(const Tensor& weights) {
    const std::vector<float> w = weights.to_vector();
    const std::size_t m = weights.shape().back();
    double total = 0.0;
    std::size_t rows = 0;
    for (std::size_t start = 0; m > 0 && start < w.size(); start += m) {
        double row = 0.0;
        for (std::size_t j = start; j < start + m; ++j)
            if (w[j] > 0.0f) row -= double(w[j]) * std::log(double(w[j]));
        if (std::isnan(row)) continue;
        total += row;
        ++rows;
    }
    return rows ? total / double(rows) : 0.0;
}

CompareRow run_row(const Config& config, std::size_t heads) {
    Config c = config;
    c.heads = heads;
    c.kv_heads = heads;
    c.compare_heads.clear();
    if (!c.attention) c.attention = AttentionPath::Standard;  // the entropy reads the weights
    const Problem problem = build_problem(c);
    NullTracer quiet;
    const auto start = std::chrono::steady_clock::now();
    const ForwardResult result = run_pass(c, problem, quiet);
    CompareRow row;
    row.ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    row.info = problem.info;
    row.heads = heads;
    row.d_k = problem.info.head_dim;
    row.parameters = problem.info.parameters;
    row.per_head = std::uint64_t(row.d_k) * problem.info.d_model;
    row.macs = problem.info.total_macs;
    row.norm = frobenius(result.output);
    row.entropy = result.weights.empty() ? std::nan("") : mean_entropy(result.weights);
    return row;
}

}  // namespace

void run_compare(const Config& config, std::ostream& out) {
    std::vector<CompareRow> rows;
    for (const std::size_t heads : config.compare_heads) rows.push_back(run_row(config, heads));
    const RunInfo& info = rows.front().info;
    out << "mha --compare: one layer at " << rows.size()
        << " head counts, the same weights and inputs\n";
    write_filled(out,
                 {"B=" + std::to_string(info.batch), "N=" + std::to_string(info.seq_len),
                  "M=" + std::to_string(info.kv_len), "d_model=" + std::to_string(info.d_model),
                  "weights: " + info.weights_source, "inputs: " + info.inputs_source},
                 "  ", "  ", "  ");
    out << "\n   h   d_k  parameters  per head           MACs  |output|  entropy  wall ms\n";
    for (const CompareRow& row : rows) {
        out << padded_left(std::to_string(row.heads), 4) << padded_left(std::to_string(row.d_k), 6)
            << padded_left(with_commas(row.parameters), 12)
            << padded_left(with_commas(row.per_head), 10) << padded_left(with_commas(row.macs), 15)
            << padded_left(fixed(row.norm, 4), 10)
            << padded_left(std::isnan(row.entropy) ? "-" : fixed(row.entropy, 4), 9)
            << padded_left(fixed(row.ms, 2), 9) << "\n";
    }
    bool same_parameters = true, same_macs = true;
    for (const CompareRow& row : rows) {
        same_parameters = same_parameters && row.parameters == rows.front().parameters;
        same_macs = same_macs && row.macs == rows.front().macs;
    }
    out << "\n";
    const std::string uniform = fixed(std::log(double(info.kv_len)), 4);
    write_filled(out,
                 words_of(std::string(same_parameters ? "The parameters are the same at every h"
                                                      : "The parameters differ with h") +
                          " (W_q, W_k, W_v and W_o are d_model x d_model whatever h; per head: "
                          "the d_k·d_model weights of its rows of W_q, as many in W_k, W_v and "
                          "W_o's columns). " +
                          (same_macs ? "The multiply-adds are the same too: h heads of d_k "
                                       "features cost what one head of h·d_k = d_model costs. "
                                     : "The multiply-adds differ with h. ") +
                          "MACs: the multiply-adds of the pass. |output|: the norm of all its "
                          "values. The entropy is in nats, averaged over batches, heads and "
                          "queries; ln M = " +
                          uniform + " would be uniform attention."),
                 " ", "", "");
}

}  // namespace mha
