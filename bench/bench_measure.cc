#include "bench/bench_measure.h"

#include <cstdio>

#include "rules/default/default_rule.h"

namespace tessera {

MeasureConfig BenchMeasureConfig(double timeout_sec) {
  MeasureConfig config;
  config.runner.repeat = 5;
  config.runner.min_repeat_ms = 50;
  config.runner.timeout_sec = timeout_sec;
  return config;
}

std::optional<PrimFunc> DefaultFunc(const PrimFunc& func, const Target& target) {
  for (const DefaultRulePtr& rule : DefaultRulesFor(target)) {
    absl::StatusOr<std::optional<Schedule>> sch = rule->Apply(func, target);
    if (sch.ok() && sch->has_value()) return (*sch)->func();
  }
  return std::nullopt;
}

std::vector<double> MeasureSeconds(const PrimFunc& func, const std::vector<PrimFunc>& scheduled,
                                   const Target& target, LocalMeasurer* measurer,
                                   const std::string& who) {
  std::vector<double> secs(scheduled.size(), 0);
  MeasureRequest request;
  request.target = target;
  request.workload = func;
  request.candidates = scheduled;
  absl::StatusOr<MeasuredBatch> batch = measurer->Measure(request);
  if (!batch.ok()) {
    std::fprintf(stderr, "%s: %s\n", who.c_str(), std::string(batch.status().message()).c_str());
    return secs;
  }
  for (size_t i = 0; i < secs.size(); ++i) {
    if (batch->outcomes[i].ok()) {
      secs[i] = *batch->outcomes[i].mean_secs();
    } else {
      std::fprintf(stderr, "%s: candidate %zu: %s\n", who.c_str(), i,
                   batch->outcomes[i].error_msg.c_str());
    }
  }
  return secs;
}

}  // namespace tessera
