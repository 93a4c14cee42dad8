// Tensor's op methods (tensor/core/tensor.h): each forwards to the free function of the same name,
// so the two spellings share one implementation, one set of errors and one cost.
#include "tensor/ops/elementwise.h"
#include "tensor/ops/index.h"
#include "tensor/ops/linalg.h"
#include "tensor/ops/reduce.h"
#include "tensor/ops/shape_ops.h"

namespace ruccl {

Tensor Tensor::sum() const { return ruccl::sum(*this); }
Tensor Tensor::sum(std::int64_t dim, bool keepdim) const { return ruccl::sum(*this, dim, keepdim); }
Tensor Tensor::sum(const std::vector<std::int64_t>& dims, bool keepdim) const {
  return ruccl::sum(*this, dims, keepdim);
}
Tensor Tensor::mean() const { return ruccl::mean(*this); }
Tensor Tensor::mean(std::int64_t dim, bool keepdim) const {
  return ruccl::mean(*this, dim, keepdim);
}
Tensor Tensor::mean(const std::vector<std::int64_t>& dims, bool keepdim) const {
  return ruccl::mean(*this, dims, keepdim);
}
Tensor Tensor::prod() const { return ruccl::prod(*this); }
Tensor Tensor::prod(std::int64_t dim, bool keepdim) const {
  return ruccl::prod(*this, dim, keepdim);
}
Tensor Tensor::max() const { return ruccl::max(*this); }
Tensor Tensor::max(std::int64_t dim, bool keepdim) const { return ruccl::max(*this, dim, keepdim); }
Tensor Tensor::min() const { return ruccl::min(*this); }
Tensor Tensor::min(std::int64_t dim, bool keepdim) const { return ruccl::min(*this, dim, keepdim); }
Tensor Tensor::argmax() const { return ruccl::argmax(*this); }
Tensor Tensor::argmax(std::int64_t dim, bool keepdim) const {
  return ruccl::argmax(*this, dim, keepdim);
}
Tensor Tensor::argmin() const { return ruccl::argmin(*this); }
Tensor Tensor::argmin(std::int64_t dim, bool keepdim) const {
  return ruccl::argmin(*this, dim, keepdim);
}
Tensor Tensor::var(const std::vector<std::int64_t>& dims, std::int64_t correction,
                   bool keepdim) const {
  return ruccl::var(*this, dims, correction, keepdim);
}
Tensor Tensor::var(std::int64_t dim, std::int64_t correction, bool keepdim) const {
  return ruccl::var(*this, dim, correction, keepdim);
}
Tensor Tensor::softmax(std::int64_t dim) const { return ruccl::softmax(*this, dim); }
Tensor Tensor::log_softmax(std::int64_t dim) const { return ruccl::log_softmax(*this, dim); }

Tensor Tensor::neg() const { return ruccl::neg(*this); }
Tensor Tensor::exp() const { return ruccl::exp(*this); }
Tensor Tensor::log() const { return ruccl::log(*this); }
Tensor Tensor::sqrt() const { return ruccl::sqrt(*this); }
Tensor Tensor::abs() const { return ruccl::abs(*this); }
Tensor Tensor::sign() const { return ruccl::sign(*this); }
Tensor Tensor::tanh() const { return ruccl::tanh(*this); }
Tensor Tensor::sigmoid() const { return ruccl::sigmoid(*this); }
Tensor Tensor::relu() const { return ruccl::relu(*this); }
Tensor Tensor::gelu() const { return ruccl::gelu(*this); }
Tensor Tensor::add(const Tensor& other) const { return ruccl::add(*this, other); }
Tensor Tensor::add(Scalar other) const { return ruccl::add(*this, other); }
Tensor Tensor::sub(const Tensor& other) const { return ruccl::sub(*this, other); }
Tensor Tensor::sub(Scalar other) const { return ruccl::sub(*this, other); }
Tensor Tensor::mul(const Tensor& other) const { return ruccl::mul(*this, other); }
Tensor Tensor::mul(Scalar other) const { return ruccl::mul(*this, other); }
Tensor Tensor::div(const Tensor& other) const { return ruccl::div(*this, other); }
Tensor Tensor::div(Scalar other) const { return ruccl::div(*this, other); }
Tensor Tensor::pow(const Tensor& exponent) const { return ruccl::pow(*this, exponent); }
Tensor Tensor::pow(Scalar exponent) const { return ruccl::pow(*this, exponent); }
Tensor Tensor::maximum(const Tensor& other) const { return ruccl::maximum(*this, other); }
Tensor Tensor::minimum(const Tensor& other) const { return ruccl::minimum(*this, other); }
Tensor Tensor::eq(const Tensor& other) const { return ruccl::eq(*this, other); }
Tensor Tensor::eq(Scalar other) const { return ruccl::eq(*this, other); }
Tensor Tensor::ne(const Tensor& other) const { return ruccl::ne(*this, other); }
Tensor Tensor::ne(Scalar other) const { return ruccl::ne(*this, other); }
Tensor Tensor::lt(const Tensor& other) const { return ruccl::lt(*this, other); }
Tensor Tensor::lt(Scalar other) const { return ruccl::lt(*this, other); }
Tensor Tensor::le(const Tensor& other) const { return ruccl::le(*this, other); }
Tensor Tensor::le(Scalar other) const { return ruccl::le(*this, other); }
Tensor Tensor::gt(const Tensor& other) const { return ruccl::gt(*this, other); }
Tensor Tensor::gt(Scalar other) const { return ruccl::gt(*this, other); }
Tensor Tensor::ge(const Tensor& other) const { return ruccl::ge(*this, other); }
Tensor Tensor::ge(Scalar other) const { return ruccl::ge(*this, other); }

Tensor Tensor::matmul(const Tensor& other) const { return ruccl::matmul(*this, other); }

Tensor Tensor::t() const {
  RUCCL_CHECK(dim() <= 2, ShapeError, "Tensor::t: expected a tensor with at most 2 dims, got ",
              shape_, "; use transpose(d0, d1)");
  return dim() == 2 ? transpose(0, 1) : *this;
}

Tensor Tensor::index_select(std::int64_t dim, const Tensor& index) const {
  return ruccl::index_select(*this, dim, index);
}
Tensor Tensor::gather(std::int64_t dim, const Tensor& index) const {
  return ruccl::gather(*this, dim, index);
}
std::vector<Tensor> Tensor::split(std::int64_t split_size, std::int64_t dim) const {
  return ruccl::split(*this, split_size, dim);
}
std::vector<Tensor> Tensor::split(const std::vector<std::int64_t>& sizes, std::int64_t dim) const {
  return ruccl::split(*this, sizes, dim);
}
std::vector<Tensor> Tensor::chunk(std::int64_t chunks, std::int64_t dim) const {
  return ruccl::chunk(*this, chunks, dim);
}

}  // namespace ruccl
