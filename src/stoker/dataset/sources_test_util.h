// Test helpers for the record-source tests: a temporary folder, files, a minimal ustar writer
// (hand-built headers, so tests can damage them byte by byte), and running the independent
// implementations (Debian's /usr/bin/python3: tarfile, pickle, braceexpand, PyYAML; GNU tar).
// Test-only; not part of any library.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace stoker::dataset::testing {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "stoker-sources-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) std::abort();
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    for (auto& e : fs::recursive_directory_iterator(path_, ec))
      fs::permissions(e.path(), fs::perms::owner_all, fs::perm_options::add, ec);
    fs::permissions(path_, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  std::string write(const std::string& name, const std::string& content) const {
    const fs::path p = path_ / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << content;
    return p.string();
  }

 private:
  fs::path path_;
};

inline std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline std::vector<std::uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }

// Runs a shell command; returns (exit status, stdout).
inline std::pair<int, std::string> run(const std::string& command) {
  std::string out;
  FILE* p = ::popen(command.c_str(), "r");
  if (!p) return {-1, out};
  char buf[65536];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

inline bool have_python() { return ::access("/usr/bin/python3", X_OK) == 0; }
inline bool have_python_module(const std::string& module) {
  return have_python() && run("/usr/bin/python3 -c 'import " + module + "' 2>/dev/null").first == 0;
}
inline bool have_gnu_tar() { return run("tar --version 2>/dev/null | head -1").second.find("GNU tar") != std::string::npos; }

// Runs a Python script (written to `dir`) with arguments; stdout, or a test failure.
inline std::string python(const TempDir& dir, const std::string& script, const std::string& args = "") {
  static int counter = 0;
  const std::string path = dir.write("script" + std::to_string(counter++) + ".py", script);
  auto [rc, out] = run("/usr/bin/python3 " + path + " " + args);
  EXPECT_EQ(rc, 0) << "python failed: " << script.substr(0, 200);
  return out;
}

// A ustar member header with a valid checksum (name ≤ 100 bytes, prefix ≤ 155).
inline std::string tar_header(const std::string& name, std::size_t size, char type = '0',
                              const std::string& prefix = "") {
  std::string h(512, '\0');
  std::memcpy(&h[0], name.data(), std::min<std::size_t>(name.size(), 100));
  std::snprintf(&h[100], 8, "%07o", 0644);
  std::snprintf(&h[108], 8, "%07o", 0);
  std::snprintf(&h[116], 8, "%07o", 0);
  std::snprintf(&h[124], 12, "%011llo", static_cast<unsigned long long>(size));
  std::snprintf(&h[136], 12, "%011o", 0);
  h[156] = type;
  std::memcpy(&h[257], "ustar\0" "00", 8);
  std::memcpy(&h[345], prefix.data(), std::min<std::size_t>(prefix.size(), 155));
  std::memset(&h[148], ' ', 8);
  unsigned sum = 0;
  for (unsigned char c : h) sum += c;
  std::snprintf(&h[148], 8, "%06o", sum);
  h[155] = ' ';
  return h;
}

inline std::string tar_member(const std::string& name, const std::string& data, char type = '0') {
  std::string m = tar_header(name, data.size(), type) + data;
  m.append((512 - data.size() % 512) % 512, '\0');
  return m;
}

// An archive of (name, data) members and the two end blocks.
inline std::string make_tar(const std::vector<std::pair<std::string, std::string>>& members) {
  std::string t;
  for (const auto& [name, data] : members) t += tar_member(name, data);
  return t + std::string(1024, '\0');
}

}  // namespace stoker::dataset::testing
