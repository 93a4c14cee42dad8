// Frontend of the elementwise ops: validate (defined, one device, dtype allowed, shapes
// broadcast), pick the output shape and dtype, allocate, convert operands to the common dtype and
// expand them to the output shape (stride-0 views), then dispatch to the device's backend. No math
// here. The success path builds no strings and allocates only the output (and a converted copy of
// an operand whose dtype differs from the common one).
#include "tensor/ops/elementwise.h"

#include <limits>

#include "tensor/backend/backend.h"
#include "tensor/ops/reduce.h"

namespace ruccl {

namespace {

// Which dtypes an op takes (checked on the common dtype of its operands).
enum class Allowed { kAny, kNumeric, kFloating };

void check_defined(const Tensor& t, const char* op) {
  RUCCL_CHECK(t.defined(), ValueError, op, ": expected a defined tensor, got an undefined one");
}

void check_dtype(Allowed allowed, DType dtype, const char* op) {
  if (allowed == Allowed::kNumeric) {
    RUCCL_CHECK(dtype != DType::Bool, DTypeError, op,
                ": expected numeric operands (F16, BF16, F32, F64, I32, I64), got Bool; Bool "
                "takes only comparisons, logical ops and where (convert with to(DType::I64))");
  } else if (allowed == Allowed::kFloating) {
    RUCCL_CHECK(is_floating(dtype), DTypeError, op,
                ": expected a floating dtype (F16, BF16, F32, F64), got ", dtype,
                "; convert with to(DType::F32)");
  }
}

void check_supported(const Backend& backend, Op op, DType dtype, Device device, const char* name) {
  RUCCL_CHECK(backend.supports(op, dtype), NotImplementedError, name, ": not implemented for ",
              dtype, " on ", device, " (backend ", backend.name(), ")");
}

// `t` as `dtype` and `shape`: itself when it already is, else a converted copy and/or a
// broadcast view kept in `holder`.
const Tensor& prepare(const Tensor& t, DType dtype, const Shape& shape, Tensor& holder) {
  if (t.dtype() == dtype && t.shape() == shape) return t;
  holder = t.dtype() == dtype ? t : t.to(dtype);
  if (holder.shape() != shape) holder = holder.expand(shape);
  return holder;
}

// The common part of every binary op. `bool_out`: the result is Bool (comparisons, logical ops).
Tensor binary(Op op, const char* name, const Tensor& a, const Tensor& b, Allowed allowed,
              bool bool_out, DType force = DType::F32, bool forced = false) {
  check_defined(a, name);
  check_defined(b, name);
  const Device device = a.device();
  RUCCL_CHECK(device == b.device(), DeviceError, name,
              ": expected both operands on one device, got ", device, " and ", b.device(),
              "; move one with to(Device)");
  const DType dtype = forced ? force : promote_types(a.dtype(), b.dtype());
  check_dtype(allowed, dtype, name);
  const Shape shape =
      a.shape() == b.shape() ? a.shape() : broadcast_shapes(a.shape(), b.shape(), name);
  Backend& backend = backend_for(device);
  check_supported(backend, op, dtype, device, name);
  Tensor out = Tensor::empty(shape, bool_out ? DType::Bool : dtype, device, name);
  Tensor ha;
  Tensor hb;
  backend.binary(op, prepare(a, dtype, shape, ha), prepare(b, dtype, shape, hb), out);
  return out;
}

Tensor unary(Op op, const char* name, const Tensor& x, Allowed allowed) {
  check_defined(x, name);
  check_dtype(allowed, x.dtype(), name);
  Backend& backend = backend_for(x.device());
  check_supported(backend, op, x.dtype(), x.device(), name);
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device(), name);
  backend.unary(op, x, out);
  return out;
}

// The dtype a scalar operand takes next to `t`: t's dtype, except that a non-integral scalar with
// an integer or Bool tensor is F32 and an integral one with a Bool tensor is I64 (PyTorch's result
// types for tensor-scalar ops).
DType scalar_dtype(const Tensor& t, Scalar value) {
  DType dtype = t.dtype();
  if (!is_floating(dtype)) {
    if (!value.is_integral()) {
      dtype = DType::F32;
    } else if (dtype == DType::Bool) {
      dtype = DType::I64;
    }
  }
  return dtype;
}

// The common part of every tensor-scalar op: the scalar travels with the call (no device tensor
// holds it), on the side `side` of the op.
Tensor binary_scalar(Op op, const char* name, const Tensor& a, Scalar b, ScalarSide side,
                     Allowed allowed, bool bool_out) {
  check_defined(a, name);
  const DType dtype = scalar_dtype(a, b);
  check_dtype(allowed, dtype, name);
  Backend& backend = backend_for(a.device());
  check_supported(backend, op, dtype, a.device(), name);
  Tensor out = Tensor::empty(a.shape(), bool_out ? DType::Bool : dtype, a.device(), name);
  Tensor ha;
  backend.binary_scalar(op, prepare(a, dtype, a.shape(), ha), b, side, out);
  return out;
}

// The common part of Tensor::add_, sub_, mul_ and div_ (`name` is "Tensor::mul_", ...): checks,
// then t's backend writes op(t, s) into t.
Tensor& scalar_in_place(Op op, const char* name, Tensor& t, Scalar s, Allowed allowed) {
  check_defined(t, name);
  check_dtype(allowed, t.dtype(), name);
  RUCCL_CHECK(is_floating(t.dtype()) || s.is_integral(), DTypeError, name,
              ": expected an integral scalar for an in-place op on a ", t.dtype(), " tensor, got ",
              s.to_double(), " (the result would be F32, which an in-place op cannot store in ",
              t.dtype(), "; use the out-of-place op)");
  for (std::int64_t d = 0; d < t.dim(); ++d) {
    RUCCL_CHECK(t.strides()[d] != 0 || t.shape()[d] <= 1, ValueError, name,
                ": expected a tensor whose elements do not share memory, got shape ", t.shape(),
                " with strides ", t.strides(),
                " (an expand()ed view); write into a contiguous() "
                "copy instead");
  }
  Backend& backend = backend_for(t.device());
  check_supported(backend, op, t.dtype(), t.device(), name);
  if (t.numel() > 0) backend.scalar_in_place(op, t, s);
  return t;
}

}  // namespace

