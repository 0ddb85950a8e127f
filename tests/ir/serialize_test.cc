// Tests of the IR JSON format: round trips (structurally equal, same hash, same text),
// sharing and exact floats, the version key, and a reader that turns every malformed input --
// a fixed corpus plus seeded random mutations of valid documents -- into kInvalidArgument.
#include "ir/serialize.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "base/random.h"
#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "ir/serialize_json.h"
#include "ir/structural_equal.h"
#include "ir/structural_hash.h"
#include "ir/verify.h"
#include "tests/ir/ir_test_funcs.h"

namespace tessera {
namespace {

using json = nlohmann::json;

void ExpectRoundTrip(const PrimFunc& f) {
  std::string text = SaveJson(f);
  absl::StatusOr<PrimFunc> back = LoadPrimFuncJson(text);
  ASSERT_TRUE(back.ok()) << f.name() << ": " << back.status();
  EXPECT_EQ(StructuralDiff(f, *back), "") << f.name();
  EXPECT_EQ(StructuralHash(f), StructuralHash(*back)) << f.name();
  EXPECT_EQ(back->name(), f.name());
  EXPECT_EQ(SaveJson(*back), text) << f.name();  // a fixed point, names included
}

TEST(SerializeTest, HandBuiltFunctionsRoundTrip) {
  for (const PrimFunc& f : testing::HandBuiltFunctions()) ExpectRoundTrip(f);
}

TEST(SerializeTest, EveryWorkloadRoundTripsInEveryDtype) {
  ASSERT_FALSE(ListWorkloads().empty());
  for (const WorkloadInfo& info : ListWorkloads()) {
    for (const std::string& dtype : info.dtypes) {
      absl::StatusOr<PrimFunc> f = MakeWorkload(info.name, {}, dtype);
      ASSERT_TRUE(f.ok()) << info.name << " " << dtype << ": " << f.status();
      ExpectRoundTrip(*f);
    }
  }
}

TEST(SerializeTest, ExternCallsRoundTrip) {
  PrimFunc f = testing::ExternCall();
  ExpectRoundTrip(f);
  absl::StatusOr<PrimFunc> back = LoadPrimFuncJson(SaveJson(f));
  ASSERT_TRUE(back.ok()) << back.status();
  const auto* call = back->root_block()->body.as<EvaluateNode>()->value.as<CallNode>();
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(call->op, CallOp::kExtern);
  EXPECT_EQ(call->name, "__dp4a");
  EXPECT_EQ(call->dtype, DataType::Int32());
}

TEST(SerializeTest, PreservesSharingOfVariablesAndBuffers) {
  absl::StatusOr<PrimFunc> f = LoadPrimFuncJson(SaveJson(testing::Matmul()));
  ASSERT_TRUE(f.ok()) << f.status();
  // root -> for i -> for j -> for k -> realize C
  const auto* for_i = f->root_block()->body.as<ForNode>();
  ASSERT_NE(for_i, nullptr);
  const auto* for_k = for_i->body.as<ForNode>()->body.as<ForNode>();
  ASSERT_NE(for_k, nullptr);
  const auto* realize = for_k->body.as<BlockRealizeNode>();
  ASSERT_NE(realize, nullptr);
  EXPECT_TRUE(realize->iter_values[0].same_as(for_i->loop_var));
  EXPECT_TRUE(realize->iter_values[2].same_as(for_k->loop_var));
  const auto* store = realize->block->body.as<BufferStoreNode>();
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(store->buffer.same_as(f->params()[2]));
  EXPECT_TRUE(store->indices[0].same_as(realize->block->iter_vars[0].var));
  EXPECT_TRUE(realize->block->writes[0].buffer.same_as(f->params()[2]));
}

TEST(SerializeTest, KeepsFloatsExactIncludingInfNanAndNegativeZero) {
  const double values[] = {0.1,
                           -0.0,
                           1e-310,  // subnormal
                           3.141592653589793,
                           std::numeric_limits<double>::max(),
                           std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity(),
                           std::numeric_limits<double>::quiet_NaN()};
  for (double v : values) {
    Buffer a = Buffer::Make("A", DataType::Float64(), {1});
    Stmt body = testing::RootRealize(BufferStore(a, FloatImm(DataType::Float64(), v), {0}));
    PrimFunc f = PrimFunc::Make("f", {a}, body, {{"scale", v}});
    absl::StatusOr<PrimFunc> back = LoadPrimFuncJson(SaveJson(f));
    ASSERT_TRUE(back.ok()) << v << ": " << back.status();
    double stored = back->root_block()->body.as<BufferStoreNode>()->value.as<FloatImmNode>()->value;
    double attr = std::get<double>(back->attrs().at("scale"));
    for (double got : {stored, attr}) {
      if (std::isnan(v)) {
        EXPECT_TRUE(std::isnan(got));
      } else {
        EXPECT_EQ(std::memcmp(&got, &v, sizeof(v)), 0) << v << " came back as " << got;
      }
    }
  }
}

TEST(SerializeTest, WritesVersionedDocumentWithTables) {
  json doc = json::parse(SaveJson(testing::Matmul()));
  EXPECT_EQ(doc["tessera_ir"], kIrJsonVersion);
  ASSERT_EQ(doc["functions"].size(), 1u);
  const json& f = doc["functions"][0];
  EXPECT_EQ(f["name"], "matmul");
  EXPECT_EQ(f["buffers"].size(), 3u);
  EXPECT_EQ(f["vars"].size(), 6u);  // i, j, k, vi, vj, vk: each defined once
  EXPECT_EQ(f["params"], json::array({0, 1, 2}));
  EXPECT_EQ(ToJson(testing::Matmul()), doc);
}

TEST(SerializeTest, ModuleRoundTripKeepsKeys) {
  IRModule m;
  m.Update(testing::Matmul());
  m.Update(testing::Tiled());
  std::map<std::string, PrimFunc> functions = m.functions();
  functions["alias"] = testing::Elementwise();  // key differs from the function's name
  m = IRModule(functions);
  absl::StatusOr<IRModule> back = LoadModuleJson(SaveJson(m));
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), 3u);
  EXPECT_TRUE(StructuralEqual(m, *back));
  EXPECT_EQ(back->functions().at("alias").name(), "elementwise");
  EXPECT_EQ(StructuralHash(m), StructuralHash(*back));
  // A module document with two functions is not a single function.
  absl::StatusOr<PrimFunc> one = LoadPrimFuncJson(SaveJson(m));
  EXPECT_EQ(one.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(one.status().message().find("expected exactly one function, got 3"), std::string::npos)
      << one.status();
}

// Applies `edit` to the JSON of Matmul and expects LoadPrimFuncJson to fail with `expected`.
struct Corruption {
  const char* name;
  void (*edit)(json* doc);
  const char* expected;
};

json& Body(json* doc) { return (*doc)["functions"][0]["body"]; }
// The realize of block C: root block -> for i -> for j -> for k -> realize.
json& RealizeC(json* doc) { return Body(doc)["block"]["body"]["body"]["body"]["body"]; }

const Corruption kCorruptions[] = {
    {"not an object", [](json* d) { *d = json::array(); }, "document: expected object, got array"},
    {"no version", [](json* d) { d->erase("tessera_ir"); }, "document: missing key \"tessera_ir\""},
    {"version as string", [](json* d) { (*d)["tessera_ir"] = "1"; },
     "tessera_ir: expected integer, got string"},
    {"future version", [](json* d) { (*d)["tessera_ir"] = 99; },
     "tessera_ir: unsupported version 99"},
    {"functions not array", [](json* d) { (*d)["functions"] = json::object(); },
     "functions: expected array, got object"},
    {"no functions", [](json* d) { (*d)["functions"] = json::array(); },
     "expected exactly one function, got 0"},
    {"missing body", [](json* d) { (*d)["functions"][0].erase("body"); },
     "functions[0]: missing key \"body\""},
    {"bad var entry", [](json* d) { (*d)["functions"][0]["vars"][1] = json::array({"j"}); },
     "functions[0].vars[1]: expected 2 elements, got 1"},
    {"unknown dtype", [](json* d) { (*d)["functions"][0]["vars"][0][1] = "int7"; },
     "functions[0].vars[0][1]: unknown dtype 'int7'"},
    {"param index out of range", [](json* d) { (*d)["functions"][0]["params"][0] = 3; },
     "functions[0].params[0]: buffer index 3 out of range"},
    {"negative var index",
     [](json* d) {
       RealizeC(d)["iter_values"][0] = json::array({"v", -1});
     },
     "functions[0].body.block.body.body.body.body.iter_values[0][1]: variable index -1 out of "
     "range"},
    {"too few store indices", [](json* d) { RealizeC(d)["block"]["body"]["indices"].erase(1); },
     "functions[0].body.block.body.body.body.body.block.body.indices: buffer C has 2 dimensions, "
     "got 1 indices"},
    {"iter_values count", [](json* d) { RealizeC(d)["iter_values"].erase(2); },
     "iter_values: 2 iter_values for 3 iteration variables of block C"},
    {"region rank", [](json* d) { RealizeC(d)["block"]["reads"][0][1].erase(0); },
     "block.reads[0][1]: buffer A has 2 dimensions, got 1 indices"},
    {"expression is an object",
     [](json* d) { RealizeC(d)["block"]["body"]["value"] = json::object(); },
     "block.body.value: expected integer or array expression, got object"},
    {"unknown expression op", [](json* d) { RealizeC(d)["block"]["body"]["value"][0] = "%"; },
     "block.body.value[0]: unknown expression operator \"%\""},
    {"operand types differ", [](json* d) { RealizeC(d)["block"]["body"]["value"][1] = 1; },
     "operands of + differ in type: int64 vs float32"},
    {"store of wrong type", [](json* d) { RealizeC(d)["block"]["init"]["value"] = 0; },
     "store of int64 into float32 buffer C"},
    {"unknown statement op", [](json* d) { Body(d)["block"]["body"]["op"] = "while"; },
     "functions[0].body.block.body.op: unknown statement op \"while\""},
    {"unknown loop kind", [](json* d) { Body(d)["block"]["body"]["kind"] = "spinning"; },
     "unknown loop kind \"spinning\""},
    {"thread tag without binding",
     [](json* d) { Body(d)["block"]["body"]["thread_tag"] = "blockIdx.x"; },
     "thread_tag must be set exactly for thread_binding loops"},
    {"iteration kind", [](json* d) { RealizeC(d)["block"]["iter_vars"][2][3] = "X"; },
     "iter_vars[2][3]: iteration kind must be \"S\" or \"R\", got \"X\""},
    {"integer too large",
     [](json* d) { (*d)["functions"][0]["buffers"][0]["shape"][0] = 1ull << 63; },
     "buffers[0].shape[0]: integer 9223372036854775808 out of int64 range"},
    {"annotation type",
     [](json* d) {
       (*d)["functions"][0]["attrs"]["x"] = json::array({"map", 1});
     },
     "attrs.x[0]: unknown annotation type \"map\""},
    {"float as string", [](json* d) { RealizeC(d)["block"]["init"]["value"][2] = "zero"; },
     "init.value[2]: expected number, \"inf\", \"-inf\" or \"nan\", got \"zero\""},
    {"call arity",
     [](json* d) {
       RealizeC(d)["block"]["body"]["value"] = json::array({"call", "exp", json::array()});
     },
     "exp takes 1 arguments, got 0"},
};

TEST(SerializeTest, RejectsMalformedDocumentsNamingThePath) {
  const json valid = ToJson(testing::Matmul());
  for (const Corruption& c : kCorruptions) {
    json doc = valid;
    c.edit(&doc);
    absl::StatusOr<PrimFunc> f = LoadPrimFuncJson(doc.dump());
    ASSERT_FALSE(f.ok()) << c.name;
    EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_NE(f.status().message().find(c.expected), std::string::npos)
        << c.name << ": " << f.status().message();
  }
}

TEST(SerializeTest, RejectsTextThatIsNotJson) {
  for (const char* text : {"", "{", "{\"tessera_ir\": 1,}", "nul", "[1, 2", "\"\\u12\""}) {
    absl::StatusOr<PrimFunc> f = LoadPrimFuncJson(text);
    EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_NE(f.status().message().find("parse error"), std::string::npos) << f.status();
    EXPECT_EQ(LoadModuleJson(text).status().code(), absl::StatusCode::kInvalidArgument);
  }
}

TEST(SerializeTest, RejectsDeepNesting) {
  json doc = ToJson(testing::Matmul());
  RealizeC(&doc)["predicate"] = "DEEP";
  std::string deep;
  for (int i = 0; i < 5000; ++i) deep += "[\"+\",";
  deep += "1";
  for (int i = 0; i < 5000; ++i) deep += ",1]";
  std::string text = doc.dump();
  text.replace(text.find("\"DEEP\""), 6, deep);
  absl::StatusOr<PrimFunc> f = LoadPrimFuncJson(text);
  EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(f.status().message().find("nesting too deep"), std::string::npos) << f.status();
}

// ---- Random mutations ------------------------------------------------------------------

// Every value in `j`, parents before children.
void CollectNodes(json* j, std::vector<json*>* out) {
  out->push_back(j);
  if (j->is_structured()) {
    for (auto& child : *j) CollectNodes(&child, out);
  }
}

json RandomLeaf(Random* rng) {
  switch (rng->UniformInt(0, 10)) {
    case 0:
      return nullptr;
    case 1:
      return rng->UniformInt(0, 2) == 1;
    case 2:
      return rng->UniformInt(-3, 12);
    case 3:
      return static_cast<int64_t>(rng->Next()) * -1000003;
    case 4:
      return 0.5;
    case 5: {
      static const char* kTokens[] = {"v",
                                      "i",
                                      "f",
                                      "load",
                                      "+",
                                      "call",
                                      "exp",
                                      "for",
                                      "seq",
                                      "realize",
                                      "S",
                                      "R",
                                      "int",
                                      "float32",
                                      "nan",
                                      "blockIdx.x",
                                      "thread_binding",
                                      ""};
      return kTokens[rng->UniformInt(0, sizeof(kTokens) / sizeof(kTokens[0]))];
    }
    case 6:
      return json::array();
    case 7:
      return json::object();
    case 8:
      return json::array({"v", rng->UniformInt(-1, 8)});
    default:
      return json::array({"load", rng->UniformInt(0, 4), json::array({0})});
  }
}

void Mutate(json* doc, Random* rng) {
  std::vector<json*> nodes;
  CollectNodes(doc, &nodes);
  json* target = nodes[rng->UniformInt(0, static_cast<int64_t>(nodes.size()))];
  int64_t action = rng->UniformInt(0, 5);
  if (action == 0 || !target->is_structured() || target->empty()) {
    *target = RandomLeaf(rng);
  } else if (action == 1) {  // remove a member or element
    int64_t i = rng->UniformInt(0, static_cast<int64_t>(target->size()));
    if (target->is_object()) {
      std::string key = std::next(target->begin(), i).key();
      target->erase(key);
    } else {
      target->erase(static_cast<size_t>(i));
    }
  } else if (action == 2 && target->is_array()) {  // duplicate an element
    json copy = (*target)[rng->UniformInt(0, static_cast<int64_t>(target->size()))];
    target->push_back(std::move(copy));
  } else if (action == 3) {  // replace with another node of the document
    json copy = *nodes[rng->UniformInt(0, static_cast<int64_t>(nodes.size()))];
    *target = std::move(copy);
  } else {
    auto it = std::next(target->begin(), rng->UniformInt(0, static_cast<int64_t>(target->size())));
    *it = RandomLeaf(rng);
  }
}

// Whatever the reader accepts must be usable: printed, hashed, verified.
void ExerciseResult(const absl::StatusOr<PrimFunc>& f) {
  if (!f.ok()) {
    EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(f.status().message().rfind("ir json: ", 0), 0u) << f.status();
    return;
  }
  std::string again = SaveJson(*f);
  absl::StatusOr<PrimFunc> back = LoadPrimFuncJson(again);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(StructuralHash(*f), StructuralHash(*back));
  EXPECT_TRUE(StructuralEqual(*f, *back));
  (void)VerifyWellFormed(*f);
}

TEST(SerializeTest, RandomTreeMutationsNeverCrash) {
  Random rng(/*seed=*/20240607);
  std::vector<json> valid;
  for (const PrimFunc& f : testing::HandBuiltFunctions()) valid.push_back(ToJson(f));
  int accepted = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    json doc = valid[iter % valid.size()];
    int64_t edits = rng.UniformInt(1, 4);
    for (int64_t e = 0; e < edits; ++e) Mutate(&doc, &rng);
    absl::StatusOr<PrimFunc> f = PrimFuncFromJson(doc);
    accepted += f.ok();
    ExerciseResult(f);
  }
  // Most mutations break the document; some (a changed constant) leave it valid.
  EXPECT_GT(accepted, 0);
  EXPECT_LT(accepted, 3000);
}

TEST(SerializeTest, RandomTextMutationsNeverCrash) {
  Random rng(/*seed=*/7);
  std::vector<std::string> valid;
  for (const PrimFunc& f : testing::HandBuiltFunctions()) valid.push_back(SaveJson(f));
  const char kAlphabet[] = "{}[]\",:0123456789-.eE abcdefnrstuvx\\";
  for (int iter = 0; iter < 3000; ++iter) {
    std::string text = valid[iter % valid.size()];
    int64_t edits = rng.UniformInt(1, 4);
    for (int64_t e = 0; e < edits; ++e) {
      size_t pos = static_cast<size_t>(rng.UniformInt(0, static_cast<int64_t>(text.size())));
      char c = kAlphabet[rng.UniformInt(0, sizeof(kAlphabet) - 1)];
      switch (rng.UniformInt(0, 3)) {
        case 0:
          text[pos] = c;
          break;
        case 1:
          text.erase(pos, 1);
          break;
        default:
          text.insert(pos, 1, c);
          break;
      }
    }
    ExerciseResult(LoadPrimFuncJson(text));
  }
}

}  // namespace
}  // namespace tessera
