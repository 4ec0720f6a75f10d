// The forward pass's steps from sizes alone: strides follow from each step's
// view, transpose or copy exactly as core/tensor.cpp computes them.

#include "core/shapes.h"

#include <cmath>
#include <sstream>
#include <utility>

#include "core/checked.h"
#include "core/kv_heads.h"

namespace mha {

namespace {

using Dims = std::vector<std::string>;

constexpr std::size_t max_grid = 16;  // the mask grid, as forward() draws it

// A tensor's layout without its values.
struct Layout {
    Shape shape;
    Strides strides;
};

Layout contiguous(Shape shape) {
    Strides strides = contiguous_strides(shape);
    return {std::move(shape), std::move(strides)};
}

Layout swapped(Layout t) {  // transpose(1, 2)
    std::swap(t.shape[1], t.shape[2]);
    std::swap(t.strides[1], t.strides[2]);
    return t;
}

// Reports one step and adds its multiply-adds to the total.
class Steps {
public:
    explicit Steps(Tracer& tracer) : tracer_(tracer) {}

    Step& add(int number, std::string name, std::string tensor, std::string expression, Dims dims,
              const Layout& layout, std::uint64_t macs = 0) {
        flush();
        pending_ = make_layout_step(number, std::move(name), std::move(tensor),
                                    std::move(expression), std::move(dims), layout.shape,
                                    layout.strides, macs);
        has_pending_ = true;
        total_macs_ = checked_sum({total_macs_, macs}, "the multiply-adds");
        return pending_;
    }

    // Hands the last step to the tracer; add() calls it before starting the next one.
    void flush() {
        if (has_pending_ && tracer_.enabled()) tracer_.on_step(pending_);
        pending_ = Step();
        has_pending_ = false;
    }

    std::uint64_t total_macs() const { return total_macs_; }

private:
    Tracer& tracer_;
    Step pending_;
    bool has_pending_ = false;
    std::uint64_t total_macs_ = 0;
};

std::string with_bias(bool bias, const char* name) {
    return bias ? std::string(" + ") + name : std::string();
}

std::vector<std::vector<bool>> causal_grid(std::size_t n, std::size_t m) {
    std::vector<std::vector<bool>> grid(n, std::vector<bool>(m));
    for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t j = 0; j < m; ++j) grid[i][j] = j + n <= i + m;  // j <= i + M - N
    }
    return grid;
}

}  // namespace

std::uint64_t parameter_count(const Sizes& s, bool bias) {
    const std::string what = "the parameter count";
    const std::uint64_t E = s.d_model, kv = std::uint64_t(s.kv_heads) * (s.d_model / s.heads);
    const std::uint64_t weights = checked_sum(
        {checked_product({2, E, E}, what), checked_product({kv, checked_sum({s.kdim, s.vdim}, what)}, what)},
        what);
    return checked_sum({weights, bias ? 2 * E + 2 * kv : 0}, what);
}

