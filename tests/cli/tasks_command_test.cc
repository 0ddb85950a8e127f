// `tessera tasks` (cli/tasks_command.cc) run as a user runs it: the tasks of a small model of
// tests/frontend/data with their weights, operators and work, and one error line for a file
// that is not a model.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/cli/cli_testing.h"

namespace tessera {
namespace {

using cli_testing::Output;
using cli_testing::RunTessera;

std::string Data(const std::string& name) {
  return std::string(TESSERA_SOURCE_DIR) + "/tests/frontend/data/" + name;
}

TEST(TasksCommandTest, JsonListsTasksWithWeights) {
  Output out = RunTessera("tasks " + Data("cnn.onnx") + " --json");
  ASSERT_EQ(out.exit_code, 0) << out.stdout_text;
  nlohmann::json j = nlohmann::json::parse(out.stdout_text);
  // The input's transpose to channels-last (frontend/channels_last.h), then the model's own.
  EXPECT_EQ(j["functions"], 7);
  ASSERT_EQ(j["tasks"].size(), 6u);
  std::vector<int> weights;
  for (const auto& t : j["tasks"]) weights.push_back(t["weight"].get<int>());
  EXPECT_EQ(weights, (std::vector<int>{1, 1, 1, 2, 1, 1}));
  EXPECT_EQ(j["tasks"][0]["ops"], (nlohmann::json{"Transpose"}));
  EXPECT_EQ(j["tasks"][3]["ops"], (nlohmann::json{"Conv", "BatchNormalization", "Relu"}));
  EXPECT_GT(j["tasks"][3]["flops"].get<double>(), 0);
}

TEST(TasksCommandTest, NotAModelIsOneErrorLine) {
  Output out = RunTessera("tasks " + Data("make_models.py"));
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_EQ(out.stdout_text.rfind("tessera: error: ", 0), 0u) << out.stdout_text;
  EXPECT_NE(out.stdout_text.find("not an ONNX model"), std::string::npos) << out.stdout_text;
}

}  // namespace
}  // namespace tessera
