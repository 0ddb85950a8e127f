// IndexMap: the text form round-trips, shapes map through the final indices, inverses undo
// the map on every point, and non-bijective maps and malformed text are rejected.
#include "schedule/index_map.h"

#include <pthread.h>

#include <set>

#include "gtest/gtest.h"
#include "ir/arith/analyzer.h"

namespace tessera {
namespace {

IndexMap MustParse(const std::string& text) {
  absl::StatusOr<IndexMap> map = IndexMap::Parse(text);
  EXPECT_TRUE(map.ok()) << map.status();
  return *map;
}

std::vector<Expr> Shape(const std::vector<int64_t>& dims) {
  return std::vector<Expr>(dims.begin(), dims.end());
}

std::vector<int64_t> Ints(const std::vector<Expr>& exprs) {
  std::vector<int64_t> out;
  for (const Expr& e : exprs) {
    const int64_t* v = AsConstInt(e);
    EXPECT_NE(v, nullptr);
    out.push_back(v == nullptr ? -1 : *v);
  }
  return out;
}

// Applies `map` to constant indices.
std::vector<int64_t> Apply(const IndexMap& map, const std::vector<int64_t>& point) {
  arith::Analyzer analyzer;
  return Ints(map.MapIndices(Shape(point), &analyzer));
}

// Checks that inverse(map(x)) == x for every x in [0, dims) and that the images are distinct.
void ExpectInverts(const IndexMap& map, const std::vector<int64_t>& dims) {
  absl::StatusOr<IndexMap> inverse = map.Inverse(Shape(dims));
  ASSERT_TRUE(inverse.ok()) << inverse.status();
  std::vector<int64_t> point(dims.size(), 0);
  std::set<std::vector<int64_t>> images;
  while (true) {
    std::vector<int64_t> image = Apply(map, point);
    EXPECT_TRUE(images.insert(image).second);
    EXPECT_EQ(Apply(*inverse, image), point) << inverse->ToString();
    size_t d = dims.size();
    while (d > 0 && ++point[d - 1] == dims[d - 1]) point[--d] = 0;
    if (d == 0) break;
  }
}

TEST(IndexMapTest, ParsePrintRoundTrip) {
  const std::string text = "lambda i, j: (floordiv(i, 16), j, floormod(i, 16))";
  IndexMap map = MustParse(text);
  EXPECT_EQ(map.num_inputs(), 2u);
  EXPECT_EQ(map.num_outputs(), 3u);
  EXPECT_EQ(map.ToString(), text);
  EXPECT_EQ(MustParse(map.ToString()).ToString(), text);
}

TEST(IndexMapTest, PythonOperatorsAndPrecedence) {
  IndexMap map =
      MustParse("lambda i, j: (i // 4, (j % 4) * 2 + 1, -3 * i, i - (j - 1), min(i, j))");
  EXPECT_EQ(
      map.ToString(),
      "lambda i, j: (floordiv(i, 4), floormod(j, 4) * 2 + 1, -3 * i, i - (j - 1), min(i, j))");
  EXPECT_EQ(MustParse(map.ToString()).ToString(), map.ToString());
  EXPECT_EQ(Apply(map, {9, 6}), (std::vector<int64_t>{2, 5, -27, 4, 6}));
}

TEST(IndexMapTest, OneOutputIsWrittenAsATuple) {
  EXPECT_EQ(MustParse("lambda i, j: (i * 16 + j,)").ToString(), "lambda i, j: (i * 16 + j,)");
  EXPECT_EQ(MustParse("lambda i: i").ToString(), "lambda i: (i,)");
  EXPECT_EQ(MustParse("lambda i: (i + 1) * 2").ToString(), "lambda i: ((i + 1) * 2,)");
}

TEST(IndexMapTest, PrintsDistinctNamesForVariablesThatShareOne) {
  Var a("i"), b("i");
  absl::StatusOr<IndexMap> map = IndexMap::Make({a, b}, {b, a});
  ASSERT_TRUE(map.ok()) << map.status();
  EXPECT_EQ(map->ToString(), "lambda i, i_1: (i_1, i)");
  EXPECT_EQ(Apply(MustParse(map->ToString()), {1, 2}), (std::vector<int64_t>{2, 1}));
}

TEST(IndexMapTest, MapShapeGivesExtentsOfFinalIndices) {
  IndexMap tile = MustParse("lambda i, j: (floordiv(i, 16), j, floormod(i, 16))");
  EXPECT_EQ(Ints(*tile.MapShape(Shape({64, 32}))), (std::vector<int64_t>{4, 32, 16}));
  IndexMap fuse = MustParse("lambda i, j: (i * 32 + j,)");
  EXPECT_EQ(Ints(*fuse.MapShape(Shape({64, 32}))), (std::vector<int64_t>{2048}));
  EXPECT_EQ(Ints(*MustParse("lambda i: (0, i)").MapShape(Shape({5}))),
            (std::vector<int64_t>{1, 5}));
}

TEST(IndexMapTest, MapShapeRejectsBadShapes) {
  IndexMap map = MustParse("lambda i, j: (j, i)");
  EXPECT_FALSE(map.MapShape(Shape({4})).ok());
  EXPECT_FALSE(map.MapShape({Expr(4), Var("n")}).ok());
  absl::StatusOr<std::vector<Expr>> negative = MustParse("lambda i: (i - 1,)").MapShape(Shape({4}));
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(std::string(negative.status().message()).find("can be negative"), std::string::npos);
}

TEST(IndexMapTest, InverseUndoesTiling) {
  ExpectInverts(MustParse("lambda i, j: (floordiv(i, 4), j, floormod(i, 4))"), {12, 5});
}

TEST(IndexMapTest, InverseUndoesFusionAndMixedSplits) {
  ExpectInverts(MustParse("lambda i, j: (i * 6 + j,)"), {4, 6});
  ExpectInverts(MustParse("lambda i, j: (floordiv(j, 4), i * 4 + floormod(j, 4))"), {3, 8});
  ExpectInverts(MustParse("lambda i, j, k: (floordiv(i * 4 + j, 8), k, floormod(i * 4 + j, 8))"),
                {4, 4, 2});
  ExpectInverts(MustParse("lambda b, i: (i, b)"), {1, 7});
  ExpectInverts(MustParse("lambda i: (0, i)"), {6});
}

TEST(IndexMapTest, InverseRejectsNonBijectiveMaps) {
  for (const char* text : {"lambda i, j: (i + j,)", "lambda i, j: (i,)", "lambda i, j: (i * 2, j)",
                           "lambda i, j: (i, j, i)", "lambda i, j: (i + 1, j)"}) {
    absl::StatusOr<IndexMap> inverse = MustParse(text).Inverse(Shape({4, 4}));
    ASSERT_FALSE(inverse.ok()) << text;
    EXPECT_EQ(inverse.status().code(), absl::StatusCode::kInvalidArgument);
  }
  // A split that does not divide the extent would need padding.
  absl::StatusOr<IndexMap> padded =
      MustParse("lambda i: (floordiv(i, 3), floormod(i, 3))").Inverse(Shape({10}));
  ASSERT_FALSE(padded.ok());
  EXPECT_NE(std::string(padded.status().message()).find("not bijective"), std::string::npos);
}

TEST(IndexMapTest, ParseErrorsNameTheProblem) {
  struct Case {
    const char* text;
    const char* message;
  } cases[] = {
      {"lambda i: (j,)", "unknown name 'j'"},
      {"lambda i, i: (i,)", "variable i is repeated"},
      {"lam i: (i,)", "expected 'lambda'"},
      {"lambda i: (i / 2,)", "unexpected character '/'"},
      {"lambda i: (i,", "expected"},
      {"lambda : (1,)", "expected an index variable name"},
      {"lambda min: (min,)", "expected an index variable name"},
      {"lambda i: floordiv(i)", "expected ','"},
      {"lambda i: (i) (i)", "expected ',' or the end of the map"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<IndexMap> map = IndexMap::Parse(c.text);
    ASSERT_FALSE(map.ok()) << c.text;
    EXPECT_EQ(map.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(map.status().message()).find(c.message), std::string::npos)
        << c.text << ": " << map.status();
  }
}

// `lambda i: (i op i op ... op i,)` with `ops` operators: a left-deep tree of depth ops + 1.
std::string FlatChain(int ops, const std::string& op) {
  std::string text = "lambda i: (i";
  for (int n = 0; n < ops; ++n) text += " " + op + " i";
  return text + ",)";
}

void ExpectTooDeep(const std::string& text) {
  absl::StatusOr<IndexMap> map = IndexMap::Parse(text);
  ASSERT_FALSE(map.ok()) << text.substr(0, 80);
  EXPECT_EQ(map.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(map.status().message()).find("expressions nest too deeply"),
            std::string::npos)
      << map.status();
}

// Hostile texts: deep parentheses, unary minus and calls, and long flat sums and products whose
// trees are as deep as they are long (each used to overflow the stack in the parser or when
// the tree was validated, printed, simplified or destroyed).
void ExpectHostileTextsRejected() {
  ExpectTooDeep("lambda i: (" + std::string(100000, '(') + "i" + std::string(100000, ')') + ",)");
  ExpectTooDeep("lambda i: (" + std::string(100000, '-') + "i,)");
  std::string calls;
  for (int n = 0; n < 100000; ++n) calls += "min(";
  calls += "i";
  for (int n = 0; n < 100000; ++n) calls += ", 1)";
  ExpectTooDeep("lambda i: (" + calls + ",)");
  ExpectTooDeep(FlatChain(200000, "+"));
  ExpectTooDeep(FlatChain(200000, "*"));
  ExpectTooDeep(FlatChain(200000, "//"));
  ExpectTooDeep(FlatChain(64, "+"));  // depth 65: just over the limit
}

// A map at the depth limit goes through everything a schedule does with one.
void ExpectDeepestAcceptedMapWorks() {
  EXPECT_TRUE(
      IndexMap::Parse("lambda i: (" + std::string(50, '(') + "i" + std::string(50, ')') + ",)")
          .ok());
  absl::StatusOr<IndexMap> map = IndexMap::Parse(FlatChain(63, "+"));  // depth 64
  ASSERT_TRUE(map.ok()) << map.status();
  absl::StatusOr<IndexMap> again = IndexMap::Parse(map->ToString());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->ToString(), map->ToString());
  absl::StatusOr<std::vector<Expr>> shape = map->MapShape(Shape({4}));
  ASSERT_TRUE(shape.ok()) << shape.status();
  EXPECT_EQ(Ints(*shape), (std::vector<int64_t>{64 * 3 + 1}));
  EXPECT_EQ(Apply(*map, {2}), (std::vector<int64_t>{128}));
  EXPECT_FALSE(map->Inverse(Shape({4})).ok());  // i * 64 is not onto [0, 193)
}

// Runs `fn` on a thread with a `bytes` stack (a quarter of the usual 8 MB main stack).
void RunWithStack(size_t bytes, void (*fn)()) {
  pthread_attr_t attr;
  ASSERT_EQ(pthread_attr_init(&attr), 0);
  ASSERT_EQ(pthread_attr_setstacksize(&attr, bytes), 0);
  pthread_t thread;
  auto body = [](void* arg) -> void* {
    reinterpret_cast<void (*)()>(arg)();
    return nullptr;
  };
  ASSERT_EQ(pthread_create(&thread, &attr, body, reinterpret_cast<void*>(fn)), 0);
  ASSERT_EQ(pthread_join(thread, nullptr), 0);
  pthread_attr_destroy(&attr);
}

TEST(IndexMapTest, DeepNestingIsAnErrorNotACrash) {
  ExpectHostileTextsRejected();
  ExpectDeepestAcceptedMapWorks();
}

TEST(IndexMapTest, DeepNestingStaysWithinAQuarterOfTheStack) {
  RunWithStack(2 << 20, &ExpectHostileTextsRejected);
  RunWithStack(2 << 20, &ExpectDeepestAcceptedMapWorks);
}

TEST(IndexMapTest, MakeRejectsDeepExpressions) {
  Var i("i");
  Expr deep = i;
  for (int n = 0; n < 1000; ++n) deep = deep + Expr(1);
  absl::StatusOr<IndexMap> map = IndexMap::Make({i}, {i, deep});
  ASSERT_FALSE(map.ok());
  EXPECT_EQ(map.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(map.status().message())
                .find("index map: final index 1: expressions nest too deeply"),
            std::string::npos)
      << map.status();
}

TEST(IndexMapTest, MakeRejectsWhatIsNotIndexArithmetic) {
  Var i("i"), j("j");
  EXPECT_FALSE(IndexMap::Make({i}, {j}).ok());                // free variable
  EXPECT_FALSE(IndexMap::Make({i}, {LT(i, Expr(3))}).ok());   // not an index
  EXPECT_FALSE(IndexMap::Make({i}, {Div(i, Expr(2))}).ok());  // C division
  EXPECT_FALSE(IndexMap::Make({i, i}, {i}).ok());             // repeated variable
  EXPECT_FALSE(IndexMap::Make({}, {Expr(0)}).ok());
  EXPECT_FALSE(IndexMap::Make({i}, {}).ok());
}

TEST(IndexMapTest, RecognisesItsTextForm) {
  EXPECT_TRUE(IndexMap::IsIndexMapText("lambda i: (i,)"));
  EXPECT_FALSE(IndexMap::IsIndexMapText("lambdas"));
  EXPECT_FALSE(IndexMap::IsIndexMapText("b0"));
}

}  // namespace
}  // namespace tessera
