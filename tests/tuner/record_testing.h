// Records of chosen schedules in a search setup's database, shared by the tests of the best
// record and the runoff (tests/tuner/best_record_test.cc, tests/tuner/runoff_test.cc): the
// default schedule and samples of the design space that are not it.
#ifndef TESSERA_TESTS_TUNER_RECORD_TESTING_H_
#define TESSERA_TESTS_TUNER_RECORD_TESTING_H_

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/analysis.h"
#include "rules/default/default_rule.h"
#include "tests/tuner/search_testing.h"
#include "tuner/search_util.h"

namespace tessera::record_testing {

// A record of `sch` on the setup's workload and target that ran in `secs`.
inline TuningRecord RecordOf(const search_testing::SearchSetup& s, const Schedule& sch, double secs,
                             bool verified = true) {
  TuningRecord r;
  r.workload_id = s.workload.id;
  r.target = s.target.ToString();
  r.trace_json = sch.trace().ToJson();
  r.run_secs = {secs};
  r.args = ArgInfosOf(s.func);
  r.verified = verified;
  return r;
}

struct Schedules {
  Schedule default_schedule;
  std::vector<Schedule> others;  // samples of the space, none of them the default
};

// The default schedule of the setup's workload and `num_others` distinct samples of its space.
inline Schedules MakeSchedules(const search_testing::SearchSetup& s, size_t num_others) {
  std::optional<Schedule> def;
  for (const DefaultRulePtr& rule : DefaultRulesFor(s.target)) {
    absl::StatusOr<std::optional<Schedule>> sch = rule->Apply(s.func, s.target);
    EXPECT_TRUE(sch.ok()) << sch.status();
    if (sch.ok() && *sch) {
      def = **sch;
      break;
    }
  }
  EXPECT_TRUE(def.has_value()) << "no default rule applies";
  Schedules out{*def, {}};
  const SearchTask task = search_testing::NewSearchTask(s, 1);
  Random rng(4);
  std::vector<CandidateFailure> rejections;
  std::set<std::string> seen = {ToCandidate(*def).hash};
  for (int draws = 0; out.others.size() < num_others && draws < 100; ++draws) {
    std::optional<MeasureCandidate> c = SampleFresh(task, &rng, &rejections);
    if (c && seen.insert(c->hash).second) out.others.push_back(c->sch);
  }
  EXPECT_EQ(out.others.size(), num_others);
  return out;
}

}  // namespace tessera::record_testing

#endif  // TESSERA_TESTS_TUNER_RECORD_TESTING_H_