Tensor& Tensor::add_(Scalar s) {
  return scalar_in_place(Op::AddInPlace, "Tensor::add_", *this, s, Allowed::kNumeric);
}
Tensor& Tensor::sub_(Scalar s) {
  return scalar_in_place(Op::SubInPlace, "Tensor::sub_", *this, s, Allowed::kNumeric);
}
Tensor& Tensor::mul_(Scalar s) {
  return scalar_in_place(Op::MulInPlace, "Tensor::mul_", *this, s, Allowed::kNumeric);
}
Tensor& Tensor::div_(Scalar s) {
  return scalar_in_place(Op::DivInPlace, "Tensor::div_", *this, s, Allowed::kFloating);
}

Tensor add(const Tensor& a, const Tensor& b) {
  return binary(Op::Add, "add", a, b, Allowed::kNumeric, false);
}
Tensor sub(const Tensor& a, const Tensor& b) {
  return binary(Op::Sub, "sub", a, b, Allowed::kNumeric, false);
}
Tensor mul(const Tensor& a, const Tensor& b) {
  return binary(Op::Mul, "mul", a, b, Allowed::kNumeric, false);
}
Tensor div(const Tensor& a, const Tensor& b) {
  return binary(Op::Div, "div", a, b, Allowed::kFloating, false);
}
Tensor pow(const Tensor& a, const Tensor& b) {
  return binary(Op::Pow, "pow", a, b, Allowed::kFloating, false);
}
Tensor pow(const Tensor& a, Scalar exponent) {
  return binary_scalar(Op::Pow, "pow", a, exponent, ScalarSide::Right, Allowed::kFloating, false);
}
Tensor maximum(const Tensor& a, const Tensor& b) {
  return binary(Op::Maximum, "maximum", a, b, Allowed::kNumeric, false);
}
Tensor minimum(const Tensor& a, const Tensor& b) {
  return binary(Op::Minimum, "minimum", a, b, Allowed::kNumeric, false);
}

