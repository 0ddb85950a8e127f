#include "worker/host.h"

#include <unistd.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"

namespace tessera {

std::string HostCpuName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    size_t colon = line.find(':');
    if (colon == std::string::npos) break;
    size_t start = line.find_first_not_of(" \t", colon + 1);
    if (start == std::string::npos) break;
    return line.substr(start);
  }
  return "unknown cpu";
}

int HostCpuCores() {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

namespace {

#if defined(__x86_64__)
struct CpuidRegs {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
};

// Leaf `leaf`, subleaf `sub`; all zero when the leaf is beyond the highest one.
CpuidRegs Cpuid(unsigned leaf, unsigned sub) {
  CpuidRegs r;
  if (__get_cpuid_max(leaf & 0x80000000u, nullptr) < leaf) return r;
  __cpuid_count(leaf, sub, r.eax, r.ebx, r.ecx, r.edx);
  return r;
}

bool Bit(unsigned reg, int bit) { return (reg >> bit) & 1u; }

// The extensions of Target::CpuIsaFlags() this core has and the OS saves the registers of.
std::vector<std::string> DetectIsa() {
  const CpuidRegs l1 = Cpuid(1, 0);
  // Without OSXSAVE nothing wider than SSE may be used, whatever the other bits say.
  if (!Bit(l1.ecx, 27) || !Bit(l1.ecx, 28)) return {};
  unsigned xcr0_lo, xcr0_hi;
  __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  const bool ymm = (xcr0_lo & 0x6u) == 0x6u;
  const bool zmm = ymm && (xcr0_lo & 0xe0u) == 0xe0u;   // opmask, ZMM_Hi256, Hi16_ZMM
  const bool tiles = ((xcr0_lo >> 17) & 0x3u) == 0x3u;  // XTILECFG, XTILEDATA
  const CpuidRegs l7 = Cpuid(7, 0), l71 = Cpuid(7, 1);
  const std::pair<const char*, bool> flags[] = {
      {"avx2", ymm && Bit(l7.ebx, 5)},        {"fma", ymm && Bit(l1.ecx, 12)},
      {"avx512f", zmm && Bit(l7.ebx, 16)},    {"avx512bw", zmm && Bit(l7.ebx, 30)},
      {"avx512dq", zmm && Bit(l7.ebx, 17)},   {"avx512vl", zmm && Bit(l7.ebx, 31)},
      {"avx512vnni", zmm && Bit(l7.ecx, 11)}, {"avx512bf16", zmm && Bit(l71.eax, 5)},
      {"avx512fp16", zmm && Bit(l7.edx, 23)}, {"avxvnni", ymm && Bit(l71.eax, 4)},
      {"amx-tile", tiles && Bit(l7.edx, 24)}, {"amx-bf16", tiles && Bit(l7.edx, 22)},
      {"amx-int8", tiles && Bit(l7.edx, 25)},
  };
  std::vector<std::string> isa;
  for (const auto& [flag, present] : flags) {
    if (present) isa.push_back(flag);
  }
  return isa;
}

// L1d and L2 sizes from CPUID's deterministic cache parameters: leaf 4 on Intel, 0x8000001D
// on AMD (same layout; leaf 4 is reserved there and reads as no caches).
bool CpuidCaches(int64_t* l1d_kb, int64_t* l2_kb) {
  for (unsigned leaf : {4u, 0x8000001Du}) {
    bool found = false;
    for (unsigned sub = 0; sub < 16; ++sub) {
      const CpuidRegs r = Cpuid(leaf, sub);
      const unsigned type = r.eax & 0x1fu, level = (r.eax >> 5) & 0x7u;
      if (type == 0) break;  // no more caches
      const int64_t bytes = int64_t{((r.ebx >> 22) & 0x3ffu) + 1} * (((r.ebx >> 12) & 0x3ffu) + 1) *
                            ((r.ebx & 0xfffu) + 1) * (int64_t{r.ecx} + 1);
      if (level == 1 && type == 1) *l1d_kb = bytes / 1024, found = true;
      if (level == 2 && type == 3) *l2_kb = bytes / 1024, found = true;
    }
    if (found) return true;
  }
  return false;
}
#endif

// cpu0's cache `index` directory's file `name`, trimmed; empty when it cannot be read.
std::string CacheFile(int index, const char* name) {
  std::ifstream in(absl::StrCat("/sys/devices/system/cpu/cpu0/cache/index", index, "/", name));
  std::string value;
  std::getline(in, value);
  return std::string(absl::StripAsciiWhitespace(value));
}

// L1d and L2 sizes from sysfs ("32K"); false when it lists neither.
bool SysfsCaches(int64_t* l1d_kb, int64_t* l2_kb) {
  bool found = false;
  for (int index = 0; index < 16; ++index) {
    const std::string level = CacheFile(index, "level"), type = CacheFile(index, "type");
    std::string size = CacheFile(index, "size");
    if (level.empty()) break;
    int64_t scale = 1;
    if (!size.empty() && (size.back() == 'K' || size.back() == 'M')) {
      scale = size.back() == 'M' ? 1024 : 1;
      size.pop_back();
    }
    int64_t kb;
    if (!absl::SimpleAtoi(size, &kb) || kb <= 0) continue;
    if (level == "1" && type == "Data") *l1d_kb = kb * scale, found = true;
    if (level == "2" && type == "Unified") *l2_kb = kb * scale, found = true;
  }
  return found;
}

HostCpuInfo DetectHostCpu() {
  HostCpuInfo info;
  info.name = HostCpuName();
  info.cores = HostCpuCores();
#if defined(__x86_64__)
  info.isa = DetectIsa();
  auto has = [&](const char* flag) {
    return std::find(info.isa.begin(), info.isa.end(), flag) != info.isa.end();
  };
  info.vector_bits = has("avx512f") ? 512 : has("avx2") ? 256 : 128;
#endif
  info.cache_source = "unknown";
  if (SysfsCaches(&info.l1d_kb, &info.l2_kb)) {
    info.cache_source = "sysfs";
#if defined(__x86_64__)
  } else if (CpuidCaches(&info.l1d_kb, &info.l2_kb)) {
    info.cache_source = "cpuid";
#endif
  }
  return info;
}

#if defined(__x86_64__)
// A loop of `n` rounds of BODY: independent FMA chains of width R ("xmm", "ymm", "zmm"), chain
// i accumulating in register i, the operands in registers 12 and 13, all zero (no denormal or
// NaN assists). Inline assembly, not intrinsics: the compiler must neither spill, reorder nor
// drop the chains, and needs no target flags for it (the assembler takes every extension).
// Not formatted: clang-format reflows these pastes differently on each pass.
// clang-format off
#define TESSERA_FMA(R, i) "vfmadd231ps %%" R "12, %%" R "13, %%" R #i "\n\t"
#define TESSERA_FMA4(R) TESSERA_FMA(R, 0) TESSERA_FMA(R, 1) TESSERA_FMA(R, 2) TESSERA_FMA(R, 3)
#define TESSERA_FMA12(R) TESSERA_FMA4(R) TESSERA_FMA(R, 4) TESSERA_FMA(R, 5) TESSERA_FMA(R, 6) \
    TESSERA_FMA(R, 7) TESSERA_FMA(R, 8) TESSERA_FMA(R, 9) TESSERA_FMA(R, 10) TESSERA_FMA(R, 11)
// clang-format on
#define TESSERA_FMA_LOOP(BODY, n)                                                             \
  __asm__ volatile(                                                                           \
      "vxorps %%xmm0, %%xmm0, %%xmm0\n\tvxorps %%xmm1, %%xmm1, %%xmm1\n\t"                    \
      "vxorps %%xmm2, %%xmm2, %%xmm2\n\tvxorps %%xmm3, %%xmm3, %%xmm3\n\t"                    \
      "vxorps %%xmm4, %%xmm4, %%xmm4\n\tvxorps %%xmm5, %%xmm5, %%xmm5\n\t"                    \
      "vxorps %%xmm6, %%xmm6, %%xmm6\n\tvxorps %%xmm7, %%xmm7, %%xmm7\n\t"                    \
      "vxorps %%xmm8, %%xmm8, %%xmm8\n\tvxorps %%xmm9, %%xmm9, %%xmm9\n\t"                    \
      "vxorps %%xmm10, %%xmm10, %%xmm10\n\tvxorps %%xmm11, %%xmm11, %%xmm11\n\t"              \
      "vxorps %%xmm12, %%xmm12, %%xmm12\n\tvxorps %%xmm13, %%xmm13, %%xmm13\n\t"              \
      "1:\n\t" BODY "dec %0\n\tjnz 1b\n\tvzeroupper"                                          \
      : "+r"(n)                                                                               \
      :                                                                                       \
      : "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", \
        "xmm10", "xmm11", "xmm12", "xmm13")

// The six loops: 12 chains (the peak) and 4 (latency-bound) at each width.
void FmaLoopZmm12(int64_t n) { TESSERA_FMA_LOOP(TESSERA_FMA12("zmm"), n); }
void FmaLoopZmm4(int64_t n) { TESSERA_FMA_LOOP(TESSERA_FMA4("zmm"), n); }
void FmaLoopYmm12(int64_t n) { TESSERA_FMA_LOOP(TESSERA_FMA12("ymm"), n); }
void FmaLoopYmm4(int64_t n) { TESSERA_FMA_LOOP(TESSERA_FMA4("ymm"), n); }
void FmaLoopXmm12(int64_t n) { TESSERA_FMA_LOOP(TESSERA_FMA12("xmm"), n); }
void FmaLoopXmm4(int64_t n) { TESSERA_FMA_LOOP(TESSERA_FMA4("xmm"), n); }

// Seconds that `rounds` rounds of 12 (or 4) chains of `vector_bits`-wide FMAs took.
double TimeFmaChains(int vector_bits, bool twelve, int64_t rounds) {
  void (*loop)(int64_t) = vector_bits == 512   ? (twelve ? FmaLoopZmm12 : FmaLoopZmm4)
                          : vector_bits == 256 ? (twelve ? FmaLoopYmm12 : FmaLoopYmm4)
                                               : (twelve ? FmaLoopXmm12 : FmaLoopXmm4);
  const auto start = std::chrono::steady_clock::now();
  loop(rounds);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
#undef TESSERA_FMA_LOOP
#undef TESSERA_FMA12
#undef TESSERA_FMA4
#undef TESSERA_FMA
#endif

// The ratio of the 12-chain rate to the 4-chain rate from which a core has two FMA pipes: the
// split between 1.25 (one pipe, latency 5) and 2 (two pipes, latency 4). A ratio kept for later
// processes must be clearly on one side (kClearTwoPipes, kClearOnePipe).
constexpr double kTwoPipes = 1.6;
constexpr double kClearTwoPipes = 1.8;
constexpr double kClearOnePipe = 1.4;

}  // namespace

FmaProbe MeasureFmaProbe(int vector_bits) {
  FmaProbe probe;
  probe.vector_bits = vector_bits;
#if defined(__x86_64__)
  const std::vector<std::string>& isa = HostCpu().isa;
  auto has = [&](const char* flag) { return std::find(isa.begin(), isa.end(), flag) != isa.end(); };
  if (!has("fma") || (vector_bits == 512 && !has("avx512f")) ||
      (vector_bits != 128 && vector_bits != 256 && vector_bits != 512)) {
    return probe;
  }
  // 100k rounds: 0.1-0.6 ms a run at 2-4 GHz. The first run wakes the vector unit (Intel
  // powers the upper lanes up on first use, and may lower the clock for wide FMAs) and is not
  // counted; the best of 7 alternating pairs drops runs that another process interrupted.
  constexpr int64_t kRounds = 100000;
  TimeFmaChains(vector_bits, /*twelve=*/true, 2 * kRounds);
  double peak = std::numeric_limits<double>::infinity(), latency = peak;
  for (int i = 0; i < 7; ++i) {
    peak = std::min(peak, TimeFmaChains(vector_bits, /*twelve=*/true, kRounds));
    latency = std::min(latency, TimeFmaChains(vector_bits, /*twelve=*/false, kRounds));
  }
  const double flops_per_fma = 2.0 * vector_bits / 32;
  probe.measured = true;
  probe.peak_gflops = 12 * kRounds * flops_per_fma / peak * 1e-9;
  probe.latency_gflops = 4 * kRounds * flops_per_fma / latency * 1e-9;
  probe.fma_per_cycle = probe.peak_gflops >= kTwoPipes * probe.latency_gflops ? 2 : 1;
#endif
  return probe;
}

const HostCpuInfo& HostCpu() {
  static const HostCpuInfo* const info = new HostCpuInfo(DetectHostCpu());
  return *info;
}

int HostVectorBits() { return HostCpu().vector_bits; }

std::string FmaProbeCachePath(int vector_bits) {
  std::string dir;
  if (const char* own = std::getenv("TESSERA_CACHE_DIR"); own != nullptr && own[0] != '\0') {
    dir = own;
  } else if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && xdg[0] != '\0') {
    dir = absl::StrCat(xdg, "/tessera");
  } else if (const char* home = std::getenv("HOME"); home != nullptr && home[0] != '\0') {
    dir = absl::StrCat(home, "/.cache/tessera");
  } else {
    return "";
  }
  return absl::StrCat(dir, "/fma-probe-", vector_bits, ".txt");
}

std::string FmaProbeCacheLine(const std::string& identity, const FmaProbe& probe) {
  return absl::StrFormat("%s\t%d\t%d\t%.3f\t%.3f\n", identity, probe.vector_bits,
                         probe.fma_per_cycle, probe.peak_gflops, probe.latency_gflops);
}

std::optional<FmaProbe> ParseFmaProbeCacheLine(const std::string& line, const std::string& identity,
                                               int vector_bits) {
  std::vector<std::string> fields = absl::StrSplit(absl::StripTrailingAsciiWhitespace(line), '\t');
  FmaProbe probe;
  if (fields.size() != 5 || fields[0] != identity ||
      !absl::SimpleAtoi(fields[1], &probe.vector_bits) || probe.vector_bits != vector_bits ||
      !absl::SimpleAtoi(fields[2], &probe.fma_per_cycle) ||
      (probe.fma_per_cycle != 1 && probe.fma_per_cycle != 2) ||
      !absl::SimpleAtod(fields[3], &probe.peak_gflops) ||
      !absl::SimpleAtod(fields[4], &probe.latency_gflops) || !(probe.peak_gflops > 0) ||
      !(probe.latency_gflops > 0)) {
    return std::nullopt;
  }
  probe.measured = true;
  return probe;
}

namespace {

// What the cached probe must have been measured on: the CPU's name and ISA.
std::string CpuIdentity() {
  return absl::StrCat(HostCpu().name, " [", absl::StrJoin(HostCpu().isa, "+"), "]");
}

std::optional<FmaProbe> ReadCachedProbe(const std::string& path, int vector_bits) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  std::optional<FmaProbe> probe = ParseFmaProbeCacheLine(line, CpuIdentity(), vector_bits);
  if (probe.has_value()) probe->cached_in = path;
  return probe;
}

// Writes the probe to `path` through a temporary file and a rename, so that a reader never sees
// half a line; a failure (a read-only home) only means the next process measures again.
void WriteCachedProbe(const std::string& path, const FmaProbe& probe) {
  std::error_code error;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), error);
  const std::string temporary = absl::StrCat(path, ".", getpid(), ".tmp");
  {
    std::ofstream out(temporary);
    out << FmaProbeCacheLine(CpuIdentity(), probe);
    if (!out) return;
  }
  std::filesystem::rename(temporary, path, error);
  if (error) std::filesystem::remove(temporary, error);
}

