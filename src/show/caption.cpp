// Captions from the RunInfo the printers already hold.

#include "show/caption.h"

namespace mha {

std::string sizes_text(const RunInfo& info) {
    const std::size_t d_k = info.head_dim;
    std::string text = "B=" + std::to_string(info.batch) + ", N=" + std::to_string(info.seq_len) +
                       ", M=" + std::to_string(info.kv_len) +
                       ", d_model=" + std::to_string(info.d_model) +
                       ", h=" + std::to_string(info.heads) + ", d_k=" + std::to_string(d_k);
    text += info.self_attention ? ", self-attention" : ", cross-attention";
    text += info.bias ? ", bias" : ", no bias";
    if (info.causal) text += ", causal";
    if (!info.variant.empty()) text += ", " + info.variant;
    return text;
}

std::vector<std::string> caption_lines(const RunInfo& info, const std::string& what) {
    std::vector<std::string> lines = {what};
    if (!info.tokens.empty()) {
        std::string sentence;
        for (const std::string& token : info.tokens)
            sentence += (sentence.empty() ? "" : " ") + token;
        lines.push_back("text: " + sentence);
    }
    lines.push_back("sizes: " + sizes_text(info));
    lines.push_back("weights: " + info.weights_source + "; inputs: " + info.inputs_source);
    return lines;
}

}  // namespace mha
