// ApplyBest (tuner/apply_best.cc) on an in-memory database, without a compiler: the fastest
// verified record of the function's workload and target is replayed exactly, unverified and
// other-target records are not used, misses say why, scheduled functions are left alone, and a
// stored trace that no longer replays is an error naming its record.
#include "tuner/apply_best.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/analysis.h"
#include "ir/structural_equal.h"
#include "ir/structural_hash.h"
#include "rules/annotations.h"
#include "tests/tuner/search_testing.h"
#include "tuner/search_util.h"

namespace tessera {
namespace {

using search_testing::NewSearchTask;
using search_testing::NewSetup;
using search_testing::SearchSetup;

// A stored record of `candidate` for the setup's workload.
TuningRecord RecordOf(const SearchSetup& s, const MeasureCandidate& candidate, double secs,
                      bool verified, const std::string& target) {
  TuningRecord r;
  r.workload_id = s.workload.id;
  r.target = target;
  r.trace_json = candidate.sch.trace().ToJson();
  r.run_secs = {secs};
  r.args = ArgInfosOf(s.func);
  r.verified = verified;
  return r;
}

// Three distinct samples of the setup's space.
std::vector<MeasureCandidate> Samples(const SearchSetup& s) {
  const SearchTask task = NewSearchTask(s, 1);
  Random rng(2);
  std::vector<MeasureCandidate> out;
  std::vector<CandidateFailure> rejections;
  std::set<std::string> seen;
  while (out.size() < 3) {
    std::optional<MeasureCandidate> c = SampleFresh(task, &rng, &rejections);
    EXPECT_TRUE(c.has_value());
    if (c && seen.insert(c->hash).second) out.push_back(*std::move(c));
  }
  return out;
}

TEST(ApplyBestTest, ReplaysTheFastestVerifiedRecordOfTheTarget) {
  std::unique_ptr<SearchSetup> s = NewSetup("GMM", {{"M", 32}, {"N", 32}, {"K", 32}});
  const std::vector<MeasureCandidate> c = Samples(*s);
  const std::string target = s->target.ToString();
  ASSERT_TRUE(s->db->CommitRecord(RecordOf(*s, c[0], 2e-3, true, target)).ok());
  const int64_t best = *s->db->CommitRecord(RecordOf(*s, c[1], 1e-3, true, target));
  // Faster, but not verified; and faster on another target.
  ASSERT_TRUE(s->db->CommitRecord(RecordOf(*s, c[2], 1e-4, false, target)).ok());
  ASSERT_TRUE(s->db->CommitRecord(RecordOf(*s, c[2], 1e-5, true, "cpu -cores=64")).ok());

  std::vector<ApplyBestEntry> report;
  absl::StatusOr<IRModule> applied =
      ApplyBest(IRModule::FromFunction(s->func), s->target, s->db.get(), &report);
  ASSERT_TRUE(applied.ok()) << applied.status();
  ASSERT_EQ(report.size(), 1u);
  EXPECT_TRUE(report[0].hit);
  EXPECT_EQ(report[0].function, s->func.name());
  EXPECT_EQ(report[0].record_id, best);
  EXPECT_DOUBLE_EQ(report[0].record_secs, 1e-3);
  const PrimFunc scheduled = *applied->Lookup(s->func.name());
  EXPECT_TRUE(scheduled.attrs().count(attr::kScheduled));
  EXPECT_TRUE(StructuralEqual(scheduled, c[1].sch.func().WithAttr(attr::kScheduled, int64_t{1})))
      << "not the best record's program";
}

TEST(ApplyBestTest, MissesSayWhyAndScheduledFunctionsAreLeftAlone) {
  std::unique_ptr<SearchSetup> s = NewSetup("GMM", {{"M", 32}, {"N", 32}, {"K", 32}});
  const std::vector<MeasureCandidate> c = Samples(*s);
  ASSERT_TRUE(
      s->db->CommitRecord(RecordOf(*s, c[0], 1e-3, /*verified=*/false, s->target.ToString())).ok());
  const PrimFunc other =
      MakeWorkload("ELEMENTWISE", {{"M", 16}, {"N", 16}}, "float32")->WithName("ew");
  const PrimFunc done = other.WithName("done").WithAttr(attr::kScheduled, int64_t{1});
  IRModule mod({{s->func.name(), s->func}, {"ew", other}, {"done", done}});
  ASSERT_EQ(mod.size(), 3u);

  std::vector<ApplyBestEntry> report;
  absl::StatusOr<IRModule> applied = ApplyBest(mod, s->target, s->db.get(), &report);
  ASSERT_TRUE(applied.ok()) << applied.status();
  ASSERT_EQ(report.size(), 3u);
  for (const ApplyBestEntry& e : report) {
    EXPECT_FALSE(e.hit) << e.function;
    const PrimFunc out = *applied->Lookup(e.function);
    EXPECT_TRUE(StructuralEqual(out, *mod.Lookup(e.function))) << e.function << " changed";
    if (e.function == "done") {
      EXPECT_EQ(e.note, "already scheduled");
    } else if (e.function == "ew") {
      EXPECT_EQ(e.note, "workload not in the database");
    } else {
      EXPECT_EQ(e.note, "no verified record for this target");
    }
  }
}

TEST(ApplyBestTest, ARecordThatNoLongerReplaysIsAnErrorNamingIt) {
  std::unique_ptr<SearchSetup> s = NewSetup("GMM", {{"M", 32}, {"N", 32}, {"K", 32}});
  TuningRecord r = RecordOf(*s, Samples(*s)[0], 1e-3, true, s->target.ToString());
  r.trace_json = R"([[["GetBlock",[],["no_such_block","main"],["b0"]]],[]])";
  const int64_t id = *s->db->CommitRecord(r);
  absl::StatusOr<IRModule> applied =
      ApplyBest(IRModule::FromFunction(s->func), s->target, s->db.get());
  EXPECT_EQ(applied.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(applied.status().message().find("record " + std::to_string(id)), std::string::npos)
      << applied.status();
}

}  // namespace
}  // namespace tessera
