// Annotation keys shared by schedule rules, postprocessors, mutators and the backends
// (docs/reference/metaschedule.md §4.5). One definition each, so a rule and the postprocessor that
// consumes its annotation cannot drift apart.
#ifndef TESSERA_RULES_ANNOTATIONS_H_
#define TESSERA_RULES_ANNOTATIONS_H_

namespace tessera {
namespace attr {

inline constexpr char kTilingStructure[] = "meta_schedule.tiling_structure";
inline constexpr char kCooperativeFetch[] = "meta_schedule.cooperative_fetch";
inline constexpr char kThreadExtentLowInclusive[] = "meta_schedule.thread_extent_low_inclusive";
inline constexpr char kThreadExtentHighInclusive[] = "meta_schedule.thread_extent_high_inclusive";
inline constexpr char kRandomComputeProducer[] = "meta_schedule.random_compute_producer";
inline constexpr char kParallel[] = "meta_schedule.parallel";
inline constexpr char kVectorize[] = "meta_schedule.vectorize";
inline constexpr char kUnrollExplicit[] = "meta_schedule.unroll_explicit";
inline constexpr char kUnrollImplicit[] = "meta_schedule.unroll_implicit";
inline constexpr char kAutoTensorize[] = "meta_schedule.auto_tensorize";
inline constexpr char kAutoTensorizeInit[] = "meta_schedule.auto_tensorize_init";
inline constexpr char kInlineRule[] = "meta_schedule.inline_rule";
inline constexpr char kWriteCacheLevel[] = "meta_schedule.write_cache_level";
// A block annotated schedule_rule = "None" is left alone by every rule; another value names
// the only rule (by registered name) that may touch it.
inline constexpr char kScheduleRule[] = "schedule_rule";
inline constexpr char kWarpExecution[] = "warp_execution";
inline constexpr char kPragmaAutoUnrollMaxStep[] = "pragma_auto_unroll_max_step";
inline constexpr char kPragmaUnrollExplicit[] = "pragma_unroll_explicit";
// Function attribute set once a function is scheduled (ApplyDefaultSchedule, ApplyBest).
inline constexpr char kScheduled[] = "tessera.scheduled";

}  // namespace attr
}  // namespace tessera

#endif  // TESSERA_RULES_ANNOTATIONS_H_
