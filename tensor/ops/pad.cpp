// pad, flatten and unflatten on Tensors (tensor/ops/pad.h). Constant padding writes x into a
// filled tensor; reflect and replicate gather each padded dim with index_select.
#include "tensor/ops/pad.h"

#include "tensor/ops/index.h"

namespace ruccl {

std::vector<std::pair<std::int64_t, std::int64_t>> pad_widths(const Tensor& x,
                                                              const std::vector<std::int64_t>& pads,
                                                              PadMode mode) {
  RUCCL_CHECK(x.defined(), ValueError, "pad: expected a defined input, got an undefined one");
  RUCCL_CHECK(pads.size() % 2 == 0, ValueError,
              "pad: expected an even number of pads ((before, after) pairs), got ", pads.size());
  RUCCL_CHECK(static_cast<std::int64_t>(pads.size()) / 2 <= x.dim(), ValueError,
              "pad: expected at most ", x.dim(), " (before, after) pairs for a ", x.dim(),
              "-d input, got ", pads.size() / 2);
  std::vector<std::pair<std::int64_t, std::int64_t>> widths(static_cast<std::size_t>(x.dim()));
  for (std::size_t p = 0; p < pads.size() / 2; ++p) {
    const std::int64_t d = x.dim() - 1 - static_cast<std::int64_t>(p);
    const std::int64_t before = pads[2 * p];
    const std::int64_t after = pads[2 * p + 1];
    RUCCL_CHECK(before >= 0 && after >= 0, ValueError, "pad: expected non-negative pads, got (",
                before, ", ", after, ") for dim ", d);
    const std::int64_t size = x.size(d);
    if (mode != PadMode::Constant && (before > 0 || after > 0)) {
      RUCCL_CHECK(size > 0, ShapeError, "pad: expected a non-empty dim ", d,
                  " to reflect or replicate, got size 0");
    }
    if (mode == PadMode::Reflect) {
      RUCCL_CHECK(before < size && after < size, ValueError,
                  "pad: expected reflect pads smaller than the dim's size ", size, " (dim ", d,
                  "), got (", before, ", ", after, ")");
    }
    widths[static_cast<std::size_t>(d)] = {before, after};
  }
  return widths;
}

Tensor pad_source_index(std::int64_t size, std::int64_t before, std::int64_t after, PadMode mode,
                        Device device) {
  std::vector<std::int64_t> index(static_cast<std::size_t>(before + size + after));
  for (std::int64_t i = 0; i < before + size + after; ++i) {
    std::int64_t s = i - before;
    if (mode == PadMode::Reflect) {
      if (s < 0) s = -s;
      if (s >= size) s = 2 * (size - 1) - s;
    } else {
      s = s < 0 ? 0 : (s >= size ? size - 1 : s);
    }
    index[static_cast<std::size_t>(i)] = s;
  }
  return Tensor::from_vector<std::int64_t>(index).to(device);
}

Tensor pad(const Tensor& x, const std::vector<std::int64_t>& pads, PadMode mode, double value) {
  const auto widths = pad_widths(x, pads, mode);
  if (mode == PadMode::Constant) {
    Shape shape = x.shape();
    for (std::int64_t d = 0; d < x.dim(); ++d) {
      const auto [before, after] = widths[static_cast<std::size_t>(d)];
      shape[d] += before + after;
    }
    Tensor out = Tensor::full(shape, value, x.dtype(), x.device());
    Tensor inner = out;
    for (std::int64_t d = 0; d < x.dim(); ++d) {
      inner = inner.narrow(d, widths[static_cast<std::size_t>(d)].first, x.size(d));
    }
    inner.copy_(x);
    return out;
  }
  Tensor out = x;
  for (std::int64_t d = 0; d < x.dim(); ++d) {
    const auto [before, after] = widths[static_cast<std::size_t>(d)];
    if (before == 0 && after == 0) continue;
    out = index_select(out, d, pad_source_index(x.size(d), before, after, mode, x.device()));
  }
  return out;
}

Tensor flatten(const Tensor& x, std::int64_t start, std::int64_t end) {
  RUCCL_CHECK(x.defined(), ValueError, "flatten: expected a defined input, got an undefined one");
  return x.flatten(start, end);
}

Tensor unflatten(const Tensor& x, std::int64_t dim, const std::vector<std::int64_t>& sizes) {
  RUCCL_CHECK(x.defined(), ValueError, "unflatten: expected a defined input, got an undefined one");
  const std::int64_t d = normalize_dim(dim, x.dim(), "unflatten");
  RUCCL_CHECK(!sizes.empty(), ValueError, "unflatten: expected at least one size, got none");
  std::int64_t known = 1;
  int inferred = 0;
  for (const std::int64_t s : sizes) {
    RUCCL_CHECK(s >= 0 || s == -1, ValueError, "unflatten: expected sizes >= 0 or one -1, got ", s);
    if (s == -1) {
      ++inferred;
    } else {
      known *= s;
    }
  }
  RUCCL_CHECK(inferred <= 1, ValueError, "unflatten: expected at most one -1 among the sizes, got ",
              inferred);
  const std::int64_t size = x.size(d);
  RUCCL_CHECK(inferred == 1 ? (known > 0 && size % known == 0) : known == size, ShapeError,
              "unflatten: expected sizes whose product is dim ", d, "'s size ", size, ", got ",
              Shape(sizes));
  Shape shape;
  for (std::int64_t i = 0; i < x.dim(); ++i) {
    if (i != d) {
      shape.push_back(x.size(i));
      continue;
    }
    for (const std::int64_t s : sizes) shape.push_back(s == -1 ? size / known : s);
  }
  return x.reshape(shape);
}

}  // namespace ruccl
