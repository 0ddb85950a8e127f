// A search task without a compiler, shared by the search strategy tests
// (tests/tuner/evolutionary_search_test.cc, tests/tuner/replay_trace_test.cc): the default CPU
// design spaces of a small workload, an in-memory database, and a loop that drives a strategy
// the way TuningJob does (propose, measure with a testing::ScriptedMeasurer, store the records,
// feed the cost model, notify).
#ifndef TESSERA_TESTS_TUNER_SEARCH_TESTING_H_
#define TESSERA_TESTS_TUNER_SEARCH_TESTING_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cost_model/cost_model.h"
#include "cost_model/features.h"
#include "database/database.h"
#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "ir/analysis.h"
#include "tests/testing/scripted_measurer.h"
#include "tuner/search_strategy.h"
#include "tuner/space_generator.h"

namespace tessera {
namespace search_testing {

// Everything a SearchTask points at; it must outlive the task.
struct SearchSetup {
  PrimFunc func;
  Target target;
  SpaceConfig space;
  std::vector<Trace> design_spaces;
  std::unique_ptr<Database> db;
  Workload workload;
  std::unique_ptr<CostModel> model;
};

// `name` at `shape` on the host CPU (4 cores), with a random cost model unless `model` is given.
inline std::unique_ptr<SearchSetup> NewSetup(const std::string& name,
                                             const std::map<std::string, int64_t>& shape,
                                             std::unique_ptr<CostModel> model = nullptr) {
  auto s = std::make_unique<SearchSetup>();
  absl::StatusOr<PrimFunc> func = MakeWorkload(name, shape, "float32");
  EXPECT_TRUE(func.ok()) << func.status();
  s->func = *func;
  s->target = *Target::Parse("cpu -cores=4");
  absl::StatusOr<SpaceConfig> space = DefaultSpaceConfig(s->target);
  EXPECT_TRUE(space.ok()) << space.status();
  s->space = *std::move(space);
  absl::StatusOr<std::vector<Schedule>> spaces = GenerateDesignSpaces(s->func, s->space, 1);
  EXPECT_TRUE(spaces.ok()) << spaces.status();
  for (const Schedule& sch : *spaces) s->design_spaces.push_back(sch.trace().Simplified(true));
  s->db = NewMemoryDatabase();
  s->workload = *s->db->CommitWorkload(s->func);
  s->model = model ? std::move(model) : NewRandomModel(/*seed=*/5);
  return s;
}

inline SearchTask NewSearchTask(const SearchSetup& s, int64_t seed, int num_threads = 1) {
  SearchTask task;
  task.name = "test";
  task.workload = s.func;
  task.space = &s.space;
  task.design_spaces = s.design_spaces;
  task.database = s.db.get();
  task.db_workload = s.workload;
  task.target = s.target.ToString();
  task.cost_model = s.model.get();
  task.seed = seed;
  task.num_threads = num_threads;
  return task;
}

// Measures `batch` with `measurer`, stores one record per candidate in the setup's database,
// feeds the cost model the candidates that built, and notifies `strategy`.
inline void MeasureAndNotify(SearchSetup* s, SearchStrategy* strategy,
                             const std::vector<MeasureCandidate>& batch, Measurer* measurer) {
  MeasureRequest request;
  request.target = s->target;
  request.workload = s->func;
  request.verify = false;
  for (const MeasureCandidate& c : batch) request.candidates.push_back(c.sch.func());
  absl::StatusOr<MeasuredBatch> measured = measurer->Measure(request);
  ASSERT_TRUE(measured.ok()) << measured.status();
  std::vector<CostSample> samples;
  for (size_t i = 0; i < batch.size(); ++i) {
    const MeasureOutcome& o = measured->outcomes[i];
    TuningRecord record;
    record.workload_id = s->workload.id;
    record.target = s->target.ToString();
    record.trace_json = batch[i].sch.trace().ToJson();
    record.run_secs = o.run_secs;
    record.error = o.error;
    record.error_msg = o.error_msg;
    record.args = ArgInfosOf(s->func);
    ASSERT_TRUE(s->db->CommitRecord(record).ok());
    if (!o.ok()) continue;
    absl::StatusOr<FeatureMatrix> features = ExtractFeatures(batch[i].sch.func(), s->target);
    ASSERT_TRUE(features.ok()) << features.status();
    samples.push_back(CostSample{s->workload.hash, *std::move(features), *o.mean_secs()});
  }
  if (!samples.empty()) {
    ASSERT_TRUE(s->model->Update(samples).ok());
  }
  strategy->NotifyResults(batch, measured->outcomes);
}

// Runs `strategy` (after PreTuning) until it proposes an empty batch or `max_batches` batches;
// returns the proposed hashes, batch by batch.
inline std::vector<std::vector<std::string>> RunSearch(SearchSetup* s, SearchStrategy* strategy,
                                                       Measurer* measurer, int max_batches = 1000) {
  std::vector<std::vector<std::string>> proposed;
  for (int b = 0; b < max_batches; ++b) {
    absl::StatusOr<std::vector<MeasureCandidate>> batch = strategy->GenerateCandidates();
    EXPECT_TRUE(batch.ok()) << batch.status();
    if (!batch.ok() || batch->empty()) break;
    std::vector<std::string> hashes;
    for (const MeasureCandidate& c : *batch) hashes.push_back(c.hash);
    proposed.push_back(hashes);
    MeasureAndNotify(s, strategy, *batch, measurer);
  }
  return proposed;
}

}  // namespace search_testing
}  // namespace tessera

#endif  // TESSERA_TESTS_TUNER_SEARCH_TESTING_H_
