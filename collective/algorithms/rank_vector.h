#pragma once
// RankVector: a vector with one element per rank that lives inline for groups of up to 16 ranks,
// so the small-message paths of the algorithms do not allocate.
#include <algorithm>
#include <cstddef>
#include <span>
#include <vector>

namespace ruccl {

/// A minimal vector of trivially copyable T: inline storage for up to kInline elements, the heap
/// beyond.
template <typename T>
class RankVector {
 public:
  static constexpr std::size_t kInline = 16;

  RankVector() = default;
  explicit RankVector(std::size_t n, T value = T()) {
    resize(n);
    std::fill(begin(), end(), value);
  }

  void resize(std::size_t n) {
    if (n > kInline && heap_.size() < n) {
      heap_.resize(n);
      std::copy(inline_, inline_ + std::min(size_, kInline), heap_.data());
    }
    size_ = n;
  }
  void push_back(T value) {
    resize(size_ + 1);
    data()[size_ - 1] = value;
  }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() { return heap_.empty() ? inline_ : heap_.data(); }
  const T* data() const { return heap_.empty() ? inline_ : heap_.data(); }
  T& operator[](std::size_t i) { return data()[i]; }
  const T& operator[](std::size_t i) const { return data()[i]; }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }
  operator std::span<const T>() const { return {data(), size_}; }  // NOLINT: implicit on purpose

 private:
  T inline_[kInline] = {};
  std::vector<T> heap_;
  std::size_t size_ = 0;
};

}  // namespace ruccl
