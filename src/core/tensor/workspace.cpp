// Workspace: blocks of floats handed out as tensors and taken back once no tensor holds them.

#include "core/tensor/workspace.h"

#include "core/checked.h"
#include "core/tensor/storage.h"

#include <algorithm>
#include <string>
#include <utility>

namespace mha {

namespace {

// Only the workspace holds it: every tensor made in it is gone.
template <class Block>
bool idle(const std::shared_ptr<Block>& block) {
    return block.use_count() == 1;
}

std::size_t floats_of(const std::vector<float>& block) { return block.capacity(); }
std::size_t floats_of(const std::size_t& block) { return block; }

// The smallest idle block with room for `floats`, or null. With none, the idle blocks go (as
// freeing them would have), and the caller makes a new one.
template <class Block>
std::shared_ptr<Block>* reusable(std::vector<std::shared_ptr<Block>>& blocks, std::size_t floats) {
    std::shared_ptr<Block>* best = nullptr;
    for (auto& block : blocks) {
        if (idle(block) && floats_of(*block) >= floats &&
            (best == nullptr || floats_of(*block) < floats_of(**best))) {
            best = &block;
        }
    }
    if (best == nullptr)
        blocks.erase(std::remove_if(blocks.begin(), blocks.end(), idle<Block>), blocks.end());
    return best;
}

}  // namespace

Workspace Workspace::dry() {
    Workspace w;
    w.dry_ = std::make_shared<DryCount>();
    return w;
}

Workspace Workspace::dry_blocks() {
    Workspace w = dry();
    w.dry_blocks_ = true;
    return w;
}

Tensor Workspace::tensor(Shape shape) {
    if (dry_blocks_) return in_dry_block(std::move(shape));
    return dry_ ? Tensor::shape_only(std::move(shape), dry_) : in_block(std::move(shape), true);
}

Tensor Workspace::uninitialised(Shape shape) {
    if (dry_blocks_) return in_dry_block(std::move(shape));
    return dry_ ? Tensor::shape_only(std::move(shape), dry_) : in_block(std::move(shape), false);
}

Tensor Workspace::in_dry_block(Shape shape) {
    const std::string what = "the memory for this configuration";
    const std::size_t floats = float_bytes(shape, what) / sizeof(float);
    std::shared_ptr<const std::size_t>* best = reusable(dry_sizes_, floats);
    if (best == nullptr) {
        dry_sizes_.push_back(std::make_shared<const std::size_t>(floats));
        best = &dry_sizes_.back();
    }
    std::uint64_t held = 0;  // the blocks' bytes, live or idle
    for (const auto& block : dry_sizes_) held = checked_sum({held, *block * sizeof(float)}, what);
    dry_->blocks = held;
    return Tensor::shape_only(std::move(shape), dry_, *best);
}

Tensor Workspace::in_block(Shape shape, bool zero_fill) {
    const std::size_t floats = element_count(shape);
    std::shared_ptr<std::vector<float>>* best = reusable(blocks_, floats);
    if (best != nullptr) return Tensor::in_storage(std::move(shape), *best, zero_fill);
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