Tensor add(const Tensor& a, Scalar b) {
  return binary_scalar(Op::Add, "add", a, b, ScalarSide::Right, Allowed::kNumeric, false);
}
Tensor sub(const Tensor& a, Scalar b) {
  return binary_scalar(Op::Sub, "sub", a, b, ScalarSide::Right, Allowed::kNumeric, false);
}
Tensor mul(const Tensor& a, Scalar b) {
  return binary_scalar(Op::Mul, "mul", a, b, ScalarSide::Right, Allowed::kNumeric, false);
}
Tensor div(const Tensor& a, Scalar b) {
  return binary_scalar(Op::Div, "div", a, b, ScalarSide::Right, Allowed::kFloating, false);
}

Tensor neg(const Tensor& x) { return unary(Op::Neg, "neg", x, Allowed::kNumeric); }
Tensor exp(const Tensor& x) { return unary(Op::Exp, "exp", x, Allowed::kFloating); }
Tensor log(const Tensor& x) { return unary(Op::Log, "log", x, Allowed::kFloating); }
Tensor sqrt(const Tensor& x) { return unary(Op::Sqrt, "sqrt", x, Allowed::kFloating); }
Tensor abs(const Tensor& x) { return unary(Op::Abs, "abs", x, Allowed::kNumeric); }
Tensor sign(const Tensor& x) { return unary(Op::Sign, "sign", x, Allowed::kNumeric); }
Tensor tanh(const Tensor& x) { return unary(Op::Tanh, "tanh", x, Allowed::kFloating); }
Tensor sigmoid(const Tensor& x) { return unary(Op::Sigmoid, "sigmoid", x, Allowed::kFloating); }
Tensor relu(const Tensor& x) { return unary(Op::Relu, "relu", x, Allowed::kNumeric); }
Tensor gelu(const Tensor& x) { return unary(Op::Gelu, "gelu", x, Allowed::kFloating); }

// ---- issue 30's element-wise math
// ---------------------------------------------------------------- leaky_relu, elu and softplus are
// backend ops with parameters (Backend::unary_params): one pass over memory where a composite
// (where(gt(x, 0), x, mul(x, s)), ...) takes three to six. clamp is composed of the scalar
// maximum/minimum: exact on integers (a double parameter would not be), NaN-propagating as torch,
// one pass per bound given.

namespace {

Tensor unary_params(Op op, const char* name, const Tensor& x, double p0, double p1) {
  check_defined(x, name);
  check_dtype(Allowed::kFloating, x.dtype(), name);
  Backend& backend = backend_for(x.device());
  check_supported(backend, op, x.dtype(), x.device(), name);
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device(), name);
  backend.unary_params(op, x, p0, p1, out);
  return out;
}

// A Bool test of every element (isnan, isfinite); Bool inputs give `bool_answer` everywhere.
Tensor predicate(Op op, const char* name, const Tensor& x, bool bool_answer) {
  check_defined(x, name);
  if (x.dtype() == DType::Bool)
    return Tensor::full(x.shape(), bool_answer, DType::Bool, x.device());
  Backend& backend = backend_for(x.device());
  check_supported(backend, op, x.dtype(), x.device(), name);
  Tensor out = Tensor::empty(x.shape(), DType::Bool, x.device(), name);
  backend.unary(op, x, out);
  return out;
}

}  // namespace

