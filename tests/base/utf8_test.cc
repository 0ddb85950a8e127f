#include "base/utf8.h"

#include <string>

#include "gtest/gtest.h"

namespace tessera {
namespace {

TEST(Utf8Test, AcceptsWellFormedTextOnly) {
  EXPECT_TRUE(IsUtf8(""));
  EXPECT_TRUE(IsUtf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));
  EXPECT_FALSE(IsUtf8("\xff\xfe"));          // no lead byte
  EXPECT_FALSE(IsUtf8("ok\xc3"));            // cut short
  EXPECT_FALSE(IsUtf8("\xe2\x82x"));         // not a continuation byte
  EXPECT_FALSE(IsUtf8("\xc0\xaf"));          // overlong '/'
  EXPECT_FALSE(IsUtf8("\xed\xa0\x80"));      // a surrogate
  EXPECT_FALSE(IsUtf8("\xf4\x90\x80\x80"));  // above U+10FFFF
}

TEST(Utf8Test, PrintableRefusesControlCharacters) {
  EXPECT_TRUE(IsUtf8("tab\tnewline\n"));
  EXPECT_FALSE(IsUtf8("tab\t", /*printable=*/true));
  EXPECT_FALSE(IsUtf8(std::string("nul\0", 4), /*printable=*/true));
  EXPECT_TRUE(IsUtf8("gcc 12.2 -O3 \xc3\xa9", /*printable=*/true));
}

}  // namespace
}  // namespace tessera
