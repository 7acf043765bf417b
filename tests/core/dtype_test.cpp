#include <cmath>
#include <cstring>

#include "reference.h"

namespace nnvm {
namespace {

float bits_to_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Reference float -> binary16: exact rational rounding done in double.
uint16_t half_reference(float f) {
  if (std::isnan(f)) return 0x7e00;
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  double a = std::fabs(double(f));
  if (a >= 65520.0) return sign | 0x7c00;
  // scale so that the last kept bit has weight 1, then round half to even
  int e = a == 0 ? -24 : std::max(-14, int(std::floor(std::log2(a)))) - 10;
  double q = std::nearbyint(std::ldexp(a, -e));
  if (q >= 2048) {
    q /= 2;
    e += 1;
  }
  if (q < 1024) return uint16_t(sign | uint16_t(q));  // subnormal (e == -24)
  return uint16_t(sign | uint16_t((e + 25) << 10) | uint16_t(q - 1024));
}

TEST(DType, HalfConversionMatchesExactRounding) {
  // every float whose top 16 bits vary, with assorted low bits: covers
  // subnormals, ties, overflow, infinities
  for (uint32_t hi = 0; hi < 0x10000; ++hi) {
    for (uint32_t lo : {0u, 1u, 0x1000u, 0x2000u, 0xffffu}) {
      const float f = bits_to_float((hi << 16) | lo);
      if (std::isnan(f)) {
        EXPECT_TRUE(std::isnan(float(Half(f))));
        continue;
      }
      ASSERT_EQ(Half::from_float(f), half_reference(f)) << "float " << f;
    }
  }
}

TEST(DType, HalfRoundTripIsExact) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) continue;  // NaN payloads
    EXPECT_EQ(Half::from_float(Half::to_float(uint16_t(h))), h);
  }
}

TEST(DType, BFloat16RoundsToNearestEven) {
  EXPECT_EQ(BFloat16(1.0f).bits, 0x3f80);
  EXPECT_EQ(BFloat16(bits_to_float(0x3f808000)).bits, 0x3f80);  // tie, even stays
  EXPECT_EQ(BFloat16(bits_to_float(0x3f818000)).bits, 0x3f82);  // tie, odd rounds up
  EXPECT_EQ(BFloat16(bits_to_float(0x3f808001)).bits, 0x3f81);
  EXPECT_TRUE(std::isnan(float(BFloat16(NAN))));
  EXPECT_EQ(float(BFloat16(INFINITY)), INFINITY);
}

TEST(DType, Properties) {
  EXPECT_EQ(itemsize(kBool), 1u);
  EXPECT_EQ(itemsize(kBFloat16), 2u);
  EXPECT_EQ(itemsize(kInt64), 8u);
  EXPECT_EQ(dtype_name(kFloat16), "float16");
  EXPECT_TRUE(is_floating(kBFloat16));
  EXPECT_FALSE(is_floating(kInt8));
  EXPECT_TRUE(is_integral(kUInt8));
  EXPECT_FALSE(is_integral(kBool));
  EXPECT_TRUE(is_integral(kBool, true));
}

TEST(DType, StoredNativelyComputedInFloat) {
  const Tensor h = tensor<float>({1.f / 3, 1000.f, 65504.f}).to(kFloat16);
  EXPECT_EQ(h.element_size(), 2u);
  EXPECT_EQ(h.nbytes(), 6u);
  EXPECT_EQ(h.data_ptr<Half>()[1].bits, Half(1000.f).bits);
  testing::expect_values(h * 2, {float(Half(2.f / 3)), 2000, INFINITY}, 1e-3);
  const Tensor b = tensor<float>({1.f / 3}).to(kBFloat16);
  EXPECT_EQ(b.data_ptr<BFloat16>()[0].bits, BFloat16(1.f / 3).bits);
}

}  // namespace
}  // namespace nnvm
