// The projections of steps 1-3 and 14, y = x Wᵀ + b, split over threads; the weights packed
// once for the kernels.

#include "core/pass/projection.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/checked.h"
#include "core/threads/parallel.h"

namespace mha {

namespace {

// The fewest parts a thread's share of a projection is cut into.
constexpr std::size_t parts_per_thread = 4;

}  // namespace

void project_into(const float* x, std::size_t rows, std::size_t in,
                  const std::vector<LinearTarget>& targets, std::size_t threads) {
    std::uint64_t out = 0;
    for (const LinearTarget& t : targets) out += t.out;
    threads = threads_for(std::uint64_t(rows) * in * out, threads);
    const std::size_t panels = linear_panel_count(targets);
    if (threads > 1 && panels >= threads) {
        // Parts of at most one group of panels each (each part reads x and its panels of W as
        // a call on all the panels would), at least parts_per_thread a thread, claimed by the
        // next free thread: a thread the host keeps from its core holds up one part.
        const std::size_t group = linear_group_panels(in, rows);
        const std::size_t parts =
            std::max((panels + group - 1) / group, std::min(panels, parts_per_thread * threads));
        parallel_ranges(parts, parts, threads, [&](std::size_t begin, std::size_t end) {
            for (std::size_t part = begin; part < end; ++part)
                linear_panels(x, in, targets, 0, rows, panels * part / parts,
                              panels * (part + 1) / parts);
        });
        return;
    }
    const std::size_t columns = std::max<std::size_t>(1, std::min(threads, panels));
    const std::size_t row_parts = std::max<std::size_t>(1, std::min(threads / columns, rows));
    const std::size_t parts = columns * row_parts;
    parallel_for(parts, parts, [&](std::size_t begin, std::size_t end) {
        for (std::size_t part = begin; part < end; ++part) {
            const std::size_t r = part / columns, c = part % columns;
            linear_panels(x, in, targets, rows * r / row_parts, rows * (r + 1) / row_parts,
                          panels * c / columns, panels * (c + 1) / columns);
        }
    });
}

LinearTarget linear_target(const Tensor& w, const Tensor& bias, Tensor& y,
                           const PackedLinear* packed) {
    return {w.data(), bias.empty() ? nullptr : bias.data(), y.data(), w.size(0),
            packed == nullptr ? nullptr : packed->for_kernels()};
}

PackedWeights pack_weights(const Weights& w) {
    if (w.w_q.dry()) return {};  // a dry run packs nothing
    const auto pack = [](const Tensor& t) { return pack_linear(t.data(), t.size(0), t.size(1)); };
    return {pack(w.w_q), pack(w.w_k), pack(w.w_v), pack(w.w_o)};
}

std::uint64_t packed_weights_bytes(const Sizes& s) {
    const std::string what = "the memory for this configuration";
    const std::size_t q = s.inner(), kv = s.kv_heads * s.d_k();
    return checked_product(
        {sizeof(float),
         checked_sum({packed_linear_floats(q, s.d_model), packed_linear_floats(kv, s.kdim),
                      packed_linear_floats(kv, s.vdim), packed_linear_floats(s.d_model, q)},
                     what)},
        what);
}

// 1-3 and 14: x (B, L, in) -> x Wᵀ + b (B, L, out).
Tensor project(const Tensor& x, const Tensor& w, const Tensor& bias, std::size_t threads,
               Workspace* workspace, const PackedLinear* packed) {
    const Shape shape = {x.size(0), x.size(1), w.size(0)};
    if (any_dry(x, w)) return new_dry(workspace, shape);  // a dry run: the shape alone
    Tensor y = new_uninitialised(workspace, shape);
    project_into(x.data(), x.size(0) * x.size(1), w.size(1), {linear_target(w, bias, y, packed)},
                 threads);
    return y;
}

}  // namespace mha