FmaProbe CachedOrMeasured(int vector_bits) {
  const std::string path = FmaProbeCachePath(vector_bits);
  if (!path.empty()) {
    if (std::optional<FmaProbe> cached = ReadCachedProbe(path, vector_bits)) return *cached;
  }
  FmaProbe probe = MeasureFmaProbe(vector_bits);
  const double ratio = probe.latency_gflops > 0 ? probe.peak_gflops / probe.latency_gflops : 0;
  if (probe.measured && !path.empty() && (ratio >= kClearTwoPipes || ratio <= kClearOnePipe)) {
    WriteCachedProbe(path, probe);
  }
  return probe;
}

}  // namespace

FmaProbe HostFmaProbe(int vector_bits) {
  // Measured (or read) at most once per width; the lock is held while measuring, so that two
  // threads asking at once neither measure twice nor time their runs against each other.
  static std::mutex* const mu = new std::mutex;
  static std::map<int, FmaProbe>* const probes = new std::map<int, FmaProbe>;
  std::lock_guard<std::mutex> lock(*mu);
  auto it = probes->find(vector_bits);
  if (it == probes->end()) it = probes->emplace(vector_bits, CachedOrMeasured(vector_bits)).first;
  return it->second;
}

std::set<std::string> GivenTargetKeys(const std::string& text) {
  std::set<std::string> keys;
  std::vector<std::string> words = absl::StrSplit(text, ' ', absl::SkipWhitespace());
  for (size_t i = 1; i < words.size(); ++i) {
    std::string key = words[i].substr(0, words[i].find('='));
    while (!key.empty() && key[0] == '-') key.erase(0, 1);
    keys.insert(key);
  }
  return keys;
}

