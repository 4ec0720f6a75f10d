// The human-readable report, written line by line as the forward pass runs.

#include "show/text_report.h"

#include "core/checked.h"
#include "show/explain.h"
#include "show/format.h"
#include "show/kv_ledger_text.h"
#include "show/notes.h"
#include "show/summary.h"
#include "show/text_layout.h"
#include "show/training_text.h"
#include "show/values.h"

#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

namespace mha {

namespace {

constexpr std::size_t name_width = 12;  // step names are padded to this
const std::string step_indent = "    ";

std::string plural(std::size_t count, const std::string& word) {
    return with_commas(count) + " " + word + (count == 1 ? "" : "s");
}

// The run's traits as pieces to be joined by ", ": "(self-attention", "bias", ...,
// "1 thread, avx512 kernels)". Threads and kernels stay one piece, so that a wrapped line
// breaks in the same place whichever kernels the CPU runs.
std::vector<std::string> attention_traits(const RunInfo& info) {
    std::vector<std::string> traits = {info.self_attention ? "(self-attention" : "(cross-attention",
                                       info.bias ? "bias" : "no bias"};
    if (info.causal) traits.push_back("causal");
    for (std::size_t start = 0; !info.variant.empty() && start <= info.variant.size();) {
        const std::size_t end = std::min(info.variant.find(", ", start), info.variant.size());
        traits.push_back(info.variant.substr(start, end - start));
        start = end + 2;
    }
    if (info.shapes_only) {
        traits.push_back("shapes only)");
        return traits;
    }
    const std::string kernels = info.kernels.empty() ? "" : ", " + info.kernels + " kernels";
    traits.push_back(plural(info.threads, "thread") + kernels + ")");
    return traits;
}

// "B=2", "N=8", ...: the sizes, without the traits.
std::vector<std::string> size_pieces(const RunInfo& info) {
    const std::size_t d_k = info.head_dim;
    std::vector<std::string> pieces = {
        "B=" + std::to_string(info.batch),  "N=" + std::to_string(info.seq_len),
        "M=" + std::to_string(info.kv_len), "d_model=" + std::to_string(info.d_model),
        "h=" + std::to_string(info.heads),  "d_k=" + std::to_string(d_k)};
    if (info.kv_heads != info.heads) pieces.push_back("G=" + std::to_string(info.kv_heads));
    if (info.kdim != info.d_model || info.vdim != info.d_model) {
        pieces.push_back("kdim=" + std::to_string(info.kdim));
        pieces.push_back("vdim=" + std::to_string(info.vdim));
    }
    return pieces;
}

// The step's memory layout and cost; "copied" and "MACs" stay together when wrapped.
// A paged cache's step adds the bytes its last blocks hold unwritten.
std::vector<std::string> layout_pieces(const Step& step) {
    std::vector<std::string> pieces = {
        named_shape(step.dims, step.shape), "strides " + to_string(step.strides),
        step.contiguous ? "contiguous" : "non-contiguous",
        "copied " + byte_size(step.copied_bytes) + "  MACs " + with_commas(step.macs)};
    if (step.facts.paged) pieces.push_back("unused " + byte_size(step.facts.paged->unused_bytes));
    return pieces;
}

// "= 4·256² + 4·256" when the count is the standard layer's: four square
// projections, with or without their four biases.
std::string parameter_formula(const RunInfo& info) {
    const std::uint64_t e = info.d_model;
    const std::string square = "4·" + std::to_string(e) + "²";
    if (info.parameters == 4 * e * e) return " = " + square;
    if (info.parameters == 4 * e * e + 4 * e) return " = " + square + " + 4·" + std::to_string(e);
    return "";
}

// "(256, 256) = 65,536"
std::string matrix(std::uint64_t rows, std::uint64_t cols) {
    return "(" + std::to_string(rows) + ", " + std::to_string(cols) +
           ") = " + with_commas(rows * cols);
}

// MLA's matrices in Hugging Face's names, and what each head owns of them.
std::vector<std::string> mla_parameters(const MlaSizes& m) {
    const std::uint64_t e = m.d_model, h = m.heads;
    return {"per projection: q_proj " + matrix(h * (m.d_nope + m.d_rope), e) +
                ", kv_a_proj_with_mqa " + matrix(m.d_latent + m.d_rope, e) + ", kv_a_layernorm (" +
                std::to_string(m.d_latent) + "), kv_b_proj " +
                matrix(h * (m.d_nope + m.d_v), m.d_latent) + ", o_proj " + matrix(e, h * m.d_v),
            "per head: d_h + d_R = " + std::to_string(m.d_nope + m.d_rope) +
                " rows of q_proj, d_h + d_v = " + std::to_string(m.d_nope + m.d_v) +
                " rows of kv_b_proj, d_v = " + std::to_string(m.d_v) +
                " columns of o_proj; the latent and the RoPE key are shared by every head"};
}

// "per projection: W_q, W_k, W_v, W_o (256, 256) = 65,536 each (+ bias)" and
// "per head: d_k·d_model = 64·256 = 16,384 of each of W_q, W_k, W_v, W_o"; W_q is
// (h·d_k, d_model) and W_o (d_model, h·d_k) when the heads are not d_model / h wide; with
// --fused-qkv, "W_qkv (768, 256) = 196,608, W_o (256, 256) = 65,536" and "... of each third of
// W_qkv and of W_o".
std::vector<std::string> projection_parameters(const RunInfo& info) {
    if (info.mla) return mla_parameters(*info.mla);
    const std::uint64_t e = info.d_model, d_k = info.head_dim;
    const std::uint64_t q_rows = std::uint64_t(info.heads) * d_k;
    const std::uint64_t kv_rows = std::uint64_t(info.kv_heads) * d_k;
    const bool square = q_rows == e && kv_rows == e && info.kdim == e && info.vdim == e;
    const std::string query_output =
        q_rows == e ? "W_q, W_o " + matrix(e, e) + " each"
                    : "W_q " + matrix(q_rows, e) + ", W_o " + matrix(e, q_rows);
    const std::string projections =
        info.fused_qkv ? "W_qkv " + matrix(3 * q_rows, e) + ", W_o " + matrix(e, q_rows)
        : square       ? "W_q, W_k, W_v, W_o " + matrix(e, e) + " each"
                       : query_output + ", W_k " + matrix(kv_rows, info.kdim) + ", W_v " +
                       matrix(kv_rows, info.vdim);
    return {"per projection: " + projections + (info.bias ? " (+ bias)" : ""),
            "per head: d_k·d_model = " + std::to_string(d_k) + "·" + std::to_string(e) + " = " +
                with_commas(d_k * e) +
                (info.fused_qkv ? " of each third of W_qkv and of W_o"
                 : square       ? " of each of W_q, W_k, W_v, W_o"
                                : " of each of W_q and W_o")};
}

}  // namespace

void TextReport::begin(const RunInfo& info) {
    info_ = info;
    previous_why_.clear();
    out_ << "mha: multi-head attention, step by step\n";
    out_ << "  maths: src/core/reference.cpp (plain loops, forward and backward)\n";
    // the traits in parentheses are one piece, or lines of their own when wider than a line
    // (a model's layer, MLA's sizes), so that no terminal wraps them mid-word
    std::vector<std::string> sizes = size_pieces(info);
    const std::vector<std::string> traits = attention_traits(info);
    std::string one_piece;
    std::vector<std::string> with_commas_after = traits;  // a comma ends each line but the last
    for (std::size_t i = 0; i < traits.size(); ++i) {
        one_piece += (i ? ", " : "") + traits[i];
        if (i + 1 < traits.size()) with_commas_after[i] += ",";
    }
    if (display_width("  " + one_piece) <= text_columns) {
        sizes.push_back(one_piece);
        write_filled(out_, sizes, "  ", "  ", "  ");
    } else {
        write_filled(out_, sizes, "  ", "  ", "  ");
        write_filled(out_, with_commas_after, " ", "  ", "   ");
    }
    std::vector<std::string> sources = {"weights: " + info.weights_source,
                                        "inputs: " + info.inputs_source};
    if (!info.grad_output_source.empty()) sources.push_back("dO: " + info.grad_output_source);
    write_filled(out_, sources, "   ", "  ", "  ");
    if (!info.kept.empty()) write_filled(out_, kept_pieces(info), " ", "  ", "    ");
    out_ << "  parameters: " << with_commas(info.parameters) << parameter_formula(info) << "\n";
    if (info.heads > 0) {
        for (const std::string& line : projection_parameters(info))
            write_filled(out_, words_of(line), " ", "  ", "    ");
    }
    for (const std::string& note : info.layout_notes) {
        write_filled(out_, words_of(note), " ", "  · ", "    ");
    }
}

void TextReport::on_step(const Step& step) {
    out_ << "\n"
         << padded_left(step_number(step), 2) << "  " << padded_right(step.name, name_width) << " "
         << step.expression << "\n";
    if (!step.einops.empty()) out_ << step_indent << "einops: " << step.einops << "\n";
    write_filled(out_, layout_pieces(step), "  ", step_indent, step_indent);
    for (const std::string& note : step_notes(step)) {
        write_filled(out_, words_of(note), " ", step_indent + "· ", step_indent + "  ");
    }
    if (!step.allowed.empty()) write_mask_grid(out_, step.allowed, step_indent);
    const std::string why = info_.explain ? explanation(step) : "";
    if (why != previous_why_ && !why.empty()) {
        write_filled(out_, words_of("why: " + why), " ", step_indent, step_indent + "     ");
    }
    previous_why_ = why;
    if (info_.values && step.value != nullptr)
        out_ << format_values(*step.value, step_indent) << "\n";
}

void write_mask_grid(std::ostream& out, const std::vector<std::vector<bool>>& allowed,
                     const std::string& indent) {
    const std::size_t key_width = std::to_string(allowed.front().size() - 1).size();
    const std::size_t query_width = std::to_string(allowed.size() - 1).size();
    const std::string query_label = "  query ";
    const std::string gap = "   ";
    out << indent << "mask for batch 0, head 0 (. attends, x blocked):\n";
    out << indent << padded_left("key", query_label.size() + query_width + gap.size());
    for (std::size_t key = 0; key < allowed.front().size(); ++key) {
        out << " " << padded_left(std::to_string(key), key_width);
    }
    out << "\n";
    for (std::size_t query = 0; query < allowed.size(); ++query) {
        out << indent << query_label << padded_left(std::to_string(query), query_width) << gap;
        for (bool may_attend : allowed[query])
            out << " " << padded_left(may_attend ? "." : "x", key_width);
        out << "\n";
    }
}

void TextReport::finish(const ForwardResult& result, double wall_ms) {
    if (info_.shapes_only) {
        out_ << "\n";
        const std::string backward =
            info_.backward ? " " + sentence(backward_macs_text(info_)) +
                                 (info_.kept.empty() ? ""
                                                     : " " + sentence(training_memory_text(info_)))
                           : "";
        write_filled(
            out_,
            words_keeping_sizes("shapes only: nothing was computed or allocated. Computing this "
                     "pass would allocate " +
                     byte_size(info_.activation_bytes) + " for " + info_.activation_tensors +
                     ", and take " + with_commas(info_.total_macs) + " multiply-adds." +
                     backward),
            " ", "", "");
        if (info_.kv_ledger)
            for (const std::string& line : kv_ledger_lines(*info_.kv_ledger)) out_ << line << "\n";
        out_ << "wall time: " << fixed(wall_ms, 2) << " ms (shapes only)\n";
        return;
    }
    const TensorStats stats = stats_of(result.output);
    const std::string heading =
        "output " + named_shape({"B", "N", "d_model"}, result.output.shape()) + ":";
    const std::string numbers = result.output.numel() == 0
                                    ? "no values (an empty dimension)"
                                    : "mean " + fixed(stats.mean, 4) + "  std " +
                                          fixed(stats.std, 4) + "  min " + fixed(stats.min, 4) +
                                          "  max " + fixed(stats.max, 4);
    const bool one_line = display_width(heading + " " + numbers) <= text_columns;
    out_ << "\n" << heading << (one_line ? " " : "\n  ") << numbers << "\n";
    if (stats.nan_count + stats.inf_count > 0) {
        out_ << "  not finite, left out of the statistics: " << with_commas(stats.nan_count)
             << " NaN, " << with_commas(stats.inf_count) << " inf (of "
             << with_commas(result.output.numel()) << " values)\n";
    }
    if (result.fully_masked_rows > 0) {
        write_filled(out_,
                     words_of("fully masked: " + plural(result.fully_masked_rows, "query row") +
                              " (over all batches and heads) had every key blocked;"
                              " their attention weights are NaN, or zero if asked for"),
                     " ", "", "  ");
    }
    if (info_.backward) write_filled(out_, words_of(backward_macs_text(info_)), " ", "", "  ");
    out_ << "wall time: " << fixed(wall_ms, 2) << " ms ("
         << (info_.grad_output_source.empty() ? "forward pass, "
                                               : "forward and backward passes, ")
         << plural(info_.threads, "thread") << ")\n";
}

}  // namespace mha
