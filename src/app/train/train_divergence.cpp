// Where a diverged training step's NaN or infinity first appeared: the parameters, then each
// row of the batch traced through the model until a tensor holds one.

#include "app/train/train_divergence.h"

#include <cmath>
#include <vector>

#include "app/run/non_finite.h"
#include "core/backward/model_backward.h"
#include "core/error.h"
#include "core/pass/step.h"
#include "core/train/parameters.h"

namespace mha {

std::string first_non_finite(TrainState& state, const Batch& batch, std::size_t threads) {
    for (const Parameter& p : model_parameters(state.model)) {
        const Tensor values = gather_parameter(p);
        for (std::size_t i = 0; i < values.numel(); ++i)
            if (!std::isfinite(values.data()[i])) return "the parameter " + p.name;
    }
    const std::size_t n = state.model.context(), rows = batch.tokens.size() / n;
    for (std::size_t r = 0; r < rows; ++r) {
        const auto row = [&](const std::vector<std::size_t>& v) {
            return std::vector<std::size_t>(v.begin() + std::ptrdiff_t(r * n),
                                            v.begin() + std::ptrdiff_t((r + 1) * n));
        };
        NonFiniteFinder finder;
        try {
            model_forward_backward(state.model, row(batch.tokens), row(batch.targets), 0, threads,
                                   finder);
        } catch (const Error& error) {
            return error.what();
        }
        if (!finder.where.empty()) return finder.where + " of row " + std::to_string(r);
    }
    return "no single tensor (the batch's rows are finite one by one)";
}

}  // namespace mha
