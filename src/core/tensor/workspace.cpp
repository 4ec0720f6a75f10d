// Workspace: blocks of floats handed out as tensors and taken back once no tensor holds them.

#include "core/tensor/workspace.h"

#include "core/tensor/storage.h"

#include <algorithm>
#include <utility>

namespace mha {

namespace {

// Only the workspace holds it: every tensor made in it is gone.
bool idle(const std::shared_ptr<std::vector<float>>& block) { return block.use_count() == 1; }

}  // namespace

Workspace Workspace::dry() {
    Workspace w;
    w.dry_ = std::make_shared<DryCount>();
    return w;
}

Tensor Workspace::tensor(Shape shape) {
    return dry_ ? Tensor::shape_only(std::move(shape), dry_) : in_block(std::move(shape), true);
}

Tensor Workspace::uninitialised(Shape shape) {
    return dry_ ? Tensor::shape_only(std::move(shape), dry_) : in_block(std::move(shape), false);
}

Tensor Workspace::in_block(Shape shape, bool zero_fill) {
    const std::size_t floats = element_count(shape);
    std::shared_ptr<std::vector<float>>* best = nullptr;
    for (auto& block : blocks_) {
        if (idle(block) && block->capacity() >= floats &&
            (best == nullptr || block->capacity() < (*best)->capacity())) {
            best = &block;
        }
    }
    if (best != nullptr) return Tensor::in_storage(std::move(shape), *best, zero_fill);
    blocks_.erase(std::remove_if(blocks_.begin(), blocks_.end(), idle), blocks_.end());
    auto block = std::make_shared<std::vector<float>>();
    block->reserve(floats);
    count_tensor_bytes(std::uint64_t(floats) * sizeof(float));
    blocks_.push_back(block);
    return Tensor::in_storage(std::move(shape), std::move(block), zero_fill);
}

std::uint64_t Workspace::bytes() const {
    std::uint64_t total = 0;
    for (const auto& block : blocks_) total += block->capacity() * sizeof(float);
    return total;
}

Tensor new_tensor(Workspace* workspace, Shape shape) {
    return workspace != nullptr ? workspace->tensor(std::move(shape)) : Tensor(std::move(shape));
}

Tensor new_uninitialised(Workspace* workspace, Shape shape) {
    return workspace != nullptr ? workspace->uninitialised(std::move(shape))
                                : Tensor(std::move(shape));
}

Tensor new_dry(Workspace* workspace, Shape shape) {
    return workspace != nullptr && workspace->is_dry() ? workspace->tensor(std::move(shape))
                                                       : Tensor::shape_only(std::move(shape));
}

}  // namespace mha
