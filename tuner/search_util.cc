#include "tuner/search_util.h"

#include <algorithm>
#include <thread>

#include "ir/structural_hash.h"

namespace tessera {

void ParallelFor(int n, int num_threads, Random* rng,
                 const std::function<void(int index, Random* index_rng)>& fn) {
  // One stream per index, forked in index order: what index i draws does not depend on the
  // number of threads nor on scheduling (P4).
  std::vector<Random> rngs;
  rngs.reserve(n);
  for (int i = 0; i < n; ++i) rngs.push_back(rng->Fork());
  int threads = std::max(1, std::min(num_threads, n));
  if (threads == 1) {
    for (int i = 0; i < n; ++i) fn(i, &rngs[i]);
    return;
  }
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (int i = t; i < n; i += threads) fn(i, &rngs[i]);
    });
  }
  for (std::thread& th : pool) th.join();
}

MeasureCandidate ToCandidate(Schedule sch) {
  std::string hash = StructuralHashHex(sch.func());
  return MeasureCandidate{std::move(sch), std::move(hash)};
}

std::optional<MeasureCandidate> SampleFresh(const SearchTask& task, Random* rng,
                                            std::vector<CandidateFailure>* rejections) {
  SampledCandidate sample = SampleCandidate(task.workload, task.design_spaces,
                                            task.space->postprocs, rng, kDefaultMaxDraws);
  rejections->insert(rejections->end(), sample.rejections.begin(), sample.rejections.end());
  if (!sample.schedule.ok()) return std::nullopt;
  return ToCandidate(*std::move(sample.schedule));
}

void CountFailures(const std::vector<CandidateFailure>& failures, SearchStats* stats) {
  for (const CandidateFailure& f : failures) {
    if (!f.stage.empty()) ++stats->rejected_by[f.stage];
  }
}

void CountFailures(const std::vector<std::vector<CandidateFailure>>& failures,
                   SearchStats* stats) {
  for (const std::vector<CandidateFailure>& f : failures) CountFailures(f, stats);
}

}  // namespace tessera