bool IsCompleteTarget(const std::string& text) {
  absl::StatusOr<Target> parsed = Target::Parse(text);
  if (!parsed.ok()) return false;
  const std::set<std::string> given = GivenTargetKeys(text);
  for (const auto& [key, value] : parsed->attrs()) {
    if (given.count(key) == 0) return false;
  }
  return true;
}

bool TargetDescribes(const std::string& wanted, const std::string& target) {
  absl::StatusOr<Target> w = Target::Parse(wanted);
  absl::StatusOr<Target> t = Target::Parse(target);
  if (!w.ok() || !t.ok() || w->kind() != t->kind()) return false;
  for (const std::string& key : GivenTargetKeys(wanted)) {
    if (!t->Has(key) || w->attrs().at(key) != t->attrs().at(key)) return false;
  }
  return true;
}

std::optional<std::string> FirstTargetDescribed(const std::string& wanted,
                                                const std::vector<std::string>& targets) {
  for (const std::string& t : targets) {
    if (TargetDescribes(wanted, t)) return t;
  }
  return std::nullopt;
}

absl::StatusOr<std::optional<std::string>> CompleteTarget(const std::string& text,
                                                          const KnownTargets& known) {
  absl::StatusOr<Target> parsed = Target::Parse(text);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("target: ", parsed.status().message()));
  }
  if (IsCompleteTarget(text)) return parsed->ToString();
  TESSERA_ASSIGN_OR_RETURN(std::vector<std::string> targets, known());
  return FirstTargetDescribed(text, targets);
}

