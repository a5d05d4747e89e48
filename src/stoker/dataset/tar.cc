#include "stoker/dataset/tar.h"

#include <algorithm>
#include <cstring>

namespace stoker::dataset {
namespace {

std::int64_t round_up_block(std::int64_t n) { return (n + kTarBlock - 1) / kTarBlock * kTarBlock; }

// tarfile's nts: the bytes up to the first NUL.
std::string nts(std::span<const std::uint8_t> field) {
  const auto* p = reinterpret_cast<const char*>(field.data());
  const void* nul = std::memchr(p, 0, field.size());
  return std::string(p, nul ? static_cast<const char*>(nul) - p : field.size());
}

std::string quote(const std::string& name) {
  std::string out = "'";
  for (char c : name.substr(0, 200)) out += (static_cast<unsigned char>(c) < 0x20) ? '?' : c;
  if (name.size() > 200) out += "...";
  return out + "'";
}

// Where an extended header chain stands before its member's own header.
struct Pending {
  bool chained = false;           // an 'L'/'K'/'x' header was seen: its offset is the member's
  std::int64_t first_offset = 0;
  std::optional<std::string> name;
  std::optional<std::int64_t> size;
};

// Parses pax records "LEN KEY=VALUE\n" (tarfile's rules: LEN counts the whole record, ≥ 5, the
// last byte a newline; a NUL where a record would start ends the block).
Status parse_pax(std::span<const std::uint8_t> buf, bool global, Pending* pending,
                 const std::string& where) {
  std::size_t pos = 0;
  while (pos < buf.size() && buf[pos] != 0) {
    std::size_t p = pos;
    std::uint64_t len = 0;
    while (p < buf.size() && buf[p] >= '0' && buf[p] <= '9' && p - pos < 20) {
      len = len * 10 + (buf[p] - '0');
      ++p;
    }
    if (p == pos || p >= buf.size() || buf[p] != ' ')
      return data_loss(where + ": malformed pax record at byte " + std::to_string(pos));
    if (len < 5 || len > buf.size() - pos)
      return data_loss(where + ": pax record length " + std::to_string(len) + " out of range");
    const std::size_t end = pos + len - 1;  // the newline
    if (buf[end] != '\n' || p + 1 > end)
      return data_loss(where + ": pax record not terminated by a newline");
    std::string_view kv(reinterpret_cast<const char*>(buf.data()) + p + 1, end - p - 1);
    const std::size_t eq = kv.find('=');
    if (eq == 0 || eq == std::string_view::npos)
      return data_loss(where + ": pax record without KEY=VALUE");
    const std::string_view key = kv.substr(0, eq), value = kv.substr(eq + 1);
    if (key.rfind("GNU.sparse.", 0) == 0)
      return unimplemented(where + ": GNU sparse members are not supported");
    if (key == "path" || key == "size") {
      if (global)
        return unimplemented(where + ": a pax global header setting '" + std::string(key) +
                             "' for every member is not supported");
      if (key == "path") {
        if (!pending->name) pending->name = std::string(value);
      } else {
        std::int64_t v = 0;
        if (value.empty() || value.size() > 18)
          return data_loss(where + ": pax size '" + std::string(value.substr(0, 40)) + "' invalid");
        for (char c : value) {
          if (c < '0' || c > '9')
            return data_loss(where + ": pax size '" + std::string(value.substr(0, 40)) + "' invalid");
          v = v * 10 + (c - '0');
        }
        if (!pending->size) pending->size = v;
      }
    }
    pos += len;
  }
  return ok_status();
}

}  // namespace

std::optional<std::int64_t> parse_tar_number(std::span<const std::uint8_t> field) {
  if (field.empty()) return std::int64_t{0};
  if (field[0] == 0x80) {  // GNU base-256, positive
    std::uint64_t v = 0;
    for (std::size_t i = 1; i < field.size(); ++i) {
      if (v >> 55) return std::nullopt;  // would pass 2^63
      v = (v << 8) | field[i];
    }
    if (v >> 63) return std::nullopt;
    return static_cast<std::int64_t>(v);
  }
  if (field[0] == 0xff) return std::nullopt;  // negative base-256
  std::size_t n = 0;
  while (n < field.size() && field[n] != 0) ++n;  // nts
  std::size_t b = 0, e = n;
  auto space = [](std::uint8_t c) { return c == ' ' || (c >= '\t' && c <= '\r'); };
  while (b < e && space(field[b])) ++b;
  while (e > b && space(field[e - 1])) --e;
  std::int64_t v = 0;
  for (std::size_t i = b; i < e; ++i) {
    if (field[i] < '0' || field[i] > '7') return std::nullopt;
    if (v >> 58) return std::nullopt;
    v = v * 8 + (field[i] - '0');
  }
  return v;
}

bool tar_checksum_ok(std::span<const std::uint8_t> h) {
  if (h.size() != static_cast<std::size_t>(kTarBlock)) return false;
  const auto stored = parse_tar_number(h.subspan(148, 8));
  if (!stored) return false;
  std::int64_t unsigned_sum = 8 * ' ', signed_sum = 8 * ' ';
  for (std::size_t i = 0; i < h.size(); ++i) {
    if (i >= 148 && i < 156) continue;
    unsigned_sum += h[i];
    signed_sum += static_cast<std::int8_t>(h[i]);
  }
  return *stored == unsigned_sum || *stored == signed_sum;
}

TarReader::TarReader(const ByteSource& source, TarLimits limits, std::int64_t start,
                     std::int64_t chunk_bytes)
    : source_(source), limits_(limits), offset_(start), chunk_(std::max<std::int64_t>(chunk_bytes, kTarBlock)) {}

void TarReader::set_window(std::shared_ptr<const std::vector<std::uint8_t>> bytes, std::int64_t offset) {
  window_ = std::move(bytes);
  window_offset_ = offset;
}

Error TarReader::fail(Error e) {
  error_ = e;
  return e;
}

Result<std::span<const std::uint8_t>> TarReader::bytes_at(std::int64_t offset, std::int64_t n) {
  if (window_ && offset >= window_offset_ &&
      offset - window_offset_ + n <= static_cast<std::int64_t>(window_->size()))
    return std::span<const std::uint8_t>(window_->data() + (offset - window_offset_), n);
  const std::int64_t len = std::min(std::max(chunk_, n), source_.size() - offset);
  if (len < n)
    return data_loss(source_.name() + ": truncated: " + std::to_string(n) + " bytes needed at " +
                     std::to_string(offset) + ", the shard has " + std::to_string(source_.size()));
  auto buf = std::make_shared<std::vector<std::uint8_t>>(static_cast<std::size_t>(len));
  STOKER_RETURN_IF_ERROR(source_.read_at(offset, *buf));
  window_ = std::move(buf);
  window_offset_ = offset;
  return std::span<const std::uint8_t>(window_->data(), n);
}

Result<std::optional<TarMember>> TarReader::next() {
  if (error_) return *error_;
  auto r = read_member();
  if (!r.ok()) return fail(std::move(r).error());
  return r;
}

Result<std::optional<TarMember>> TarReader::read_member() {
  Pending pending;
  const std::string& shard = source_.name();
  for (int hops = 0;; ++hops) {
    const std::int64_t at = offset_;
    const std::string where = shard + ": header at byte " + std::to_string(at);
    if (at == source_.size()) {
      if (pending.chained || hops > 0)
        return data_loss(where + ": the archive ends after an extended header");
      return std::optional<TarMember>();  // no end blocks: tarfile accepts this too
    }
    if (source_.size() - at < kTarBlock) return data_loss(where + ": truncated header");
    STOKER_ASSIGN_OR_RETURN(auto h, bytes_at(at, kTarBlock));
    if (std::all_of(h.begin(), h.end(), [](std::uint8_t b) { return b == 0; })) {
      if (pending.chained || hops > 0)
        return data_loss(where + ": end-of-archive block after an extended header");
      return std::optional<TarMember>();
    }
    if (!tar_checksum_ok(h)) return data_loss(where + ": bad header checksum (corrupt or not a tar)");
    const auto size_field = parse_tar_number(h.subspan(124, 12));
    if (!size_field) return data_loss(where + ": invalid size field");
    std::string name = nts(h.subspan(0, 100));
    char type = static_cast<char>(h[156]);
    const std::int64_t data = at + kTarBlock;
    std::int64_t size = *size_field;

    if (type == 'L' || type == 'K' || type == 'x' || type == 'X' || type == 'g') {
      if (size > source_.size() - data || round_up_block(size) > source_.size() - data)
        return data_loss(where + ": extended header claims " + std::to_string(size) +
                         " bytes past the end of the shard (truncated)");
      if (size > limits_.max_extended_bytes)
        return resource_exhausted(where + ": extended header of " + std::to_string(size) +
                                  " bytes (cap " + std::to_string(limits_.max_extended_bytes) + ")");
      if (hops >= 64) return data_loss(where + ": more than 64 chained extended headers");
      STOKER_ASSIGN_OR_RETURN(auto body, bytes_at(data, size));
      if (type == 'L' || type == 'K' || type == 'x' || type == 'X') {
        if (!pending.chained) {
          pending.chained = true;
          pending.first_offset = at;
        }
      }
      if (type == 'L') {
        if (!pending.name) pending.name = nts(body);
      } else if (type != 'K') {
        STOKER_RETURN_IF_ERROR(parse_pax(body, type == 'g', &pending, where));
      }
      offset_ = data + round_up_block(size);
      continue;
    }
    if (type == 'S') return unimplemented(where + ": GNU sparse member " + quote(name) + " is not supported");

    // tarfile: prefix + "/" + name whenever the prefix field is non-empty (not for GNU types).
    const std::string prefix = nts(h.subspan(345, 155));
    if (!prefix.empty()) name = prefix + "/" + name;
    if (type == '\0' && !name.empty() && name.back() == '/') type = '5';
    if (type == '\0' || type == '7') type = '0';
    if (pending.name) name = *pending.name;
    if (pending.size) size = *pending.size;
    // Data follows regular members and unknown types (tarfile skips it for both); links,
    // directories, devices and FIFOs carry none whatever their size field says.
    static constexpr char kNoData[] = {'1', '2', '3', '4', '5', '6'};
    const bool has_data = std::find(std::begin(kNoData), std::end(kNoData), type) == std::end(kNoData);
    // Its data padded to whole blocks must be there (tarfile: "unexpected end of data").
    if (has_data && (size > source_.size() - data || round_up_block(size) > source_.size() - data)) {
      damaged_member_ = name;
      return data_loss(where + ": member " + quote(name) + " claims " + std::to_string(size) +
                       " bytes, the shard ends " + std::to_string(source_.size() - data) +
                       " bytes later (truncated)");
    }
    TarMember m;
    m.name = std::move(name);
    m.type = type;
    m.regular = type == '0';
    m.offset = pending.chained ? pending.first_offset : at;
    m.data_offset = data;
    m.size = size;
    m.end = data + (has_data ? round_up_block(size) : 0);
    offset_ = m.end;
    return std::optional<TarMember>(std::move(m));
  }
}

}  // namespace stoker::dataset