Tensor sin(const Tensor& x) { return unary(Op::Sin, "sin", x, Allowed::kFloating); }
Tensor cos(const Tensor& x) { return unary(Op::Cos, "cos", x, Allowed::kFloating); }
Tensor silu(const Tensor& x) { return unary(Op::Silu, "silu", x, Allowed::kFloating); }
Tensor rsqrt(const Tensor& x) { return unary(Op::Rsqrt, "rsqrt", x, Allowed::kFloating); }
Tensor erf(const Tensor& x) { return unary(Op::Erf, "erf", x, Allowed::kFloating); }
Tensor log1p(const Tensor& x) { return unary(Op::Log1p, "log1p", x, Allowed::kFloating); }
Tensor expm1(const Tensor& x) { return unary(Op::Expm1, "expm1", x, Allowed::kFloating); }

Tensor leaky_relu(const Tensor& x, double negative_slope) {
  return unary_params(Op::LeakyRelu, "leaky_relu", x, negative_slope, 0.0);
}
Tensor elu(const Tensor& x, double alpha) { return unary_params(Op::Elu, "elu", x, alpha, 0.0); }
Tensor softplus(const Tensor& x, double beta, double threshold) {
  RUCCL_CHECK(beta != 0.0, ValueError, "softplus: expected a nonzero beta, got 0");
  return unary_params(Op::Softplus, "softplus", x, beta, threshold);
}

Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max) {
  check_defined(x, "clamp");
  RUCCL_CHECK(min || max, ValueError,
              "clamp: expected at least one bound (min or max), got neither");
  Tensor out = x;
  if (min)
    out =
        binary_scalar(Op::Maximum, "clamp", out, *min, ScalarSide::Right, Allowed::kNumeric, false);
  if (max)
    out =
        binary_scalar(Op::Minimum, "clamp", out, *max, ScalarSide::Right, Allowed::kNumeric, false);
  return out;
}

Tensor isnan(const Tensor& x) { return predicate(Op::IsNan, "isnan", x, false); }
Tensor isfinite(const Tensor& x) { return predicate(Op::IsFinite, "isfinite", x, true); }

Tensor eq(const Tensor& a, const Tensor& b) {
  return binary(Op::Eq, "eq", a, b, Allowed::kAny, true);
}
Tensor ne(const Tensor& a, const Tensor& b) {
  return binary(Op::Ne, "ne", a, b, Allowed::kAny, true);
}
Tensor lt(const Tensor& a, const Tensor& b) {
  return binary(Op::Lt, "lt", a, b, Allowed::kAny, true);
}
Tensor le(const Tensor& a, const Tensor& b) {
  return binary(Op::Le, "le", a, b, Allowed::kAny, true);
}
Tensor gt(const Tensor& a, const Tensor& b) {
  return binary(Op::Gt, "gt", a, b, Allowed::kAny, true);
}
Tensor ge(const Tensor& a, const Tensor& b) {
  return binary(Op::Ge, "ge", a, b, Allowed::kAny, true);
}
Tensor eq(const Tensor& a, Scalar b) {
  return binary_scalar(Op::Eq, "eq", a, b, ScalarSide::Right, Allowed::kAny, true);
}
Tensor ne(const Tensor& a, Scalar b) {
  return binary_scalar(Op::Ne, "ne", a, b, ScalarSide::Right, Allowed::kAny, true);
}
Tensor lt(const Tensor& a, Scalar b) {
  return binary_scalar(Op::Lt, "lt", a, b, ScalarSide::Right, Allowed::kAny, true);
}
Tensor le(const Tensor& a, Scalar b) {
  return binary_scalar(Op::Le, "le", a, b, ScalarSide::Right, Allowed::kAny, true);
}
Tensor gt(const Tensor& a, Scalar b) {
  return binary_scalar(Op::Gt, "gt", a, b, ScalarSide::Right, Allowed::kAny, true);
}
Tensor ge(const Tensor& a, Scalar b) {
  return binary_scalar(Op::Ge, "ge", a, b, ScalarSide::Right, Allowed::kAny, true);
}

