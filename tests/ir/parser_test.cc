// Tests of the text parser: print -> parse round trips (text fixpoint and structural
// equality) over hand-built functions and the workload library, hand-written input, a corpus
// of malformed inputs with their located errors, and random mutations that must never crash.
#include "ir/parser.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/random.h"
#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "ir/printer.h"
#include "ir/structural_equal.h"
#include "tests/ir/text_test_functions.h"

namespace tessera {
namespace {

void ExpectRoundTrip(const PrimFunc& f) {
  std::string text = PrintFunc(f);
  absl::StatusOr<PrimFunc> parsed = ParseFunc(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status() << "\n" << text;
  EXPECT_EQ(parsed->name(), f.name());
  EXPECT_EQ(PrintFunc(*parsed), text);
  EXPECT_TRUE(StructuralEqual(f, *parsed)) << StructuralDiff(f, *parsed) << "\n" << text;
}

// True if the message starts with "line L, column C: " and says something after it.
bool HasLocation(const absl::Status& status) {
  std::string message(status.message());
  int line = 0, column = 0, consumed = 0;
  return std::sscanf(message.c_str(), "line %d, column %d: %n", &line, &column, &consumed) == 2 &&
         consumed > 0 && static_cast<size_t>(consumed) < message.size() && line > 0 && column > 0;
}

TEST(ParserTest, RoundTripsHandBuiltFunctions) {
  for (const auto& [name, func] : text_test::HandBuiltFunctions()) {
    SCOPED_TRACE(name);
    ExpectRoundTrip(func);
  }
}

TEST(ParserTest, RoundTripsEveryWorkload) {
  for (const WorkloadInfo& info : ListWorkloads()) {
    for (const std::string& dtype : info.dtypes) {
      SCOPED_TRACE(info.name + " " + dtype);
      absl::StatusOr<PrimFunc> f = MakeWorkload(info.name, {}, dtype);
      ASSERT_TRUE(f.ok()) << f.status();
      ExpectRoundTrip(*f);
    }
  }
}

TEST(ParserTest, RoundTripsModule) {
  IRModule mod;
  for (const auto& [name, func] : text_test::HandBuiltFunctions()) mod.Update(func);
  std::string text = PrintModule(mod);
  absl::StatusOr<IRModule> parsed = ParseModule(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->size(), mod.size());
  EXPECT_EQ(PrintModule(*parsed), text);
  EXPECT_TRUE(StructuralEqual(mod, *parsed));
}

TEST(ParserTest, ReadsHandWrittenMatmul) {
  // Comments, blank lines, a signature over several lines, a bare float converted to the
  // buffer's type, and an implicit int64 variable type.
  const std::string text = R"(# a matmul written by hand
def matmul(
    A: Buffer((64, 64), "float32"),
    B: Buffer((64, 64), "float32"),
    C: Buffer((64, 64), "float32"),   # the output
) -> None:
    func_attr({"global_symbol": "matmul"})

    with block("root"):
        for i in range(64):
            for j in serial(64):
                for k in range(64):
                    with block("C"):
                        vi = axis.spatial(64, i)
                        vj = axis.spatial(64, j)
                        vk = axis.reduce(0:64, k)
                        reads(A[vi, vk], B[vk, vj],)
                        writes(C[vi, vj])
                        with init():
                            C[vi, vj] = 0.0
                        C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
)";
  absl::StatusOr<PrimFunc> parsed = ParseFunc(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(StructuralEqual(*parsed, text_test::Matmul()))
      << StructuralDiff(*parsed, text_test::Matmul());
}

TEST(ParserTest, DocumentationExamplesParse) {
  std::ifstream in(std::string(TESSERA_SOURCE_DIR) + "/docs/ir-text.md");
  std::stringstream doc;
  doc << in.rdbuf();
  const std::string text = doc.str();
  int examples = 0;
  for (size_t at = text.find("```python\n"); at != std::string::npos;
       at = text.find("```python\n", at + 1)) {
    size_t begin = at + 10;
    std::string example = text.substr(begin, text.find("```", begin) - begin);
    absl::StatusOr<PrimFunc> parsed = ParseFunc(example);
    ASSERT_TRUE(parsed.ok()) << parsed.status() << "\n" << example;
    EXPECT_EQ(PrintFunc(*parsed), example);
    ++examples;
  }
  EXPECT_EQ(examples, 2);
}

TEST(ParserTest, SiblingScopesMayReuseNames) {
  const std::string text = R"(@prim_func
def f(A: Buffer((8,), "float32")):
    with block("root"):
        for i in range(8):
            A[i] = -A[i]
        for i in range(8):
            A[i] = A[i] * 2
)";
  absl::StatusOr<PrimFunc> parsed = ParseFunc(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const auto* seq = parsed->root_block()->body.as<SeqStmtNode>();
  ASSERT_NE(seq, nullptr);
  ASSERT_EQ(seq->seq.size(), 2u);
  // Two different loop variables, printed apart.
  EXPECT_FALSE(seq->seq[0].as<ForNode>()->loop_var.same_as(seq->seq[1].as<ForNode>()->loop_var));
  EXPECT_NE(PrintFunc(*parsed).find("for i_1 in range(8):"), std::string::npos);
  // `-x` on a non-literal means 0 - x; `* 2` takes the float type of the other side.
  EXPECT_NE(PrintFunc(*parsed).find("A[i] = float32(0.0) - A[i]"), std::string::npos);
  EXPECT_NE(PrintFunc(*parsed).find("A[i_1] = A[i_1] * float32(2.0)"), std::string::npos);
}

TEST(ParserTest, RangesReadBackWithTheirExtents) {
  const std::string text = R"(def f(A: Buffer((64, 64), "float32"), B: Buffer((64,), "float32")):
    with block("root"):
        for i in range(4):
            with block("b"):
                vi = axis.spatial(8:24, i)
                reads(A[vi:vi + 4, 3:10], A[vi * 2:vi + 9, 0:vi])
                writes(B[vi])
                B[vi] = A[vi, 0]
)";
  absl::StatusOr<PrimFunc> parsed = ParseFunc(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const Block block = parsed->root_block()->body.as<ForNode>()->body.as<BlockRealizeNode>()->block;
  EXPECT_EQ(PrintExpr(block->iter_vars[0].dom.min), "8");
  EXPECT_EQ(PrintExpr(block->iter_vars[0].dom.extent), "16");
  const std::vector<Range>& r0 = block->reads[0].region;
  EXPECT_EQ(PrintExpr(r0[0].extent), "4");
  EXPECT_EQ(PrintExpr(r0[1].min), "3");
  EXPECT_EQ(PrintExpr(r0[1].extent), "7");
  const std::vector<Range>& r1 = block->reads[1].region;
  EXPECT_EQ(PrintExpr(r1[0].extent), "vi + 9 - vi * 2");  // not of the form min + extent
  EXPECT_EQ(PrintExpr(r1[1].extent), "vi");
  EXPECT_EQ(PrintExpr(block->writes[0].region[0].extent), "1");
}

TEST(ParserTest, ModuleNeedsDistinctNamesAndFuncNeedsOne) {
  const std::string one = "def f(A: Buffer((1,), \"int32\")):\n    pass\n";
  absl::StatusOr<IRModule> two = ParseModule(one + "\n" + one);
  ASSERT_FALSE(two.ok());
  EXPECT_NE(two.status().message().find("line 4, column 1: duplicate function name 'f'"),
            std::string::npos)
      << two.status();
  absl::StatusOr<PrimFunc> f = ParseFunc(one + "def g(A: Buffer((1,), \"int32\")):\n    pass\n");
  ASSERT_FALSE(f.ok());
  EXPECT_TRUE(HasLocation(f.status())) << f.status();
  EXPECT_TRUE(ParseFunc(one).ok());
}

struct BadInput {
  const char* name;
  std::string text;
  const char* message;  // expected in the error, including its location
};

// `body` goes inside a root block of a function with parameters A (64x64 float32) and
// B (64 int32).
std::string InRoot(const std::string& body) {
  return "def f(A: Buffer((64, 64), \"float32\"), B: Buffer((64,), \"int32\")):\n"
         "    with block(\"root\"):\n" +
         body;
}

TEST(ParserTest, RejectsMalformedInputWithLocatedErrors) {
  const std::vector<BadInput> corpus = {
      {"empty", "", "line 1, column 1: expected a function"},
      {"unknown buffer", InRoot("        X[0] = 1\n"), "line 3, column 9: undefined buffer 'X'"},
      {"unbalanced bracket", InRoot("        B[(0] = 1\n"),
       "line 3, column 13: expected ')' to close the parenthesis, found ']'"},
      {"unclosed paren", InRoot("        B[0] = (1 + 2\n"),
       "expected ')' to close the parenthesis"},
      {"bad dtype", "def f(A: Buffer((4,), \"float31\")):\n    pass\n",
       "line 1, column 23: unknown dtype 'float31'"},
      {"bad cast dtype", InRoot("        B[0] = cast(int31, 1)\n"),
       "line 3, column 21: unknown dtype 'int31'"},
      {"wrong index count", InRoot("        B[0, 1] = 1\n"),
       "line 3, column 9: buffer 'B' has 1 dimensions but is indexed with 2"},
      {"wrong region rank",
       InRoot("        with block(\"b\"):\n            reads(A[0])\n"
              "            pass\n"),
       "line 4, column 19: buffer 'A' has 2 dimensions but its region has 1"},
      {"undefined variable", InRoot("        B[i] = 1\n"),
       "line 3, column 11: undefined variable 'i'"},
      {"duplicate parameter",
       "def f(A: Buffer((4,), \"int32\"), A: Buffer((4,), \"int32\")):\n"
       "    pass\n",
       "line 1, column 33: redefinition of 'A' (first defined at line 1, column 7)"},
      {"shadowing loop variable",
       InRoot("        for i in range(4):\n            for i in range(4):\n"
              "                B[i] = 1\n"),
       "line 4, column 17: redefinition of 'i'"},
      {"duplicate iter var",
       InRoot("        with block(\"b\"):\n"
              "            v = axis.spatial(4, 0)\n"
              "            v = axis.spatial(4, 1)\n            pass\n"),
       "line 5, column 13: redefinition of 'v'"},
      {"missing colon", InRoot("        for i in range(4)\n            B[i] = 1\n"),
       "line 3, column 26: expected ':' after the for header, found end of line"},
      {"missing binding", InRoot("        with block(\"b\"):\n            v = axis.spatial(4)\n"),
       "line 4, column 31: expected ',' and the binding of 'v' after its domain, found ')'"},
      {"unknown axis kind",
       InRoot("        with block(\"b\"):\n            v = axis.opaque(4, 0)\n"),
       "line 4, column 22: unknown axis kind 'opaque'"},
      {"declaration after body",
       InRoot("        with block(\"b\"):\n            B[0] = 1\n"
              "            reads(B[0])\n"),
       "line 5, column 13: unexpected identifier 'reads'"},
      {"duplicate where",
       InRoot("        with block(\"b\"):\n            where(True)\n"
              "            where(False)\n            pass\n"),
       "line 5, column 13: duplicate 'where' in block \"b\""},
      {"type mismatch", InRoot("        for i in range(4):\n            B[i] = B[i] + A[i, i]\n"),
       "line 4, column 25: operands of '+' have different types int32 and float32"},
      {"store type mismatch", InRoot("        B[0] = A[0, 0]\n"),
       "line 3, column 16: cannot store a float32 value into int32 buffer 'B'"},
      {"non-bool predicate", InRoot("        with block(\"b\"):\n            where(1)\n"),
       "line 4, column 19: block predicate must be bool, found int64"},
      {"not of int", InRoot("        B[0] = select(!1, 1, 2)\n"),
       "line 3, column 23: operand of '!' must be bool"},
      {"wrong arity", InRoot("        evaluate(exp(1.0, 2.0))\n"),
       "line 3, column 18: 'exp' takes 1 argument, found 2"},
      {"empty extern name", InRoot("        evaluate(call_extern(int32, \"\", 1))\n"),
       "line 3, column 18: 'call_extern' needs a non-empty function name"},
      {"extern without dtype", InRoot("        evaluate(call_extern(\"f\", 1))\n"),
       "line 3, column 30: expected a dtype as the first argument of 'call_extern'"},
      {"unknown function", InRoot("        evaluate(frobnicate(1))\n"),
       "line 3, column 18: unknown function 'frobnicate'"},
      {"buffer as variable", InRoot("        B[0] = B\n"), "line 3, column 16: 'B' is a buffer"},
      {"variable as buffer", InRoot("        for i in range(4):\n            i[0] = 1\n"),
       "line 4, column 13: 'i' is a variable, not a buffer"},
      {"bad loop kind", InRoot("        for i in forever(4):\n            pass\n"),
       "line 3, column 18: unknown loop kind 'forever'"},
      {"empty thread tag", InRoot("        for i in thread_binding(4, \"\"):\n            pass\n"),
       "line 3, column 36: thread tag must not be empty"},
      {"missing thread tag", InRoot("        for i in thread_binding(4):\n            pass\n"),
       "line 3, column 34: expected ',' and a thread tag after the extent, found ')'"},
      {"tab indentation", "def f(A: Buffer((4,), \"int32\")):\n\tpass\n",
       "line 2, column 1: tabs are not allowed in indentation"},
      {"bad dedent", InRoot("        for i in range(4):\n            pass\n      pass\n"),
       "line 5, column 7: unindent does not match any outer indentation level"},
      {"unterminated string", "def f(A: Buffer((4,), \"int32)):\n    pass\n",
       "line 1, column 23: unterminated string literal"},
      {"unexpected character", InRoot("        B[0] = 1 % 2\n"),
       "line 3, column 18: unexpected character '%'"},
      {"integer overflow", InRoot("        B[0] = int32(9223372036854775808)\n"),
       "line 3, column 22: integer literal 9223372036854775808 does not fit in int64"},
      {"float literal for int", InRoot("        B[0] = int32(1.5)\n"),
       "line 3, column 22: expected an integer literal for a int32 immediate"},
      {"float out of range", InRoot("        evaluate(1e999)\n"),
       "line 3, column 18: float literal 1e999 is out of range"},
      {"malformed number", InRoot("        B[0] = 12abc\n"), "line 3, column 18: malformed number"},
      {"duplicate annotation",
       InRoot("        for i in range(4, annotations={\"a\": 1, \"a\": 2}):\n"
              "            pass\n"),
       "line 3, column 48: duplicate annotation key \"a\""},
      {"bad annotation value",
       InRoot("        for i in range(4, annotations={\"a\": B}):\n"
              "            pass\n"),
       "line 3, column 45: expected an annotation value"},
      {"unknown buffer argument", "def f(A: Buffer((4,), \"int32\", layout=\"x\")):\n    pass\n",
       "line 1, column 32: unknown buffer argument 'layout'"},
      {"stride count", "def f(A: Buffer((4, 4), \"int32\", strides=(1,))):\n    pass\n",
       "line 1, column 7: buffer 'A' has 2 dimensions but 1 strides"},
      {"missing body", "def f(A: Buffer((4,), \"int32\")):\n",
       "line 2, column 1: expected the "
       "function's indented body"},
      {"statement junk", InRoot("        + 1\n"), "line 3, column 9: expected a statement"},
      {"missing def", "@prim_func\nfunction f():\n", "line 2, column 1: expected 'def'"},
      {"else without if", InRoot("        else:\n            pass\n"),
       "line 3, column 9: 'else' without a matching 'if'"},
  };
  for (const BadInput& bad : corpus) {
    SCOPED_TRACE(bad.name);
    absl::StatusOr<PrimFunc> parsed = ParseFunc(bad.text);
    ASSERT_FALSE(parsed.ok()) << bad.text;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(HasLocation(parsed.status())) << parsed.status();
    EXPECT_NE(parsed.status().message().find(bad.message), std::string::npos)
        << "got: " << parsed.status().message() << "\nwanted: " << bad.message;
  }
}

TEST(ParserTest, DeepNestingIsAnErrorNotACrash) {
  std::string deep =
      InRoot("        B[0] = " + std::string(100000, '(') + "1" + std::string(100000, ')') + "\n");
  absl::StatusOr<PrimFunc> parsed = ParseFunc(deep);
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("nested too deeply"), std::string::npos);
  std::string nots = InRoot("        evaluate(" + std::string(100000, '!') + "True)\n");
  EXPECT_FALSE(ParseFunc(nots).ok());
  std::string loops;
  for (int depth = 0; depth < 300; ++depth) {
    loops += std::string(8 + 4 * depth, ' ') + "if True:\n";
  }
  loops += std::string(8 + 4 * 300, ' ') + "pass\n";
  EXPECT_FALSE(ParseFunc(InRoot(loops)).ok());
}

// Random edits of printed functions: each result must parse or fail with a located
// kInvalidArgument, and whatever parses must print to a fixpoint.
TEST(ParserTest, SurvivesRandomMutations) {
  std::vector<std::string> seeds;
  for (const auto& [name, func] : text_test::HandBuiltFunctions()) seeds.push_back(PrintFunc(func));
  for (const WorkloadInfo& info : ListWorkloads()) {
    absl::StatusOr<PrimFunc> f = MakeWorkload(info.name);
    if (f.ok()) seeds.push_back(PrintFunc(*f));
  }
  const std::string alphabet = "()[]{},:.=+-*/<>!@\"# \n    ia0159_eE";
  Random rng(2024);
  int parsed_ok = 0;
  const int kTrials = 3000;
  for (int trial = 0; trial < kTrials; ++trial) {
    std::string text = seeds[rng.UniformInt(0, static_cast<int64_t>(seeds.size()))];
    int edits = static_cast<int>(rng.UniformInt(1, 4));
    for (int e = 0; e < edits && !text.empty(); ++e) {
      int64_t at = rng.UniformInt(0, static_cast<int64_t>(text.size()));
      switch (rng.UniformInt(0, 5)) {
        case 0:  // truncate
          text.resize(static_cast<size_t>(at));
          break;
        case 1:  // delete a short span
          text.erase(static_cast<size_t>(at), static_cast<size_t>(rng.UniformInt(1, 8)));
          break;
        case 2:  // insert a character
          text.insert(static_cast<size_t>(at), 1,
                      alphabet[rng.UniformInt(0, static_cast<int64_t>(alphabet.size()))]);
          break;
        case 3:  // replace a character
          text[static_cast<size_t>(at)] =
              alphabet[rng.UniformInt(0, static_cast<int64_t>(alphabet.size()))];
          break;
        default: {  // duplicate a span elsewhere
          int64_t len = rng.UniformInt(1, 40);
          std::string span = text.substr(static_cast<size_t>(at), static_cast<size_t>(len));
          text.insert(static_cast<size_t>(rng.UniformInt(0, static_cast<int64_t>(text.size()))),
                      span);
        }
      }
    }
    absl::StatusOr<PrimFunc> parsed = ParseFunc(text);
    if (!parsed.ok()) {
      ASSERT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << text;
      ASSERT_TRUE(HasLocation(parsed.status())) << parsed.status() << "\n" << text;
      continue;
    }
    ++parsed_ok;
    std::string printed = PrintFunc(*parsed);
    absl::StatusOr<PrimFunc> again = ParseFunc(printed);
    ASSERT_TRUE(again.ok()) << again.status() << "\n" << printed;
    ASSERT_EQ(PrintFunc(*again), printed);
  }
  // Some edits are harmless (inside comments, strings, names); most are not.
  EXPECT_GT(parsed_ok, 0);
  EXPECT_LT(parsed_ok, kTrials);
}

}  // namespace
}  // namespace tessera
