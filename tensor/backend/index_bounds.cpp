#include "tensor/backend/index_bounds.h"

#include "tensor/core/error.h"

namespace ruccl {

void throw_index_out_of_bounds(std::string_view op, std::int64_t value, std::int64_t flat_position,
                               const Shape& index_shape, std::int64_t bound, std::int64_t dim,
                               const Shape& of) {
  if (dim < 0) {
    throw IndexError(str(op, ": expected every index in [0, ", bound, "), got ", value,
                         " at position ", unravel_index(flat_position, index_shape)));
  }
  throw IndexError(str(op, ": expected every index in [0, ", bound, ") for dim ", dim, " of shape ",
                       of, ", got ", value, " at position ",
                       unravel_index(flat_position, index_shape)));
}

}  // namespace ruccl
