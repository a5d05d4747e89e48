#include "stoker/synth/shards.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "stoker/base/file.h"
#include "stoker/base/json_text.h"
#include "stoker/dataset/wds.h"

namespace stoker::synth {
namespace {

namespace fs = std::filesystem;

std::string tar_header(const std::string& name, std::size_t size) {
  std::string h(512, '\0');
  std::memcpy(&h[0], name.data(), name.size());
  std::snprintf(&h[100], 8, "%07o", 0644);
  std::snprintf(&h[108], 8, "%07o", 0);
  std::snprintf(&h[116], 8, "%07o", 0);
  std::snprintf(&h[124], 12, "%011llo", static_cast<unsigned long long>(size));
  std::snprintf(&h[136], 12, "%011o", 0);
  h[156] = '0';
  std::memcpy(&h[257], "ustar\0" "00", 8);
  std::memset(&h[148], ' ', 8);
  unsigned sum = 0;
  for (unsigned char c : h) sum += c;
  std::snprintf(&h[148], 7, "%06o", sum);  // six digits, NUL, space (as GNU tar writes it)
  h[155] = ' ';
  return h;
}

// The media paths a synth record names ("images/…", "videos/…" JSON strings), in order, once each.
std::vector<std::string> media_paths(const std::string& line) {
  std::vector<std::string> out;
  for (const char* prefix : {"\"images/", "\"videos/"}) {
    for (std::size_t at = line.find(prefix); at != std::string::npos; at = line.find(prefix, at + 1)) {
      if (at > 0 && line[at - 1] == '\\') continue;  // an escaped quote inside text
      const std::size_t end = line.find('"', at + 1);
      if (end == std::string::npos) break;
      const std::string path = line.substr(at + 1, end - at - 1);
      if (path.find('\\') != std::string::npos) continue;
      bool seen = false;
      for (const auto& p : out) seen = seen || p == path;
      if (!seen) out.push_back(path);
    }
  }
  return out;
}

std::string padded(std::size_t v, int width) {
  std::string s = std::to_string(v);
  if (static_cast<int>(s.size()) < width) s.insert(0, static_cast<std::size_t>(width) - s.size(), '0');
  return s;
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
}

}  // namespace

Result<ShardsResult> write_shards(const std::string& out_dir, int shards) {
  STOKER_ASSIGN_OR_RETURN(
      std::string jsonl, read_text_file((fs::path(out_dir) / "data.jsonl").string(), kMaxFileBytes));
  std::vector<std::string> lines;
  {
    std::istringstream in(jsonl);
    std::string line;
    while (std::getline(in, line)) lines.push_back(line);
  }
  if (shards < 1 || static_cast<std::size_t>(shards) > lines.size())
    return invalid_argument("--shards " + std::to_string(shards) + ": between 1 and the " + std::to_string(lines.size()) +
                            " records");
  ShardsResult r;
  r.shards = shards;
  const int width = std::max(3, static_cast<int>(std::to_string(shards - 1).size()));
  auto shard_name = [&](int j) { return "data-" + padded(static_cast<std::size_t>(j), width) + ".tar"; };
  const fs::path wds = fs::path(out_dir) / "shards";
  const fs::path energon = fs::path(out_dir) / "energon";
  std::error_code ec;
  fs::create_directories(wds, ec);
  fs::create_directories(energon / "shards", ec);
  fs::create_directories(energon / ".nv-meta", ec);
  std::string info = "{\n  \"energon_version\": \"stoker-synth\",\n  \"shard_counts\": {";
  for (int j = 0; j < shards; ++j) {
    const std::size_t begin = lines.size() * static_cast<std::size_t>(j) / static_cast<std::size_t>(shards);
    const std::size_t end = lines.size() * static_cast<std::size_t>(j + 1) / static_cast<std::size_t>(shards);
    std::string tar;
    std::vector<std::uint64_t> offsets;
    for (std::size_t i = begin; i < end; ++i) {
      const std::string key = padded(i, 6);
      std::string record = lines[i];
      std::vector<std::pair<std::string, std::string>> members;
      int k = 0;
      for (const std::string& path : media_paths(record)) {
        const fs::path file = fs::path(out_dir) / path;
        if (!fs::is_regular_file(file, ec)) continue;  // a missing file stays a (missing) path
        STOKER_ASSIGN_OR_RETURN(std::string bytes, read_text_file(file.string()));
        const std::string ext = file.extension().string();  // ".jpg"
        const std::string part = std::to_string(k++) + ext;
        replace_all(record, json_string(path), json_string(part));
        members.emplace_back(key + "." + part, std::move(bytes));
      }
      members.insert(members.begin(), {key + ".json", record});
      offsets.push_back(tar.size());
      for (const auto& [name, data] : members) {
        tar += tar_header(name, data.size());
        tar += data;
        tar.append((512 - data.size() % 512) % 512, '\0');
      }
      r.media_members += static_cast<int>(members.size()) - 1;
      ++r.samples;
    }
    offsets.push_back(tar.size());
    tar.append(1024, '\0');
    const std::string name = shard_name(j);
    const auto bytes = std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(tar.data()), tar.size());
    STOKER_RETURN_IF_ERROR(write_file((wds / name).string(), bytes));
    r.bytes += static_cast<std::int64_t>(tar.size());
    const fs::path linked = energon / "shards" / name;
    fs::remove(linked, ec);
    fs::create_hard_link(wds / name, linked, ec);
    if (ec) STOKER_RETURN_IF_ERROR(write_file(linked.string(), bytes));
    STOKER_RETURN_IF_ERROR(write_file(dataset::tar_index_path(linked.string()), dataset::encode_tar_index(offsets)));
    info += std::string(j ? "," : "") + "\n    " + json_string("shards/" + name) + ": " + std::to_string(end - begin);
  }
  info += "\n  }\n}\n";
  const std::string pattern = "shards/data-{" + padded(0, width) + ".." + padded(static_cast<std::size_t>(shards - 1), width) + "}.tar";
  STOKER_RETURN_IF_ERROR(write_text_file((energon / ".nv-meta" / ".info.json").string(), info));
  STOKER_RETURN_IF_ERROR(write_text_file((energon / ".nv-meta" / "split.yaml").string(),
                                         std::string("split_parts:\n  train:\n  - ") + pattern + "\n"));
  STOKER_RETURN_IF_ERROR(write_text_file(
      (energon / ".nv-meta" / "dataset.yaml").string(),
      "# Written by `stoker synth --shards`: crude samples in stoker's convention (KEY.json is the\n"
      "# record; a media value equal to a part name, e.g. \"0.jpg\", is that member).\n"
      "__module__: megatron.energon\n__class__: CrudeWebdataset\n"));
  r.shards_pattern = (fs::path(out_dir) / pattern).string();
  r.energon_dir = energon.string();
  return r;
}

}  // namespace stoker::synth