absl::StatusOr<Target> ResolveTarget(const std::string& text) {
  TESSERA_ASSIGN_OR_RETURN(Target target, Target::Parse(text));
  if (!target.is_cpu()) return target;
  // Parse filled defaults for the keys the text left out; replace those with the host's.
  const std::set<std::string> given = GivenTargetKeys(text);
  const HostCpuInfo& host = HostCpu();
  std::vector<std::pair<std::string, std::string>> found = {
      {"cores", std::to_string(host.cores)},
      {"vector_bits", std::to_string(host.vector_bits)},
      {"isa", host.isa.empty() ? "none" : absl::StrJoin(host.isa, "+")}};
  if (host.l1d_kb > 0) found.emplace_back("l1d_kb", std::to_string(host.l1d_kb));
  if (host.l2_kb > 0) found.emplace_back("l2_kb", std::to_string(host.l2_kb));
  for (const auto& [key, value] : found) {
    if (given.count(key) == 0) {
      TESSERA_ASSIGN_OR_RETURN(target, target.With(key, value));
    }
  }
  // At the target's width, given or found: FMA pipes differ by width (Zen 4 issues one 512-bit
  // FMA a cycle but two 256-bit ones).
  if (given.count("fma_per_cycle") == 0) {
    if (FmaProbe probe = HostFmaProbe(static_cast<int>(target.vector_bits())); probe.measured) {
      TESSERA_ASSIGN_OR_RETURN(target,
                               target.With("fma_per_cycle", std::to_string(probe.fma_per_cycle)));
    }
  }
  return target;
}

}  // namespace tessera
