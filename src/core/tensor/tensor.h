#pragma once
// Strided float32 tensor (shared storage, shape, strides, offset) with PyTorch's
// view / transpose / contiguous semantics: transpose never copies, view refuses
// strides it cannot express, contiguous copies only when it must.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor/storage.h"

namespace mha {

using Shape = std::vector<std::size_t>;
using Strides = std::vector<std::size_t>;  // in elements, like Tensor.stride()

std::string to_string(const Shape& shape);  // "(2, 8, 256)"
std::size_t element_count(const Shape& shape);
// The bytes of float32 elements of this shape; throws mha::Error naming `what` past 64 bits.
std::uint64_t float_bytes(const Shape& shape, const std::string& what);
Strides contiguous_strides(const Shape& shape);
// C order, ignoring the strides of size-1 dimensions (as PyTorch does).
bool is_contiguous(const Shape& shape, const Strides& strides);

// A tensor's shape and strides without its values: what view, transpose, permute and
// select do to them. Tensor keeps one.
struct Layout {
    Shape shape;
    Strides strides;

    static Layout contiguous_of(Shape shape);  // C order
    bool is_contiguous() const { return mha::is_contiguous(shape, strides); }
    // Throws mha::Error when the element count differs or the strides do not allow it.
    Layout view(const Shape& new_shape) const;
    Layout transpose(std::size_t a, std::size_t b) const;
    Layout permute(const std::vector<std::size_t>& order) const;
    Layout select(std::size_t d) const;  // dimension d dropped (the offset is the tensor's)
};

// What a dry run's tensors would hold, in bytes: now and at its peak. A dry workspace keeps
// one; each tensor counted in it adds its bytes while it lives, unless it is in one of the
// workspace's blocks (Workspace::dry_blocks), which count instead.
struct DryCount {
    std::uint64_t live = 0;    // the counted tensors outside blocks
    std::uint64_t blocks = 0;  // the blocks, live or idle
    std::uint64_t peak = 0;    // of live + blocks
};

class Tensor {
public:
    Tensor() = default;
    explicit Tensor(Shape shape);                    // zero-filled, contiguous
    Tensor(Shape shape, std::vector<float> values);  // values in C order
    // Contiguous, in the given storage, grown to the shape within the capacity it already has
    // (never shrunk), so memory a Workspace keeps is reused, not reallocated. Zero-filled when
    // `zero_fill`; otherwise the values are what the storage held (zeros where it never
    // reached), for a caller that writes every element before reading one.
    static Tensor in_storage(Shape shape, std::shared_ptr<std::vector<float>> storage,
                             bool zero_fill);
    // Zero-filled contiguous tensors of these shapes laid out one after another in one
    // float_block (core/tensor/storage.h), so they share its storage: a weight set mapped in at
    // once.
    static std::vector<Tensor> in_one_block(const std::vector<Shape>& shapes);
    // A tensor with a shape and strides but no storage (a dry run's, ggml's no_alloc): view,
    // transpose, permute, select, narrow and contiguous work on its layout; it has no values. Each
    // is a tensor of its own (shares_storage_with is false between two of them).
    // With a `count` (a dry workspace's) its bytes count there until the last tensor sharing
    // its identity goes, or, in a `block` (a dry workspace's, whose bytes the count already
    // has), it keeps the block taken until then; throws mha::Error past 64 bits.
    static Tensor shape_only(Shape shape, std::shared_ptr<DryCount> count = nullptr,
                             std::shared_ptr<const void> block = nullptr);
    // A dry tensor of `shape` counted where this dry one is (in the workspace that made it, or
    // nowhere): what an op computing nothing returns for a dry operand, and what contiguous()
    // copies a dry tensor to, so that a dry run counts the copies a run with values makes.
    Tensor dry_result(Shape shape) const;

    const Shape& shape() const { return layout_.shape; }
    const Strides& strides() const { return layout_.strides; }
    const Layout& layout() const { return layout_; }
    std::size_t offset() const { return offset_; }
    std::size_t dim() const { return layout_.shape.size(); }
    std::size_t size(std::size_t d) const { return layout_.shape.at(d); }
    std::size_t numel() const { return empty() ? 0 : element_count(layout_.shape); }
    bool empty() const { return storage_.use_count() == 0; }  // absent: no shape, no storage
    bool dry() const { return dry_; }                          // shape_only: a shape, no values
    // The same tensor (layout, identity) as a dry run sees it: without its values.
    Tensor without_values() const;

    bool is_contiguous() const;
    // True when both hold the same storage (or both none), whatever their offsets.
    bool shares_storage_with(const Tensor& other) const {
        return !storage_.owner_before(other.storage_) && !other.storage_.owner_before(storage_);
    }

    // Same storage, new shape; throws mha::Error when the strides do not allow it.
    Tensor view(const Shape& shape) const;
    // Same storage, dimensions a and b swapped (strides swapped, nothing copied).
    Tensor transpose(std::size_t a, std::size_t b) const;
    // Same storage, dimension d of the result is dimension order[d] of this (nothing copied).
    Tensor permute(const std::vector<std::size_t>& order) const;
    // Same storage, dimension d fixed at index i and dropped: t[i] for d = 0.
    Tensor select(std::size_t d, std::size_t i) const;
    // Same storage, dimension d cut to [start, start + length): t[:, :, start:start+length] for d = 2.
    Tensor narrow(std::size_t d, std::size_t start, std::size_t length) const;
    // *this when already contiguous, otherwise a C-ordered copy.
    Tensor contiguous() const;

    // Pointer to element (0, ..., 0), or nullptr for an empty or dry tensor; index with the
    // strides.
    float* data() { return storage_ && !dry_ ? storage_.get() + offset_ : nullptr; }
    const float* data() const { return storage_ && !dry_ ? storage_.get() + offset_ : nullptr; }
    float at(const std::vector<std::size_t>& index) const;
    std::vector<float> to_vector() const;  // the elements in C order
    void copy_to(float* out) const;        // the elements in C order, into out (numel())

private:
    std::shared_ptr<float> storage_;  // its first float; shares ownership of what holds them
    Layout layout_;
    std::size_t offset_ = 0;
    bool dry_ = false;
};

// True when any of the tensors is dry: the step that reads them computes nothing.
template <class... Tensors>
bool any_dry(const Tensors&... tensors) {
    return (tensors.dry() || ...);
}

}  // namespace mha
