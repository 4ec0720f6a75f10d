#pragma once
// Workspace: the memory of a pass kept for the next one. A pass run again (mha bench's
// repeats, a model's layers) takes its tensors from blocks the previous pass faulted in,
// instead of fresh zero pages from the operating system.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/tensor/tensor.h"

namespace mha {

class Workspace {
public:
    Workspace() = default;
    // A dry run's workspace: every tensor it hands out has a shape and strides but no storage
    // (Tensor::shape_only), and it counts the bytes they would hold, at their peak: each
    // tensor's while it lives, as a run without a workspace allocates them.
    static Workspace dry();
    // The same, counting what a workspace would hold instead: its blocks, live or idle, taken
    // and let go as tensor() takes and lets them go (a model's layers, a trainer's steps).
    static Workspace dry_blocks();
    bool is_dry() const { return dry_ != nullptr; }
    // A dry workspace's: the most bytes its tensors would have held at once.
    std::uint64_t peak_bytes() const { return dry_ ? dry_->peak : 0; }

    // A zero-filled contiguous tensor of this shape, in the smallest block no live tensor
    // holds that fits it. When none fits, the idle blocks are released (as freeing them
    // would have) and a new block is made, so the workspace never holds more than the
    // pass's largest live set plus the idle blocks that are all smaller than any request
    // that followed them.
    Tensor tensor(Shape shape);
    // The same block, not filled: the values are what the block last held (zeros where it
    // never held any). Only for a tensor whose every element is written before one is read;
    // it spares the one-threaded fill the multi-threaded kernels would overwrite.
    Tensor uninitialised(Shape shape);

    // Bytes of all its blocks, live or idle.
    std::uint64_t bytes() const;

private:
    Tensor in_block(Shape shape, bool zero_fill);  // tensor() and uninitialised()

    Tensor in_dry_block(Shape shape);  // dry_blocks()' tensor() and uninitialised()

    std::vector<std::shared_ptr<std::vector<float>>> blocks_;
    std::shared_ptr<DryCount> dry_;  // set in a dry workspace
    bool dry_blocks_ = false;        // dry_blocks(): its blocks, by their floats, in dry_sizes_
    std::vector<std::shared_ptr<const std::size_t>> dry_sizes_;
};

// A zero-filled contiguous tensor: from the workspace when there is one, else new.
Tensor new_tensor(Workspace* workspace, Shape shape);
// A contiguous tensor for a caller that writes every element: from the workspace unfilled
// (Workspace::uninitialised) when there is one, else new and zero-filled.
Tensor new_uninitialised(Workspace* workspace, Shape shape);
// The result of an op on dry operands: a shape-only tensor, counted by the workspace when it is
// a dry one.
Tensor new_dry(Workspace* workspace, Shape shape);

}  // namespace mha
