// The machine-readable report: begin() opens the document, on_step() appends to
// "steps", finish() closes it.

#include "show/json_report.h"

#include "show/format.h"
#include "show/notes.h"
#include "show/summary.h"

#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace mha {

namespace {

// A JSON string: quote, backslash and control characters escaped; UTF-8 passes through.
std::string quoted(const std::string& text) {
    static const std::map<char, std::string> escapes = {
        {'"', "\\\""}, {'\\', "\\\\"}, {'\n', "\\n"}, {'\r', "\\r"},
        {'\t', "\\t"}, {'\b', "\\b"},  {'\f', "\\f"}};
    std::string json = "\"";
    for (char c : text) {
        const auto escape = escapes.find(c);
        if (escape != escapes.end()) {
            json += escape->second;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            char code[8];
            std::snprintf(code, sizeof code, "\\u%04x", static_cast<unsigned>(c));
            json += code;
        } else {
            json += c;
        }
    }
    return json + "\"";
}

std::string boolean(bool value) { return value ? "true" : "false"; }

template <typename Items, typename Write>
std::string array(const Items& items, Write write) {
    std::string json = "[";
    for (const auto& item : items) {
        if (json.size() > 1) json += ",";
        json += write(item);
    }
    return json + "]";
}

std::string sizes(const std::vector<std::size_t>& values) {
    return array(values, [](std::size_t v) { return std::to_string(v); });
}

std::string strings(const std::vector<std::string>& values) { return array(values, quoted); }

std::string grid(const std::vector<std::vector<bool>>& allowed) {
    return array(allowed, [](const std::vector<bool>& row) { return array(row, boolean); });
}

// The values in C order as nested arrays, one level per dimension.
void append_nested(std::string& json, const std::vector<float>& values, const Shape& shape,
                   std::size_t axis, std::size_t& next) {
    if (axis == shape.size()) {
        json += json_number(values[next++]);
        return;
    }
    json += "[";
    for (std::size_t i = 0; i < shape[axis]; ++i) {
        if (i > 0) json += ",";
        append_nested(json, values, shape, axis + 1, next);
    }
    json += "]";
}

std::string nested(const Tensor& t) {
    std::string json;
    std::size_t next = 0;
    append_nested(json, t.to_vector(), t.shape(), 0, next);
    return json;
}

std::string config(const RunInfo& info) {
    const std::size_t d_k = info.head_dim;
    return "{\"B\":" + std::to_string(info.batch) + ",\"N\":" + std::to_string(info.seq_len) +
           ",\"M\":" + std::to_string(info.kv_len) +
           ",\"d_model\":" + std::to_string(info.d_model) + ",\"h\":" + std::to_string(info.heads) +
           ",\"G\":" + std::to_string(info.kv_heads) + ",\"d_k\":" + std::to_string(d_k) +
           ",\"kdim\":" + std::to_string(info.kdim) + ",\"vdim\":" + std::to_string(info.vdim) +
           ",\"self_attention\":" + boolean(info.self_attention) +
           ",\"bias\":" + boolean(info.bias) + ",\"causal\":" + boolean(info.causal) +
           ",\"threads\":" + std::to_string(info.threads) + ",\"kernels\":" + quoted(info.kernels) +
           ",\"variant\":" + quoted(info.variant) + ",\"weights\":" + quoted(info.weights_source) +
           ",\"inputs\":" + quoted(info.inputs_source) +
           (info.grad_output_source.empty()
                ? ""
                : ",\"grad_output\":" + quoted(info.grad_output_source)) +
           "}";
}

// --backward: what the forward kept for it and the multiply-adds of both passes.
std::string backward_object(const RunInfo& info) {
    const std::string kept = array(info.kept, [](const KeptTensor& t) {
        return "{\"tensor\":" + quoted(t.name) + ",\"dims\":" + strings(t.dims) +
               ",\"shape\":" + sizes(t.shape) + ",\"bytes\":" + std::to_string(t.bytes) + "}";
    });
    return "{\"kept\":" + kept + ",\"kept_bytes\":" + std::to_string(kept_bytes(info.kept)) +
           ",\"forward_macs\":" + std::to_string(info.macs.forward) +
           ",\"backward_macs\":" + std::to_string(info.macs.backward) + "}";
}

// A paged cache's step 2: the pool, every sequence's block table, the position written last.
std::string paged_object(const PagedFacts& p) {
    const PagedPosition& at = p.positions.back();
    return "{\"block_size\":" + std::to_string(p.block_size) +
           ",\"pool_blocks\":" + std::to_string(p.pool_blocks) +
           ",\"held\":" + std::to_string(p.held) +
           ",\"tables\":" + array(p.tables, sizes) + ",\"position\":{\"t\":" +
           std::to_string(at.position) + ",\"entry\":" + std::to_string(at.entry) +
           ",\"block\":" + std::to_string(at.block) + ",\"slot\":" + std::to_string(at.slot) +
           "},\"unused_bytes\":" + std::to_string(p.unused_bytes) + "}";
}

std::string step_object(const Step& step, bool values) {
    std::string json = "{\"step\":" + std::to_string(step.number) +
                       (step.backward ? ",\"backward\":true" : "") +
                       ",\"name\":" + quoted(step.name) + ",\"tensor\":" + quoted(step.tensor) +
                       ",\"expression\":" + quoted(step.expression);
    if (!step.einops.empty()) json += ",\"einops\":" + quoted(step.einops);
    json += ",\"dims\":" + strings(step.dims) + ",\"shape\":" + sizes(step.shape) +
            ",\"strides\":" + sizes(step.strides) + ",\"contiguous\":" + boolean(step.contiguous) +
            ",\"copied_bytes\":" + std::to_string(step.copied_bytes) +
            ",\"macs\":" + std::to_string(step.macs) + ",\"notes\":" + strings(step_notes(step));
    if (!step.allowed.empty()) json += ",\"allowed\":" + grid(step.allowed);
    if (step.facts.paged) json += ",\"paged\":" + paged_object(*step.facts.paged);
    if (values && step.value != nullptr) json += ",\"values\":" + nested(*step.value);
    return json + "}";
}

std::string output_object(const Tensor& output) {
    const TensorStats stats = stats_of(output);
    return "{\"shape\":" + sizes(output.shape()) + ",\"mean\":" + json_number(stats.mean) +
           ",\"std\":" + json_number(stats.std) + ",\"min\":" + json_number(stats.min) +
           ",\"max\":" + json_number(stats.max) +
           ",\"nan_count\":" + std::to_string(stats.nan_count) +
           ",\"inf_count\":" + std::to_string(stats.inf_count) + "}";
}

// A byte count, or null when the ledger does not count it.
std::string count_or_null(bool counted, std::uint64_t bytes) {
    return counted ? std::to_string(bytes) : "null";
}

// float32, int8, int4 and paged: one sequence's bytes, or the sequences that fit.
std::string ledger_totals(const KvLedger& k, const KvLedgerTotals& t) {
    return "{\"float32\":" + std::to_string(t.float32) +
           ",\"int8\":" + count_or_null(k.quantised, t.int8) +
           ",\"int4\":" + count_or_null(k.quantised, t.int4) +
           ",\"paged\":" + count_or_null(k.block_size > 0, t.paged) + "}";
}

std::string ledger_row(const KvLedger& k, const KvLedgerRow& r) {
    const bool paged = k.block_size > 0;
    return "{\"layers\":" + sizes(r.layers) + ",\"kv_heads\":" + std::to_string(r.kv_heads) +
           ",\"head_dim\":" + std::to_string(r.head_dim) + ",\"latent\":" +
           std::to_string(r.latent) + ",\"rope\":" + std::to_string(r.rope) +
           ",\"window\":" + std::to_string(r.window) + ",\"cached\":" + std::to_string(r.cached) +
           ",\"per_token\":" + std::to_string(r.per_token) + ",\"float32\":" +
           std::to_string(r.float32) + ",\"int8\":" + count_or_null(k.quantised, r.int8) +
           ",\"int4\":" + count_or_null(k.quantised, r.int4) +
           ",\"blocks\":" + count_or_null(paged, r.blocks) +
           ",\"paged\":" + count_or_null(paged, r.paged) +
           ",\"unused\":" + count_or_null(paged, r.unused) + "}";
}

// --shapes-only --decode T: the KV cache ledger (docs/json-schema.md, `kv_ledger`).
std::string ledger_object(const KvLedger& k) {
    return "{\"model\":" + quoted(k.model) + ",\"dtype\":\"float32\",\"T\":" +
           std::to_string(k.length) + ",\"context\":" + std::to_string(k.context) +
           ",\"layers\":" + std::to_string(k.layers) +
           ",\"rows\":" + array(k.rows, [&k](const KvLedgerRow& r) { return ledger_row(k, r); }) +
           ",\"per_token\":" + std::to_string(k.per_token) +
           ",\"quantised\":" + boolean(k.quantised) + ",\"quant_note\":" + quoted(k.quant_note) +
           ",\"block_size\":" + std::to_string(k.block_size) +
           ",\"mha_heads\":" + std::to_string(k.mha_heads) +
           ",\"mha_head_dim\":" + std::to_string(k.mha_head_dim) +
           ",\"mha_per_token\":" + std::to_string(k.mha_per_token) +
           ",\"total\":" + ledger_totals(k, k.total) +
           ",\"max_memory\":" + std::to_string(k.max_memory) +
           ",\"fits\":" + ledger_totals(k, k.fits) + "}";
}

}  // namespace

