// Tests of codegen/c_prelude.cc: the helpers generated C code calls compile with the host C
// compiler and round as documented (floordiv/floormod toward negative infinity, bfloat16 to
// nearest even), every helper is named tessera_*, and the reserved names hold the C keywords
// and the libc functions generated code calls.
#include "codegen/c_prelude.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <string>

#include "gtest/gtest.h"
#include "tests/testing/schedule_testing.h"

namespace tessera {
namespace {

TEST(CPreludeTest, EveryHelperIsNamedTesseraUnderscore) {
  const std::string prelude = kCPrelude;
  std::regex helper(R"(static inline [A-Za-z_0-9]+ \*?([A-Za-z_0-9#]+)\()");
  int helpers = 0;
  for (std::sregex_iterator it(prelude.begin(), prelude.end(), helper), end; it != end; ++it) {
    EXPECT_EQ((*it)[1].str().rfind("tessera_", 0), 0u) << (*it)[1].str();
    ++helpers;
  }
  EXPECT_GT(helpers, 5);
}

TEST(CPreludeTest, ReservedNamesHoldKeywordsAndCalledFunctions) {
  const std::set<std::string>& reserved = CReservedNames();
  for (const char* name : {"for", "int", "float", "return", "expf", "sqrtf", "aligned_alloc"}) {
    EXPECT_EQ(reserved.count(name), 1u) << name;
  }
  EXPECT_EQ(reserved.count("A"), 0u);
  EXPECT_EQ(reserved.count("tessera_floordiv_i64"), 0u);  // prefixed names never clash
}

// Compiles the prelude with a main that checks its helpers, runs it, and returns its exit code.
TEST(CPreludeTest, HelpersCompileAndRoundAsDocumented) {
  const std::string dir = ::testing::TempDir();
  const std::string source = dir + "/c_prelude_test.c";
  const std::string binary = dir + "/c_prelude_test";
  {
    std::ofstream out(source);
    out << kCPrelude << R"(
int main(void) {
  if (tessera_floordiv_i64(-7, 2) != -4) return 1;
  if (tessera_floormod_i64(-7, 2) != 1) return 2;
  if (tessera_floormod_i64(7, -2) != -1) return 3;
  if (tessera_floordiv_i64(6, 3) != 2) return 4;
  if (tessera_min_i32(-3, 2) != -3 || tessera_max_u8(200, 7) != 200) return 5;
  if (tessera_floormod_f32(-7.5f, 2.0f) != 0.5f) return 6;
  if (tessera_bf16_to_f32(tessera_f32_to_bf16(1.5f)) != 1.5f) return 7;
  /* 1 + 2^-8 lies halfway between two bfloat16 values: rounds to the even one, 1.0. */
  if (tessera_bf16_to_f32(tessera_f32_to_bf16(1.00390625f)) != 1.0f) return 8;
  /* Float min/max go through integer keys: every sign and magnitude orders as the floats do. */
  const float f[] = {-INFINITY, -3.5e38f, -2.0f, -1e-40f, 0.0f, 1e-40f, 0.5f, 3.0e38f, INFINITY};
  for (int i = 0; i < 9; ++i) {
    for (int j = 0; j < 9; ++j) {
      if (tessera_max_f32(f[i], f[j]) != (f[i] > f[j] ? f[i] : f[j])) return 9;
      if (tessera_min_f32(f[i], f[j]) != (f[i] < f[j] ? f[i] : f[j])) return 10;
      if (tessera_max_f64(f[i], f[j]) != (f[i] > f[j] ? (double)f[i] : (double)f[j])) return 11;
      if (tessera_min_f64(-(double)f[i], f[j]) != (-(double)f[i] < f[j] ? -(double)f[i] : f[j]))
        return 12;
    }
  }
  if (signbit(tessera_max_f32(-0.0f, 0.0f)) || !signbit(tessera_min_f32(0.0f, -0.0f))) return 13;
  /* The scalar helpers are std::max/std::min: (a < b) ? b : a and (b < a) ? b : a. */
  for (int i = 0; i < 9; ++i) {
    for (int j = 0; j < 9; ++j) {
      if (tessera_max_scalar_f32(f[i], f[j]) != (f[i] < f[j] ? f[j] : f[i])) return 14;
      if (tessera_min_scalar_f32(f[i], f[j]) != (f[j] < f[i] ? f[j] : f[i])) return 15;
      if (tessera_max_scalar_f64(f[i], f[j]) != (f[i] < f[j] ? (double)f[j] : (double)f[i]))
        return 16;
    }
  }
  if (!isnan(tessera_max_scalar_f32(NAN, 1.0f)) || tessera_max_scalar_f32(1.0f, NAN) != 1.0f)
    return 17;
  /* exp: within 1.5 ulp of the double exp from -86.9 to 88.72 (every 4097th float), exact at 0,
     inf above 88.72, 0 from below -86.99 down to -inf, NaN for NaNs of either sign. */
  for (uint32_t bits = 0; bits < 0x42B17218u; bits += 4097) {
    float x;
    memcpy(&x, &bits, sizeof x);
    for (int sign = 0; sign < 2; ++sign, x = -x) {
      if (x < -86.9f || x > 88.72f) continue;
      const double expected = exp((double)x);
      const double ulp = nextafterf((float)expected, INFINITY) - (float)expected;
      if (fabs(tessera_exp_f32(x) - expected) > 1.5 * ulp) return 18;
    }
  }
  if (tessera_exp_f32(0.0f) != 1.0f || tessera_exp_f32(-0.0f) != 1.0f) return 19;
  const float overflow[] = {88.73f, 89.0f, 1e9f, 3.4e38f, INFINITY};
  for (int i = 0; i < 5; ++i) {
    if (tessera_exp_f32(overflow[i]) != INFINITY) return 20;
  }
  const float underflow[] = {-86.99f, -87.0f, -88.0f, -1e9f, -3.4e38f, -INFINITY};
  for (int i = 0; i < 6; ++i) {
    if (tessera_exp_f32(underflow[i]) != 0.0f) return 21;
  }
  if (!isnan(tessera_exp_f32(NAN)) || !isnan(tessera_exp_f32(-NAN))) return 22;
  return 0;
}
)";
  }
  const std::string compile = "cc -std=c11 -O1 -o " + binary + " " + source + " -lm 2>&1";
  ASSERT_EQ(std::system(compile.c_str()), 0) << compile;
  EXPECT_EQ(std::system(binary.c_str()), 0) << "a helper check failed (the exit code names it)";
}

// The dot products (ir/cpu_intrinsics.h) add each column's group of k into c: int8 exactly (from
// -128 to 127, where vpdpbusd's offset of a by 128 and its correction matter), bfloat16 within
// the rounding of its two sums; the shifted int8 forms add (a + 128) b. Compiled twice: for a
// generic x86-64 (the scalar loops) and with -march=native (vpdpbusd and vdpbf16ps where the host
// has them).
TEST(CPreludeTest, DotProductsAddEachColumnsGroupOfK) {
  const std::string dir = ::testing::TempDir();
  const std::string source = dir + "/c_prelude_dot_test.c";
  {
    std::ofstream out(source);
    out << kCPrelude << R"(
int main(void) {
  int8_t a8[4] = {-128, 127, -1, 3};
  int8_t b8[64];
  int32_t c32[16];
  for (int i = 0; i < 64; ++i) b8[i] = (int8_t)(i * 37 - 128);
  for (int j = 0; j < 16; ++j) c32[j] = 1000 * j - 7;
  tessera_dot_i8_16x4(c32, a8, b8);
  for (int j = 0; j < 16; ++j) {
    int32_t want = 1000 * j - 7;
    for (int k = 0; k < 4; ++k) want += (int32_t)a8[k] * (int32_t)b8[4 * j + k];
    if (c32[j] != want) return 1;
  }
  /* Eight k: b's second group of four 64 bytes on. */
  int8_t a88[8] = {-128, 127, -1, 3, 5, -77, 0, 127};
  int8_t b88[128];
  for (int i = 0; i < 128; ++i) b88[i] = (int8_t)(i * 53 + 11);
  for (int j = 0; j < 16; ++j) c32[j] = -3 * j;
  tessera_dot_i8_16x8(c32, a88, b88);
  for (int j = 0; j < 16; ++j) {
    int32_t want = -3 * j;
    for (int k = 0; k < 8; ++k) want += (int32_t)a88[k] * (int32_t)b88[64 * (k / 4) + 4 * j + k % 4];
    if (c32[j] != want) return 3;
  }
  /* The shifted forms: (a + 128) b, no correction. */
  for (int j = 0; j < 16; ++j) c32[j] = 5 * j + 1;
  tessera_dot_i8_shifted_16x4(c32, a8, b8);
  for (int j = 0; j < 16; ++j) {
    int32_t want = 5 * j + 1;
    for (int k = 0; k < 4; ++k) want += ((int32_t)a8[k] + 128) * (int32_t)b8[4 * j + k];
    if (c32[j] != want) return 4;
  }
  for (int j = 0; j < 16; ++j) c32[j] = -9 * j;
  tessera_dot_i8_shifted_16x8(c32, a88, b88);
  for (int j = 0; j < 16; ++j) {
    int32_t want = -9 * j;
    for (int k = 0; k < 8; ++k) {
      want += ((int32_t)a88[k] + 128) * (int32_t)b88[64 * (k / 4) + 4 * j + k % 4];
    }
    if (c32[j] != want) return 5;
  }
  uint16_t a16[2] = {tessera_f32_to_bf16(1.5f), tessera_f32_to_bf16(-0.375f)};
  uint16_t b16[32];
  float c[16];
  for (int i = 0; i < 32; ++i) b16[i] = tessera_f32_to_bf16((float)(i - 13) * 0.25f);
  for (int j = 0; j < 16; ++j) c[j] = 0.125f * (float)j;
  tessera_dot_bf16_16x2(c, a16, b16);
  for (int j = 0; j < 16; ++j) {
    const double want = 0.125 * j + 1.5 * ((2 * j - 13) * 0.25) + -0.375 * ((2 * j + 1 - 13) * 0.25);
    if (fabs(c[j] - want) > 1e-6 * (1 + fabs(want))) return 2;
  }
  return 0;
}
)";
  }
  for (const std::string march : {"", " -march=native"}) {
    const std::string binary = dir + "/c_prelude_dot_test" + (march.empty() ? "" : "_native");
    const std::string compile =
        "cc -std=c11 -O2" + march + " -o " + binary + " " + source + " -lm 2>&1";
    ASSERT_EQ(std::system(compile.c_str()), 0) << compile;
    EXPECT_EQ(std::system(binary.c_str()), 0)
        << "dot products" << march
        << ": 1 int8 fours, 2 bfloat16, 3 int8 eights, 4 and 5 the shifted fours and eights";
  }
}

