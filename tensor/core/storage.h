#pragma once
// Storage: a reference-counted block of device memory. Tensors are views into a Storage (shape,
// strides, offset); several views share one Storage through std::shared_ptr.
#include <cstddef>
#include <functional>
#include <memory>

#include "tensor/core/device.h"

namespace ruccl {

/// Owns `nbytes` bytes on `device`; frees them with the deleter its backend gave it, which also
/// receives `context` (an allocator's own state: a caching allocator returns the block to its
/// pool and stream).
class Storage {
 public:
  using Deleter = void (*)(void* data, void* context);
  Storage(void* data, std::size_t nbytes, Device device, Deleter deleter, void* context = nullptr)
      : data_(data), nbytes_(nbytes), device_(device), deleter_(deleter), context_(context) {}
  ~Storage() {
    if (deleter_ != nullptr && data_ != nullptr) deleter_(data_, context_);
  }
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  std::size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }
  /// What the allocator passed with its deleter (nullptr for the plain ones).
  void* context() const { return context_; }

  /// Frees the bytes now while the Storage (and every Tensor viewing it) stays: data() becomes
  /// nullptr until adopt() refills it. For values that are dropped and recomputed in place
  /// (nn::fully_shard frees a gathered parameter after forward and re-gathers it for backward,
  /// while the tape still holds views of it); reading a released Storage is a bug.
  void release() {
    if (deleter_ != nullptr && data_ != nullptr) deleter_(data_, context_);
    data_ = nullptr;
  }
  /// Takes `other`'s bytes (of the same size and device), freeing this Storage's own first;
  /// `other` is left empty (as after release()). Returns false, changing nothing, when the sizes
  /// or devices differ.
  bool adopt(Storage& other) {
    if (other.nbytes_ != nbytes_ || !(other.device_ == device_)) return false;
    release();
    data_ = other.data_;
    deleter_ = other.deleter_;
    context_ = other.context_;
    other.data_ = nullptr;
    return true;
  }

 private:
  void* data_;
  std::size_t nbytes_;
  Device device_;
  Deleter deleter_;
  void* context_;
};

}  // namespace ruccl
