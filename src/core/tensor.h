#pragma once
// Strided float32 tensor (shared storage, shape, strides, offset) with PyTorch's
// view / transpose / contiguous semantics: transpose never copies, view refuses
// strides it cannot express, contiguous copies only when it must.

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace mha {

using Shape = std::vector<std::size_t>;
using Strides = std::vector<std::size_t>;  // in elements, like Tensor.stride()

std::string to_string(const Shape& shape);  // "(2, 8, 256)"
std::size_t element_count(const Shape& shape);
Strides contiguous_strides(const Shape& shape);
// C order, ignoring the strides of size-1 dimensions (as PyTorch does).
bool is_contiguous(const Shape& shape, const Strides& strides);

class Tensor {
public:
    Tensor() = default;
    explicit Tensor(Shape shape);                       // zero-filled, contiguous
    Tensor(Shape shape, std::vector<float> values);     // values in C order

    const Shape& shape() const { return shape_; }
    const Strides& strides() const { return strides_; }
    std::size_t offset() const { return offset_; }
    std::size_t dim() const { return shape_.size(); }
    std::size_t size(std::size_t d) const { return shape_.at(d); }
    std::size_t numel() const { return storage_ ? element_count(shape_) : 0; }
    bool empty() const { return storage_ == nullptr; }

    bool is_contiguous() const;
    bool shares_storage_with(const Tensor& other) const { return storage_ == other.storage_; }

    // Same storage, new shape; throws mha::Error when the strides do not allow it.
    Tensor view(const Shape& shape) const;
    // Same storage, dimensions a and b swapped (strides swapped, nothing copied).
    Tensor transpose(std::size_t a, std::size_t b) const;
    // Same storage, dimension d of the result is dimension order[d] of this (nothing copied).
    Tensor permute(const std::vector<std::size_t>& order) const;
    // Same storage, dimension d fixed at index i and dropped: t[i] for d = 0.
    Tensor select(std::size_t d, std::size_t i) const;
    // *this when already contiguous, otherwise a C-ordered copy.
    Tensor contiguous() const;

    // Pointer to element (0, ..., 0), or nullptr for an empty tensor; index with the strides.
    float* data() { return storage_ ? storage_->data() + offset_ : nullptr; }
    const float* data() const { return storage_ ? storage_->data() + offset_ : nullptr; }
    float at(const std::vector<std::size_t>& index) const;
    std::vector<float> to_vector() const;  // the elements in C order

private:
    std::shared_ptr<std::vector<float>> storage_;
    Shape shape_;
    Strides strides_;
    std::size_t offset_ = 0;
};

}  // namespace mha
