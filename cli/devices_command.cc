// `tessera devices`: the CUDA devices of this machine and the target string for each. Without
// a driver or a device it says why in one line and still exits 0 (having none is an answer).
#include <cstdio>
#include <nlohmann/json.hpp>

#include "absl/strings/str_format.h"
#include "cli/commands.h"
#include "worker/devices.h"

namespace tessera {
namespace cli {
namespace {

std::string Bytes(int64_t bytes) {
  if (bytes >= (int64_t{1} << 30)) return absl::StrFormat("%.1f GiB", bytes / 1073741824.0);
  if (bytes >= (int64_t{1} << 20)) return absl::StrFormat("%.0f MiB", bytes / 1048576.0);
  return absl::StrFormat("%.0f KiB", bytes / 1024.0);
}

nlohmann::json DeviceJson(const CudaDeviceInfo& d) {
  return {{"ordinal", d.ordinal},
          {"name", d.name},
          {"arch", d.arch()},
          {"compute_capability", absl::StrFormat("%d.%d", d.compute_major, d.compute_minor)},
          {"sm_count", d.sm_count},
          {"warp_size", d.warp_size},
          {"max_threads_per_block", d.max_threads_per_block},
          {"max_shared_memory_per_block", d.max_shared_memory_per_block},
          {"max_shared_memory_per_block_optin", d.max_shared_memory_per_block_optin},
          {"max_registers_per_block", d.max_registers_per_block},
          {"l2_cache_bytes", d.l2_cache_bytes},
          {"total_memory_bytes", d.total_memory_bytes},
          {"driver_version", d.driver_version},
          {"target", CudaTargetOf(d).ToString()}};
}

int RunDevices(bool json) {
  absl::StatusOr<std::vector<CudaDeviceInfo>> devices = ListCudaDevices();
  if (!devices.ok()) {
    std::string reason(devices.status().message());
    if (reason.rfind("no CUDA device", 0) != 0) reason = "no CUDA device: " + reason;
    if (json) {
      std::printf("%s\n", nlohmann::json({{"devices", nlohmann::json::array()}, {"error", reason}})
                              .dump(2)
                              .c_str());
    } else {
      std::printf("%s\n", reason.c_str());
    }
    return 0;
  }
  if (json) {
    nlohmann::json out = {{"devices", nlohmann::json::array()}};
    for (const CudaDeviceInfo& d : *devices) out["devices"].push_back(DeviceJson(d));
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  for (const CudaDeviceInfo& d : *devices) {
    std::printf(
        "%d: %s (%s), %d SMs, %s, L2 %s, %d threads/block, shared memory/block %s (opt-in %s)\n"
        "   target: %s\n",
        d.ordinal, d.name.c_str(), d.arch().c_str(), d.sm_count,
        Bytes(d.total_memory_bytes).c_str(), Bytes(d.l2_cache_bytes).c_str(),
        d.max_threads_per_block, Bytes(d.max_shared_memory_per_block).c_str(),
        Bytes(d.max_shared_memory_per_block_optin).c_str(), CudaTargetOf(d).ToString().c_str());
  }
  return 0;
}

}  // namespace

Command RegisterDevicesCommand(CLI::App* root) {
  CLI::App* app = root->add_subcommand("devices", "List the CUDA devices and their targets");
  auto json = std::make_shared<bool>(false);
  app->add_flag("--json", *json, "Print machine-readable JSON");
  return {app, [json]() { return RunDevices(*json); }};
}

}  // namespace cli
}  // namespace tessera
