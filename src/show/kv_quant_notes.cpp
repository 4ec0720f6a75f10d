// --kv-quant's facts in words.

#include "show/kv_quant_notes.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "show/format.h"

namespace mha {

namespace {

// Three significant digits: "0.0123", "4.56e-07".
std::string short_number(double value) {
    std::ostringstream text;
    text.precision(3);
    text << value;
    return text.str();
}

std::string percent(double part, double whole) {
    return whole > 0 ? fixed(100.0 * part / whole, 1) + "%" : "0%";
}

// The step that yields the zero points: how the groups run and what each keeps.
std::string grouping(const KvQuantFacts& q) {
    const std::string levels = std::to_string((1u << q.bits) - 1);
    const std::string n(1, q.tensor);
    return "int" + std::to_string(q.bits) + ", asymmetric min-max (KIVI): " + n +
           " in groups of " + std::to_string(q.group) +
           (q.along_tokens ? " positions along the tokens, within each channel"
                           : " values along d_k, within each position's vector") +
           "; each group keeps a zero point m = min and a scale s = (max - m) / " + levels +
           ", both float32 (a group whose values are all equal: s = 0, x_hat = m)";
}

// What stays float: the residual R and, along the tokens, a group not full yet.
std::string held(const KvQuantFacts& q) {
    const std::string n(1, q.tensor), levels = std::to_string((1u << q.bits) - 1);
    std::string text = "positions 0 to " + std::to_string(q.quantised - 1) + " of " + n +
                       " are codes q = round_half_even((x - m) / s) clamped to 0.." + levels +
                       ", read as x_hat = s * q + m";
    if (q.quantised == q.length) return text;
    text += "; positions " + std::to_string(q.quantised) + " to " + std::to_string(q.length - 1) +
            " stay float (";
    if (q.residual) text += "the last R = " + std::to_string(q.residual) + " positions";
    if (q.residual && q.along_tokens) text += ", and ";
    if (q.along_tokens) text += "a group of " + std::to_string(q.group) + " fills first";
    return text + ")";
}

// "[0.1, -0.2, ...]": at most the first 8 values, 4 significant digits.
std::string values(const std::vector<float>& v) {
    std::ostringstream text;
    text.precision(4);
    text << "[";
    for (std::size_t i = 0; i < v.size() && i < 8; ++i) text << (i ? ", " : "") << v[i];
    return text.str() + (v.size() > 8 ? ", ...]" : "]");
}

// One group by hand: its values, where they fall between m and m + 15s, and what comes back.
std::string example(const KvQuantFacts& q, const QuantGroupExample& e) {
    std::vector<float> codes;
    const float top = float((1u << q.bits) - 1);
    for (float r : e.ratio) codes.push_back(std::min(std::max(std::nearbyint(r), 0.0f), top));
    return "by hand, batch 0, head 0, the group from position " + std::to_string(e.first) +
           (q.along_tokens ? " down channel 0" : "") + ": x = " + values(e.x) +
           ", m = " + short_number(e.zero) + ", s = " + short_number(e.scale) +
           ", (x - m) / s = " + values(e.ratio) + ", q = " + values(codes) +
           ", x_hat = " + values(e.x_hat);
}

std::string memory(const KvQuantFacts& q) {
    const std::uint64_t total = q.code_bytes + q.scale_bytes + q.float_bytes;
    return "the cache holds " + with_commas(total) + " bytes for its " + std::to_string(q.length) +
           (q.length == 1 ? " position: " : " positions: ") + with_commas(q.code_bytes) + " of int" + std::to_string(q.bits) +
           " codes, " + with_commas(q.scale_bytes) + " of scales and zero points, " +
           with_commas(q.float_bytes) + " in float; all float: " + with_commas(q.plain_bytes) +
           " bytes (" + percent(total, q.plain_bytes) + " of it)";
}

void error_notes(const QuantErrorFacts& e, std::vector<std::string>& notes) {
    const std::string what = e.of == QuantErrorFacts::Of::Scores    ? "the scores"
                             : e.of == QuantErrorFacts::Of::Weights ? "the weights"
                                                                    : "the output";
    notes.push_back(what + " minus the same step over the float cache" +
                    (e.max_abs ? ": moved by at most " + short_number(*e.max_abs) +
                                     " (relative " + short_number(*e.relative) +
                                     " of its largest |value|)"
                               : std::string()));
    if (e.moved && e.max_abs && *e.max_abs > 0) {
        notes.push_back("the weight that moved most: batch " + std::to_string(e.moved->batch) +
                        ", head " + std::to_string(e.moved->head) + ", key " +
                        std::to_string(e.moved->key) + ", " + short_number(e.moved->before) +
                        " -> " + short_number(e.moved->after));
    }
}

}  // namespace

void kv_quant_notes(const Step& step, std::vector<std::string>& notes) {
    const StepFacts& f = step.facts;
    if (f.quant_error) error_notes(*f.quant_error, notes);
    if (!f.kv_quant) return;
    const KvQuantFacts& q = *f.kv_quant;
    switch (q.part) {
        case KvQuantFacts::Part::Zero:
            notes.push_back(grouping(q));
            break;
        case KvQuantFacts::Part::Scale:
            break;
        case KvQuantFacts::Part::Dequantised:
            notes.push_back(held(q));
            if (q.example) notes.push_back(example(q, *q.example));
            notes.push_back(memory(q));
            break;
        case KvQuantFacts::Part::Cache:
            notes.push_back(memory(q));
            break;
    }
}

}  // namespace mha
