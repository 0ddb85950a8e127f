// Pieces the search strategies share: a small parallel-for over forked random generators, and
// drawing fresh candidates from the design spaces.
#ifndef TESSERA_TUNER_SEARCH_UTIL_H_
#define TESSERA_TUNER_SEARCH_UTIL_H_

#include <functional>
#include <optional>
#include <vector>

#include "base/random.h"
#include "tuner/search_strategy.h"

namespace tessera {

// Runs fn(i, rng) for every i in [0, n) on up to `num_threads` threads; each index gets its
// own generator forked from `rng` in index order, so results depend only on the seed, never on
// the thread count or scheduling.
void ParallelFor(int n, int num_threads, Random* rng,
                 const std::function<void(int index, Random* index_rng)>& fn);

// Turns a postprocessed schedule into a candidate (computes its hash).
MeasureCandidate ToCandidate(Schedule sch);

// One fresh sample of the task's design spaces (SampleCandidate with kDefaultMaxDraws);
// nullopt when every draw was rejected. The rejected draws are appended to `rejections`.
std::optional<MeasureCandidate> SampleFresh(const SearchTask& task, Random* rng,
                                            std::vector<CandidateFailure>* rejections);

// Adds the failure counts of `failures` (stage names; empty = no failure) to `stats`.
void CountFailures(const std::vector<CandidateFailure>& failures, SearchStats* stats);
void CountFailures(const std::vector<std::vector<CandidateFailure>>& failures, SearchStats* stats);

}  // namespace tessera

#endif  // TESSERA_TUNER_SEARCH_UTIL_H_