std::uint64_t trace_shapes(const ShapeRun& run, Tracer& tracer) {
    const Sizes& s = run.sizes;
    const std::uint64_t B = s.batch, N = s.seq_len, M = s.kv_len, E = s.d_model, h = s.heads;
    const std::uint64_t G = s.kv_heads, d_k = E / h;
    const std::string what = "the multiply-adds";
    const std::string g = G == h ? "h" : "G", kv_width = G == h ? "d_model" : "G·d_k";
    const bool self = run.self_attention;
    const std::string xq = self ? "x" : "x_q", xk = self ? "x" : "x_k", xv = self ? "x" : "x_v";
    Steps steps(tracer);

    steps.add(0, "input", xq, xq, {"B", "N", "d_model"}, contiguous({B, N, E}));
    if (!self) {
        steps.add(0, "input", "x_k", "x_k", {"B", "M", s.kdim == E ? "d_model" : "kdim"},
                  contiguous({B, M, s.kdim}));
        steps.add(0, "input", "x_v", "x_v", {"B", "M", s.vdim == E ? "d_model" : "vdim"},
                  contiguous({B, M, s.vdim}));
    }
    const Layout q = contiguous({B, N, E}), k = contiguous({B, M, G * d_k});
    steps.add(1, "project", "Q", "Q = " + xq + " @ W_q.T" + with_bias(run.bias, "b_q"),
              {"B", "N", "d_model"}, q, checked_product({B, N, E, E}, what));
    steps.add(2, "project", "K", "K = " + xk + " @ W_k.T" + with_bias(run.bias, "b_k"),
              {"B", "M", kv_width}, k, checked_product({B, M, G * d_k, s.kdim}, what));
    steps.add(3, "project", "V", "V = " + xv + " @ W_v.T" + with_bias(run.bias, "b_v"),
              {"B", "M", kv_width}, k, checked_product({B, M, G * d_k, s.vdim}, what));

    const Layout q4 = contiguous({B, N, h, d_k}), k4 = contiguous({B, M, G, d_k});
    steps.add(4, "view", "Q", "Q.view(B, N, h, d_k)", {"B", "N", "h", "d_k"}, q4);
    steps.add(4, "view", "K", "K.view(B, M, " + g + ", d_k)", {"B", "M", g, "d_k"}, k4);
    steps.add(4, "view", "V", "V.view(B, M, " + g + ", d_k)", {"B", "M", g, "d_k"}, k4);
    steps.add(5, "transpose", "Q", "Q.transpose(1, 2)", {"B", "h", "N", "d_k"}, swapped(q4));
    Step& k5 = steps.add(5, "transpose", "K", "K.transpose(1, 2)", {"B", g, "M", "d_k"}, swapped(k4));
    if (G != h) k5.notes = kv_sharing_notes(h, G);
    Step& v5 = steps.add(5, "transpose", "V", "V.transpose(1, 2)", {"B", g, "M", "d_k"}, swapped(k4));
    if (G != h) v5.notes = kv_cost_notes(s);

    const Dims scores_dims = {"B", "h", "N", "M"};
    const Layout scores = contiguous({B, h, N, M});
    const std::uint64_t attend_macs = checked_product({B, h, N, M, d_k}, what);
    Step& s6 = steps.add(6, "scores", "scores", "scores = Q @ K.transpose(-2, -1)", scores_dims,
                         scores, attend_macs);
    if (G != h) s6.notes.push_back(kv_repeat_note(h, G));
    s6.notes.push_back(standard_path_note(checked_product({B, h, N, M, sizeof(float)}, what)));
    std::ostringstream factor;
    factor << "1/sqrt(d_k) = 1/sqrt(" << d_k << ") = " << float(1.0 / std::sqrt(double(d_k)));
    steps.add(7, "scale", "scores", "scores / math.sqrt(d_k)", scores_dims, scores).notes = {
        factor.str()};
    Masks masks;
    masks.causal = run.causal;
    Step& s8 = steps.add(8, "mask", "scores",
                         run.causal ? "scores + mask  (blocked: -inf)" : "scores  (unchanged)",
                         scores_dims, scores);
    s8.notes = mask_notes(masks, s);
    if (run.causal && N <= max_grid && M <= max_grid) s8.allowed = causal_grid(N, M);
    steps.add(9, "softmax", "weights", "weights = torch.softmax(scores, dim=-1)", scores_dims,
              scores);

    const Layout context = contiguous({B, h, N, d_k});
    steps.add(10, "context", "context", "context = weights @ V", {"B", "h", "N", "d_k"}, context,
              attend_macs);
    const Layout back = swapped(context);
    steps.add(11, "transpose", "context", "context.transpose(1, 2)", {"B", "N", "h", "d_k"}, back);
    const bool copies = !is_contiguous(back.shape, back.strides);
    steps.add(12, "contiguous", "context", "context.contiguous()", {"B", "N", "h", "d_k"},
              contiguous(back.shape))
        .copied_bytes = copies ? checked_product({B, N, E, sizeof(float)}, "the copy") : 0;
    steps.add(13, "view", "concat", "concat = context.view(B, N, d_model)", {"B", "N", "d_model"},
              contiguous({B, N, E}));
    steps.add(14, "project", "output", "output = concat @ W_o.T" + with_bias(run.bias, "b_o"),
              {"B", "N", "d_model"}, contiguous({B, N, E}), checked_product({B, N, E, E}, what));
    steps.flush();
    return steps.total_macs();
}

}  // namespace mha