void JsonReport::begin(const RunInfo& info) {
    values_ = info.values;
    info_ = info;
    first_step_ = true;
    out_ << "{\"tool\":\"mha\",\"schema_version\":" << json_schema_version
         << ",\"config\":" << config(info) << ",\"parameters\":" << info.parameters
         << (info.backward ? ",\"backward\":" + backward_object(info) : "") << ",\"steps\":[";
}

void JsonReport::on_step(const Step& step) {
    out_ << (first_step_ ? "\n" : ",\n") << step_object(step, values_);
    first_step_ = false;
}

void JsonReport::finish(const ForwardResult& result, double wall_ms) {
    if (info_.shapes_only) {
        out_ << "\n],\"output\":null,\"shapes_only\":{\"activation_bytes\":"
             << info_.activation_bytes << ",\"macs\":" << info_.total_macs << "}"
             << (info_.kv_ledger ? ",\"kv_ledger\":" + ledger_object(*info_.kv_ledger) : "")
             << ",\"wall_time_ms\":" << json_number(wall_ms) << "}\n";
        return;
    }
    out_ << "\n],\"output\":" << output_object(result.output)
         << ",\"fully_masked_rows\":" << result.fully_masked_rows
         << ",\"wall_time_ms\":" << json_number(wall_ms) << "}\n";
}

}  // namespace mha
