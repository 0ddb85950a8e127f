// The parsed-workload cache of the SQL databases (database/workload_funcs.h): a function is
// parsed from its JSON once and then served from the cache; JSON that does not parse is a
// kDataLoss naming the database and the workload.
#include "database/workload_funcs.h"

#include <gtest/gtest.h>

#include "frontend/workloads.h"
#include "ir/serialize.h"
#include "ir/structural_equal.h"

namespace tessera {
namespace {

TEST(WorkloadFuncsTest, ParsesOnceThenServesTheCachedFunction) {
  PrimFunc gmm = MakeWorkload("GMM", {{"M", 8}, {"N", 8}, {"K", 8}}).value();
  WorkloadFuncs funcs("records.db");
  absl::StatusOr<PrimFunc> first = funcs.Load(3, SaveJson(gmm));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(StructuralEqual(*first, gmm));
  // Cached by id: the JSON is not read again (a workload row never changes).
  absl::StatusOr<PrimFunc> again = funcs.Load(3, "not json at all");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(StructuralEqual(*again, gmm));
}

TEST(WorkloadFuncsTest, AnAddedFunctionIsServedWithoutParsing) {
  PrimFunc c2d = MakeWorkload("C2D").value();
  WorkloadFuncs funcs("records.db");
  funcs.Add(7, c2d);
  absl::StatusOr<PrimFunc> loaded = funcs.Load(7, "");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_TRUE(StructuralEqual(*loaded, c2d));
}

TEST(WorkloadFuncsTest, BadJsonIsDataLossNamingTheDatabaseAndTheWorkload) {
  WorkloadFuncs funcs("postgresql://tuner:***@db/records");
  absl::StatusOr<PrimFunc> bad = funcs.Load(12, "{\"not\": \"a function\"}");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(std::string(bad.status().message())
                .rfind("database 'postgresql://tuner:***@db/records': workload 12: ", 0),
            0u)
      << bad.status();
  // A failed parse is not cached: the row may be read again once repaired.
  PrimFunc gmm = MakeWorkload("GMM").value();
  EXPECT_TRUE(funcs.Load(12, SaveJson(gmm)).ok());
}

}  // namespace
}  // namespace tessera