// The x86-64 assembly of the prelude followed by `code`, compiled with the builder's
// vectorization flags (worker/builder.h) for AVX2; "" where the compiler failed (with a test
// failure).
std::string AssemblyWithThePrelude(const std::string& name, const std::string& code) {
  absl::StatusOr<std::string> text =
      testing::CAssembly(::testing::TempDir(), name, kCPrelude + code, "x86-64-v3");
  EXPECT_TRUE(text.ok()) << text.status();
  return text.ok() ? *text : "";
}

// A relu or a row max is a float max inside a simd loop. With the builder's flags (no loop
// if-conversion) a plain `a > b ? a : b` stays scalar; the prelude's keyed max must become a
// vector integer max.
TEST(CPreludeTest, FloatMaxInASimdLoopVectorizesWithTheBuildersFlags) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "the check reads x86-64 assembly";
#endif
  const std::string text = AssemblyWithThePrelude("c_prelude_simd_max", R"(
void relu(float* restrict y, const float* restrict x) {
  #pragma omp simd
  for (int i = 0; i < 256; ++i) y[i] = tessera_max_f32(x[i], 0.0f);
}
)");
  EXPECT_NE(text.find("vpmaxsd"), std::string::npos) << "no vector max in " << text;
  EXPECT_EQ(text.find("maxss"), std::string::npos) << "a scalar max in " << text;
}

// A softmax's exp inside a simd loop: the prelude's exp must vectorize into the loop, with no
// call to a math library (glibc's vector expf cost twice as much).
TEST(CPreludeTest, ExpInASimdLoopVectorizesWithoutACall) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "the check reads x86-64 assembly";
#endif
  const std::string text = AssemblyWithThePrelude("c_prelude_simd_exp", R"(
void shifted_exp(float* restrict y, const float* restrict x, float max) {
  #pragma omp simd
  for (int i = 0; i < 256; ++i) y[i] = tessera_exp_f32(x[i] - max);
}
)");
  EXPECT_EQ(text.find("call"), std::string::npos) << "a call in " << text;
  EXPECT_TRUE(std::regex_search(text, std::regex(R"(vfmadd[0-9]+ps\t%ymm)")))
      << "no 8-lane FMA in " << text;
}

}  // namespace
}  // namespace tessera
