#pragma once
// The one wording of an out-of-range index, shared by every backend: the index ops check their
// indices themselves (on the CPU while they run; on a GPU in the kernel, reported after it), so no
// frontend check syncs a device first.
#include <cstdint>
#include <string_view>

#include "tensor/core/shape.h"

namespace ruccl {

/// Throws IndexError "<op>: expected every index in [0, <bound>) for dim <dim> of shape <of>, got
/// <value> at position <position in index_shape>". `dim` < 0 (one_hot) leaves out the "for dim"
/// part.
[[noreturn]] void throw_index_out_of_bounds(std::string_view op, std::int64_t value,
                                            std::int64_t flat_position, const Shape& index_shape,
                                            std::int64_t bound, std::int64_t dim, const Shape& of);

}  // namespace ruccl
