#pragma once
// A fix for Eigen 3.4's GEMM micro-kernel under g++ (include right after <Eigen/Core>, before any
// float or double matrix product is instantiated; cpu_matmul.cpp is the only user).
//
// Why: Eigen's 3pX4 kernel loads three LHS packets and uses each in four FMAs. g++ 12 folds those
// loads into the FMAs as memory operands, so every k step issues 12 LHS loads + 4 broadcasts
// instead of 3 + 4. On AVX-512 machines with two 512-bit load ports that makes the kernel
// load-bound at about 75% of peak (perf annotate: the hot loop is `vfmadd231ps (%r12),%zmm..`).
// Eigen has a register-allocation workaround for exactly this, but enables it only for old g++ on
// ARM (EIGEN_GEBP_3PX4_REGISTER_ALLOC_WORKAROUND). Here the LHS load is followed by an empty asm
// that pins the packet to a vector register; measured on the project machine (n = 1024, one
// thread): 131 -> 167 GFLOP/s.
//
// How: a partial specialisation of gebp_traits for real float/double operands, otherwise a copy of
// Eigen 3.4.0's generic gebp_traits (GeneralBlockPanelKernel.h, MPL-2.0). Every translation unit
// that instantiates a float/double Eigen GEMM must see it (one definition rule), which is why GEMM
// lives in cpu_matmul.cpp alone.
#include <Eigen/Core>

#if !EIGEN_VERSION_AT_LEAST(3, 4, 0) || EIGEN_VERSION_AT_LEAST(3, 4, 90)
#error "eigen_gebp_traits.h copies Eigen 3.4's gebp_traits; check it against this Eigen version"
#endif

// Packet types as template arguments lose their alignment attributes; that is what Eigen does too.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wignored-attributes"

namespace ruccl::cpu::detail {

/// Eigen's generic gebp_traits for Scalar x Scalar with a register-pinned LHS load.
template <typename Scalar, int PacketSize>
class RealGebpTraits {
 public:
  typedef Scalar LhsScalar;
  typedef Scalar RhsScalar;
  typedef Scalar ResScalar;

  typedef typename Eigen::internal::packet_conditional<
      PacketSize, typename Eigen::internal::packet_traits<Scalar>::type,
      typename Eigen::internal::packet_traits<Scalar>::half,
      typename Eigen::internal::unpacket_traits<
          typename Eigen::internal::packet_traits<Scalar>::half>::half>::type Packet;

  enum {
    ConjLhs = false,
    ConjRhs = false,
    Vectorizable = Eigen::internal::unpacket_traits<Packet>::vectorizable,
    LhsPacketSize = Vectorizable ? Eigen::internal::unpacket_traits<Packet>::size : 1,
    RhsPacketSize = LhsPacketSize,
    ResPacketSize = LhsPacketSize,
    NumberOfRegisters = EIGEN_ARCH_DEFAULT_NUMBER_OF_REGISTERS,
    nr = 4,
    default_mr = (EIGEN_PLAIN_ENUM_MIN(16, NumberOfRegisters) / 2 / nr) * LhsPacketSize,
#if defined(EIGEN_HAS_SINGLE_INSTRUCTION_MADD)
    mr = Vectorizable ? 3 * LhsPacketSize : default_mr,
#else
    mr = default_mr,
#endif
    LhsProgress = LhsPacketSize,
    RhsProgress = 1
  };

  typedef typename Eigen::internal::conditional<Vectorizable, Packet, Scalar>::type LhsPacket;
  typedef LhsPacket RhsPacket;
  typedef LhsPacket ResPacket;
  typedef LhsPacket LhsPacket4Packing;
  typedef Eigen::internal::QuadPacket<RhsPacket> RhsPacketx4;
  typedef ResPacket AccPacket;

  EIGEN_STRONG_INLINE void initAcc(AccPacket& p) { p = Eigen::internal::pset1<ResPacket>(0); }

  template <typename RhsPacketType>
  EIGEN_STRONG_INLINE void loadRhs(const RhsScalar* b, RhsPacketType& dest) const {
    dest = Eigen::internal::pset1<RhsPacketType>(*b);
  }
  EIGEN_STRONG_INLINE void loadRhs(const RhsScalar* b, RhsPacketx4& dest) const {
    Eigen::internal::pbroadcast4(b, dest.B_0, dest.B1, dest.B2, dest.B3);
  }
  template <typename RhsPacketType>
  EIGEN_STRONG_INLINE void updateRhs(const RhsScalar* b, RhsPacketType& dest) const {
    loadRhs(b, dest);
  }
  EIGEN_STRONG_INLINE void updateRhs(const RhsScalar*, RhsPacketx4&) const {}
  EIGEN_STRONG_INLINE void loadRhsQuad(const RhsScalar* b, RhsPacket& dest) const {
    dest = Eigen::internal::ploadquad<RhsPacket>(b);
  }

  template <typename LhsPacketType>
  EIGEN_STRONG_INLINE void loadLhs(const LhsScalar* a, LhsPacketType& dest) const {
    dest = Eigen::internal::pload<LhsPacketType>(a);
#if defined(__GNUC__) && !defined(__clang__) && (defined(__x86_64__) || defined(__i386__))
    __asm__("" : "+v"(dest));  // keep the packet in a register: no folding into the FMAs
#endif
  }
  template <typename LhsPacketType>
  EIGEN_STRONG_INLINE void loadLhsUnaligned(const LhsScalar* a, LhsPacketType& dest) const {
    dest = Eigen::internal::ploadu<LhsPacketType>(a);
  }

  template <typename LhsPacketType, typename RhsPacketType, typename AccPacketType,
            typename LaneIdType>
  EIGEN_STRONG_INLINE void madd(const LhsPacketType& a, const RhsPacketType& b, AccPacketType& c,
                                RhsPacketType& tmp, const LaneIdType&) const {
#ifdef EIGEN_HAS_SINGLE_INSTRUCTION_MADD
    EIGEN_UNUSED_VARIABLE(tmp);
    c = Eigen::internal::pmadd(a, b, c);
#else
    tmp = b;
    tmp = Eigen::internal::pmul(a, tmp);
    c = Eigen::internal::padd(c, tmp);
#endif
  }
  template <typename LhsPacketType, typename AccPacketType, typename LaneIdType>
  EIGEN_STRONG_INLINE void madd(const LhsPacketType& a, const RhsPacketx4& b, AccPacketType& c,
                                RhsPacket& tmp, const LaneIdType& lane) const {
    madd(a, b.get(lane), c, tmp, lane);
  }

  EIGEN_STRONG_INLINE void acc(const AccPacket& c, const ResPacket& alpha, ResPacket& r) const {
    r = Eigen::internal::pmadd(c, alpha, r);
  }
  template <typename ResPacketHalf>
  EIGEN_STRONG_INLINE void acc(const ResPacketHalf& c, const ResPacketHalf& alpha,
                               ResPacketHalf& r) const {
    r = Eigen::internal::pmadd(c, alpha, r);
  }
};

}  // namespace ruccl::cpu::detail

namespace Eigen::internal {

template <int Arch, int PacketSize>
class gebp_traits<float, float, false, false, Arch, PacketSize>
    : public ruccl::cpu::detail::RealGebpTraits<float, PacketSize> {};

template <int Arch, int PacketSize>
class gebp_traits<double, double, false, false, Arch, PacketSize>
    : public ruccl::cpu::detail::RealGebpTraits<double, PacketSize> {};

}  // namespace Eigen::internal

#pragma GCC diagnostic pop
