// Var's op methods (autodiff/var.h): each calls the free function of the same name, so a method
// records exactly the node the free function records.
#include "autodiff/ops.h"
#include "autodiff/var.h"

namespace ruccl::autodiff {

Var Var::sum() const { return autodiff::sum(*this); }
Var Var::sum(std::int64_t dim, bool keepdim) const { return autodiff::sum(*this, dim, keepdim); }
Var Var::sum(const std::vector<std::int64_t>& dims, bool keepdim) const {
  return autodiff::sum(*this, dims, keepdim);
}
Var Var::mean() const { return autodiff::mean(*this); }
Var Var::mean(std::int64_t dim, bool keepdim) const { return autodiff::mean(*this, dim, keepdim); }
Var Var::mean(const std::vector<std::int64_t>& dims, bool keepdim) const {
  return autodiff::mean(*this, dims, keepdim);
}
Var Var::prod() const { return autodiff::prod(*this); }
Var Var::prod(std::int64_t dim, bool keepdim) const { return autodiff::prod(*this, dim, keepdim); }
Var Var::max() const { return autodiff::max(*this); }
Var Var::max(std::int64_t dim, bool keepdim) const { return autodiff::max(*this, dim, keepdim); }
Var Var::min() const { return autodiff::min(*this); }
Var Var::min(std::int64_t dim, bool keepdim) const { return autodiff::min(*this, dim, keepdim); }
Tensor Var::argmax(std::int64_t dim, bool keepdim) const {
  return autodiff::argmax(*this, dim, keepdim);
}
Var Var::var(const std::vector<std::int64_t>& dims, std::int64_t correction, bool keepdim) const {
  return autodiff::var(*this, dims, correction, keepdim);
}
Var Var::var(std::int64_t dim, std::int64_t correction, bool keepdim) const {
  return autodiff::var(*this, std::vector<std::int64_t>{dim}, correction, keepdim);
}
Var Var::softmax(std::int64_t dim) const { return autodiff::softmax(*this, dim); }
Var Var::log_softmax(std::int64_t dim) const { return autodiff::log_softmax(*this, dim); }

Var Var::neg() const { return autodiff::neg(*this); }
Var Var::exp() const { return autodiff::exp(*this); }
Var Var::log() const { return autodiff::log(*this); }
Var Var::sqrt() const { return autodiff::sqrt(*this); }
Var Var::abs() const { return autodiff::abs(*this); }
Var Var::tanh() const { return autodiff::tanh(*this); }
Var Var::sigmoid() const { return autodiff::sigmoid(*this); }
Var Var::relu() const { return autodiff::relu(*this); }
Var Var::gelu() const { return autodiff::gelu(*this); }
Var Var::add(const Var& other) const { return autodiff::add(*this, other); }
Var Var::add(Scalar other) const { return autodiff::add(*this, other); }
Var Var::sub(const Var& other) const { return autodiff::sub(*this, other); }
Var Var::sub(Scalar other) const { return autodiff::sub(*this, other); }
Var Var::mul(const Var& other) const { return autodiff::mul(*this, other); }
Var Var::mul(Scalar other) const { return autodiff::mul(*this, other); }
Var Var::div(const Var& other) const { return autodiff::div(*this, other); }
Var Var::div(Scalar other) const { return autodiff::div(*this, other); }
Var Var::pow(const Var& exponent) const { return autodiff::pow(*this, exponent); }
Var Var::pow(Scalar exponent) const { return autodiff::pow(*this, exponent); }
Var Var::maximum(const Var& other) const { return autodiff::maximum(*this, other); }
Var Var::minimum(const Var& other) const { return autodiff::minimum(*this, other); }
Var Var::to(DType dtype) const { return autodiff::to(*this, dtype); }

Var Var::matmul(const Var& other) const { return autodiff::matmul(*this, other); }

Var Var::t() const {
  RUCCL_CHECK(dim() <= 2, ShapeError, "Var::t: expected a Var with at most 2 dims, got ", shape(),
              "; use transpose(d0, d1)");
  return dim() == 2 ? autodiff::transpose(*this, 0, 1) : *this;
}

Var Var::reshape(const Shape& shape) const { return autodiff::reshape(*this, shape); }
Var Var::transpose(std::int64_t d0, std::int64_t d1) const {
  return autodiff::transpose(*this, d0, d1);
}
Var Var::permute(const std::vector<std::int64_t>& dims) const {
  return autodiff::permute(*this, dims);
}
Var Var::narrow(std::int64_t d, std::int64_t start, std::int64_t length) const {
  return autodiff::narrow(*this, d, start, length);
}
Var Var::select(std::int64_t d, std::int64_t i) const { return autodiff::select(*this, d, i); }
Var Var::expand(const Shape& shape) const { return autodiff::expand(*this, shape); }
Var Var::squeeze(std::int64_t d) const { return autodiff::squeeze(*this, d); }
Var Var::unsqueeze(std::int64_t d) const { return autodiff::unsqueeze(*this, d); }
Var Var::flatten(std::int64_t start, std::int64_t end) const {
  return autodiff::flatten(*this, start, end);
}
Var Var::contiguous() const { return autodiff::contiguous(*this); }
Var Var::index_select(std::int64_t dim, const Tensor& index) const {
  return autodiff::index_select(*this, dim, index);
}
Var Var::gather(std::int64_t dim, const Tensor& index) const {
  return autodiff::gather(*this, dim, index);
}
std::vector<Var> Var::split(std::int64_t split_size, std::int64_t dim) const {
  return autodiff::split(*this, split_size, dim);
}
std::vector<Var> Var::split(const std::vector<std::int64_t>& sizes, std::int64_t dim) const {
  return autodiff::split(*this, sizes, dim);
}
std::vector<Var> Var::chunk(std::int64_t chunks, std::int64_t dim) const {
  return autodiff::chunk(*this, chunks, dim);
}

Var Var::index(std::initializer_list<indexing::TensorIndex> indices) const {
  return autodiff::index(*this, indices);
}
Var Var::index(std::span<const indexing::TensorIndex> indices) const {
  return autodiff::index(*this, indices);
}

}  // namespace ruccl::autodiff