// Logical ops read any dtype as "nonzero is true" (torch.logical_and); operands become Bool.
Tensor logical_and(const Tensor& a, const Tensor& b) {
  return binary(Op::LogicalAnd, "logical_and", a, b, Allowed::kAny, true, DType::Bool, true);
}
Tensor logical_or(const Tensor& a, const Tensor& b) {
  return binary(Op::LogicalOr, "logical_or", a, b, Allowed::kAny, true, DType::Bool, true);
}
Tensor logical_not(const Tensor& x) {
  check_defined(x, "logical_not");
  return unary(Op::LogicalNot, "logical_not", x.to(DType::Bool), Allowed::kAny);
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  check_defined(cond, "where");
  check_defined(a, "where");
  check_defined(b, "where");
  RUCCL_CHECK(cond.dtype() == DType::Bool, DTypeError, "where: expected a Bool condition, got ",
              cond.dtype(), "; make one with a comparison such as gt(x, 0)");
  const Device device = cond.device();
  RUCCL_CHECK(a.device() == device && b.device() == device, DeviceError,
              "where: expected cond, a and b on one device, got ", device, ", ", a.device(),
              " and ", b.device());
  const DType dtype = promote_types(a.dtype(), b.dtype());
  const Shape shape =
      broadcast_shapes(cond.shape(), broadcast_shapes(a.shape(), b.shape(), "where"), "where");
  Backend& backend = backend_for(device);
  check_supported(backend, Op::Where, dtype, device, "where");
  Tensor out = Tensor::empty(shape, dtype, device, "where");
  Tensor hc;
  Tensor ha;
  Tensor hb;
  backend.where(prepare(cond, DType::Bool, shape, hc), prepare(a, dtype, shape, ha),
                prepare(b, dtype, shape, hb), out);
  return out;
}

bool equal(const Tensor& a, const Tensor& b) {
  check_defined(a, "equal");
  check_defined(b, "equal");
  if (a.shape() != b.shape()) return false;
  if (a.numel() == 0) return true;
  return sum(ne(a, b)).item<std::int64_t>() == 0;
}

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol) {
  check_defined(a, "allclose");
  check_defined(b, "allclose");
  const Tensor x = a.to(DType::F64);
  const Tensor y = b.to(DType::F64);
  // |x - y| <= atol + rtol * |y| with y finite, or exactly equal (equal infinities are close).
  const Tensor finite = lt(abs(y), std::numeric_limits<double>::infinity());
  const Tensor within = logical_and(le(abs(x - y), abs(y) * rtol + atol), finite);
  const Tensor close = logical_or(within, eq(x, y));
  if (close.numel() == 0) return true;
  return sum(logical_not(close)).item<std::int64_t>() == 0;
}

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator-(const Tensor& x) { return neg(x); }
Tensor operator+(const Tensor& a, Scalar b) { return add(a, b); }
Tensor operator-(const Tensor& a, Scalar b) { return sub(a, b); }
Tensor operator*(const Tensor& a, Scalar b) { return mul(a, b); }
Tensor operator/(const Tensor& a, Scalar b) { return div(a, b); }
Tensor operator+(Scalar a, const Tensor& b) {
  return binary_scalar(Op::Add, "add", b, a, ScalarSide::Left, Allowed::kNumeric, false);
}
Tensor operator-(Scalar a, const Tensor& b) {
  return binary_scalar(Op::Sub, "sub", b, a, ScalarSide::Left, Allowed::kNumeric, false);
}
Tensor operator*(Scalar a, const Tensor& b) {
  return binary_scalar(Op::Mul, "mul", b, a, ScalarSide::Left, Allowed::kNumeric, false);
}
Tensor operator/(Scalar a, const Tensor& b) {
  return binary_scalar(Op::Div, "div", b, a, ScalarSide::Left, Allowed::kFloating, false);
}

}  // namespace ruccl
