#include "stoker/base/data_dir.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace stoker {
namespace {
namespace fs = std::filesystem;

// A fresh folder per test, removed at the end.
class DataDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("stoker-data-dir-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override {
    ::unsetenv(kDataDirEnv);
    fs::remove_all(root_);
  }
  fs::path root_;
};

TEST_F(DataDirTest, FindsShareStokerBesideTheExecutable) {
  // The build tree: build/stoker and build/share/stoker.
  fs::create_directories(root_ / "share/stoker");
  EXPECT_EQ(find_data_dir_above(root_), root_ / "share/stoker");
}

TEST_F(DataDirTest, FindsThePrefixFromBinAndFromThePythonPackage) {
  fs::create_directories(root_ / "share/stoker");
  fs::create_directories(root_ / "bin");
  const fs::path pkg = root_ / "lib/python3.11/dist-packages/stoker";
  fs::create_directories(pkg);
  EXPECT_EQ(find_data_dir_above(root_ / "bin"), root_ / "share/stoker");
  EXPECT_EQ(find_data_dir_above(pkg), root_ / "share/stoker");
  // Four levels is the bound: one more folder down is not searched past.
  EXPECT_EQ(find_data_dir_above(pkg, 3), std::nullopt);
}

TEST_F(DataDirTest, NearestShareStokerWins) {
  fs::create_directories(root_ / "share/stoker");
  fs::create_directories(root_ / "inner/share/stoker");
  fs::create_directories(root_ / "inner/bin");
  EXPECT_EQ(find_data_dir_above(root_ / "inner/bin"), root_ / "inner/share/stoker");
}

TEST_F(DataDirTest, AShareFolderWithoutStokerIsNotData) {
  fs::create_directories(root_ / "share/other");
  fs::create_directories(root_ / "bin");
  EXPECT_EQ(find_data_dir_above(root_ / "bin", 1), std::nullopt);
}

TEST_F(DataDirTest, EnvironmentOverrides) {
  fs::create_directories(root_ / "elsewhere");
  ::setenv(kDataDirEnv, (root_ / "elsewhere").c_str(), 1);
  auto d = data_dir();
  ASSERT_TRUE(d.ok()) << d.error().to_string();
  EXPECT_EQ(*d, root_ / "elsewhere");
}

TEST_F(DataDirTest, EnvironmentNamingNoFolderIsNotFoundNotAFallback) {
  ::setenv(kDataDirEnv, (root_ / "missing").c_str(), 1);
  auto d = data_dir();
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(d.error().to_string().find("STOKER_DATA_DIR"), std::string::npos);
}

TEST(RunningBinaryTest, TheTestExecutableIsProcSelfExe) {
  // This code is linked statically into the test program, so the main program is the answer.
  EXPECT_EQ(running_binary(), fs::read_symlink("/proc/self/exe"));
}

}  // namespace
}  // namespace stoker
