#include "iotrace/analysis/comm_pool.h"

#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace iotrace {
namespace {

// A comm as the decoder leaves it: NUL-terminated, whatever after the NUL.
std::array<char, kCommSize> Comm(const std::string& name, char after = 'x') {
  std::array<char, kCommSize> c;
  c.fill(after);
  std::memcpy(c.data(), name.c_str(), name.size() + 1);
  return c;
}

TEST(CommPoolTest, OneIdPerNameWhateverFollowsItsNul) {
  CommPool pool;
  EXPECT_EQ(pool.Intern(Comm("").data()), 0u);
  EXPECT_STREQ(pool.Name(0), "");
  const uint32_t fio = pool.Intern(Comm("fio").data());
  EXPECT_NE(fio, 0u);
  EXPECT_EQ(pool.Intern(Comm("fio", '\0').data()), fio);
  EXPECT_EQ(pool.Intern(Comm("fio", 'q').data()), fio);
  const uint32_t longest = pool.Intern(Comm("kworker/u16:123").data());  // 15 characters
  EXPECT_NE(longest, fio);
  EXPECT_STREQ(pool.Name(fio), "fio");
  EXPECT_STREQ(pool.Name(longest), "kworker/u16:123");
  EXPECT_EQ(pool.size(), 3u);
}

TEST(CommPoolTest, ManyNamesPastTheCacheKeepTheirIds) {
  CommPool pool;
  std::vector<uint32_t> ids;
  for (int i = 0; i < 5000; ++i) ids.push_back(pool.Intern(Comm(absl::StrCat("p", i)).data()));
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 5000; ++i) {
      const std::string name = absl::StrCat("p", i);
      ASSERT_EQ(pool.Intern(Comm(name).data()), ids[i]);
      ASSERT_STREQ(pool.Name(ids[i]), name.c_str());
    }
  }
  EXPECT_EQ(pool.size(), 5001u);
}

TEST(CommPoolTest, IdsTranslateBetweenPoolsThatMetNamesInAnotherOrder) {
  CommPool a, b;
  const uint32_t a_fio = a.Intern(Comm("fio").data());
  const uint32_t a_dd = a.Intern(Comm("dd").data());
  const uint32_t b_dd = b.Intern(Comm("dd").data());
  EXPECT_EQ(a_fio, b_dd);  // the same number, another name: ids are each pool's own
  EXPECT_EQ(b.From(a, a_dd), b_dd);
  const uint32_t b_fio = b.From(a, a_fio);
  EXPECT_NE(b_fio, b_dd);
  EXPECT_STREQ(b.Name(b_fio), "fio");
  EXPECT_EQ(b.From(a, 0), 0u);
}

}  // namespace
}  // namespace iotrace
