// Tests of schedule/tensor_intrin.h's registry: the built-in intrinsics, the error for an
// unknown name, validation and duplicates on registration, the sorted list of names. Matching
// and instantiation are exercised by Tensorize
// (tests/schedule/primitive/blockize_tensorize_test.cc).
#include "schedule/tensor_intrin.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"
#include "ir/printer.h"

namespace tessera {
namespace {

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(TensorIntrinTest, BuiltinsAreRegistered) {
  for (const char* name : {kWmmaLoadA, kWmmaLoadB, kWmmaFill, kWmmaSync, kWmmaStore, kDp4a}) {
    absl::StatusOr<TensorIntrin> intrin = GetTensorIntrin(name);
    ASSERT_TRUE(intrin.ok()) << intrin.status();
    EXPECT_EQ(intrin->name, name);
    EXPECT_EQ(intrin->desc.params().size(), intrin->impl.params().size());
  }
  TensorIntrin sync = *GetTensorIntrin(kWmmaSync);
  ASSERT_EQ(sync.desc.params().size(), 3u);
  EXPECT_EQ(sync.desc.params()[0].scope(), "wmma.matrix_a");
  EXPECT_EQ(sync.desc.params()[2].scope(), "wmma.accumulator");
  EXPECT_EQ(sync.desc.params()[2].dtype(), DataType::Float32());
  EXPECT_TRUE(Contains(PrintFunc(sync.impl), "call_extern(int32, \"wmma::mma_sync\""))
      << PrintFunc(sync.impl);
}

// Each tensor-core product is registered with its family's fragment scopes and calls (WMMA's
// API or Tessera's own tessera_mma), and the two families compute the same (descs alike but for
// the scopes).
TEST(TensorIntrinTest, EveryTensorCoreGroupIsRegisteredWithItsFamilysFragments) {
  ASSERT_EQ(TensorCoreIntrinGroups().size(), 7u);
  for (const TensorCoreIntrins& g : TensorCoreIntrinGroups()) {
    SCOPED_TRACE(g.sync);
    const std::string ns = g.family == "mma" ? "tessera_mma::" : "wmma::";
    for (const char* name : {g.fill, g.load_a, g.load_b, g.sync, g.store}) {
      absl::StatusOr<TensorIntrin> intrin = GetTensorIntrin(name);
      ASSERT_TRUE(intrin.ok()) << intrin.status();
      EXPECT_TRUE(Contains(PrintFunc(intrin->impl), "\"" + ns)) << PrintFunc(intrin->impl);
    }
    TensorIntrin sync = *GetTensorIntrin(g.sync);
    EXPECT_EQ(sync.desc.params()[0].scope(), g.Scope("matrix_a"));
    EXPECT_EQ(sync.desc.params()[1].scope(), g.Scope("matrix_b"));
    EXPECT_EQ(sync.desc.params()[2].scope(), g.Scope("accumulator"));
    EXPECT_EQ(sync.desc.params()[0].dtype(), g.in);
    EXPECT_EQ(sync.desc.params()[2].dtype(), g.acc);
    EXPECT_EQ(FindTensorCoreIntrins(g.in, g.acc, g.family), &g);
    EXPECT_EQ(g.min_compute_capability,
              g.family == "mma" || g.in == DataType::BFloat16() ? 80 : 70);
    const TensorCoreIntrins* wmma = FindTensorCoreIntrins(g.in, g.acc, "wmma");
    if (wmma == nullptr) continue;  // TF32: Tessera's fragments only
    std::string desc = PrintFunc(sync.desc);
    for (const char* use : {"matrix_a", "matrix_b", "accumulator"}) {
      desc = absl::StrReplaceAll(desc, {{g.Scope(use), wmma->Scope(use)}});
    }
    EXPECT_EQ(desc, PrintFunc(GetTensorIntrin(wmma->sync)->desc));
  }
  EXPECT_EQ(FindTensorCoreIntrins(DataType::BFloat16(), DataType::BFloat16(), "mma"), nullptr);
  // float32 products are TF32's: their description rounds both operands.
  const TensorCoreIntrins* tf32 =
      FindTensorCoreIntrins(DataType::Float32(), DataType::Float32(), "mma");
  ASSERT_NE(tf32, nullptr);
  EXPECT_EQ(tf32->sync, std::string(kMmaSyncTf32));
  EXPECT_TRUE(Contains(PrintFunc(GetTensorIntrin(kMmaSyncTf32)->desc), "round_tf32("))
      << PrintFunc(GetTensorIntrin(kMmaSyncTf32)->desc);
  EXPECT_EQ(FindTensorCoreIntrins(DataType::Float32(), DataType::Float32(), "wmma"), nullptr);
}

TEST(TensorIntrinTest, UnknownNameListsKnownOnes) {
  absl::StatusOr<TensorIntrin> intrin = GetTensorIntrin("nope");
  ASSERT_FALSE(intrin.ok());
  EXPECT_EQ(intrin.status().code(), absl::StatusCode::kNotFound);
  std::string message(intrin.status().message());
  EXPECT_TRUE(Contains(message, "unknown tensor intrinsic nope; known: ")) << message;
  EXPECT_TRUE(Contains(message, kWmmaSync)) << message;
  EXPECT_TRUE(Contains(message, kDp4a)) << message;
}

TEST(TensorIntrinTest, RegisterValidatesAndRejectsDuplicates) {
  TensorIntrin sync = *GetTensorIntrin(kWmmaSync);
  EXPECT_EQ(RegisterTensorIntrin(sync).code(), absl::StatusCode::kAlreadyExists);
  TensorIntrin broken{"broken", sync.desc, (*GetTensorIntrin(kWmmaFill)).impl};
  absl::Status s = RegisterTensorIntrin(broken);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(std::string(s.message()), "tensor intrinsic broken: desc has 3 parameters"))
      << s;
  EXPECT_FALSE(GetTensorIntrin("broken").ok());
}

TEST(TensorIntrinTest, ListIsSortedAndHoldsEveryBuiltin) {
  std::vector<std::string> names = ListTensorIntrins();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  for (const char* name : {kWmmaLoadA, kWmmaLoadB, kWmmaFill, kWmmaSync, kWmmaStore, kWmmaFillF16,
                           kWmmaSyncF16, kWmmaStoreF16, kDp4a}) {
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
  }
}

}  // namespace
}  // namespace tessera
