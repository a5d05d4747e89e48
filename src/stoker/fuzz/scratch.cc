#include "stoker/fuzz/scratch.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "stoker/fuzz/targets.h"

namespace stoker::fuzz {
namespace {
std::string g_dir;
void remove_dir() {
  std::error_code ec;
  std::filesystem::remove_all(g_dir, ec);
}
}  // namespace

void make_scratch_dir() {
  const char* base = std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
  g_dir = std::string(base) + "/stoker_fuzz." + std::to_string(::getpid());
  std::error_code ec;
  std::filesystem::create_directories(g_dir, ec);
  check(!ec, "scratch folder created");
  std::atexit(remove_dir);
}

const std::string& scratch_dir() { return g_dir; }

void write_file(const std::string& path, std::string_view bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  check(static_cast<bool>(f), "scratch file written");
}

}  // namespace stoker::fuzz
