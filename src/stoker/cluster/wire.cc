#include "stoker/cluster/wire.h"

#include <cstring>
#include <type_traits>

#include "stoker/base/byte_reader.h"
#include "stoker/base/byte_writer.h"

namespace stoker::cluster {

Result<Wire> parse_wire(std::string_view s) {
  if (s == "float") return Wire::kFloat;
  if (s == "uint8") return Wire::kUint8;
  if (s == "encoded") return Wire::kEncoded;
  return invalid_argument("--wire float|uint8|encoded, not '" + std::string(s) + "'");
}

const char* wire_name(Wire w) {
  switch (w) {
    case Wire::kFloat: return "float";
    case Wire::kUint8: return "uint8";
    case Wire::kEncoded: return "encoded";
  }
  return "?";
}

namespace {

using Writer = ByteWriter;
using Reader = ByteReader;

constexpr std::uint32_t kMaxMedia = 1 << 16;  // per sample; a larger count is a broken message

}  // namespace

std::vector<std::uint8_t> encode(const Request& r) {
  Writer w;
  w.put(r.ticket);
  w.put(r.seq);
  w.put(r.epoch);
  w.put(r.k);
  w.put(r.sample);
  return w.take();
}

Result<Request> decode_request(const std::vector<std::uint8_t>& bytes) {
  Reader rd(bytes);
  Request r;
  rd.get(&r.ticket) && rd.get(&r.seq) && rd.get(&r.epoch) && rd.get(&r.k) && rd.get(&r.sample);
  if (!rd.done()) return data_loss("cluster: malformed request (" + std::to_string(bytes.size()) + " bytes)");
  return r;
}

std::uint64_t SampleResult::payload_bytes() const {
  std::uint64_t n = 0;
  for (std::uint64_t b : payloads) n += b;
  return n;
}

std::vector<std::uint8_t> encode(const SampleResult& r, bool with_media_bytes) {
  Writer w;
  const pipeline::Prepared& p = r.prepared;
  w.put(r.ticket);
  w.put(p.item.seq);
  w.put(p.item.sample);
  w.put<std::uint8_t>(p.failure ? 1 : 0);
  if (p.failure) {
    const pipeline::SampleFailure& f = *p.failure;
    w.put(f.sample);
    w.str(f.file);
    w.put(f.line);
    w.put(static_cast<std::uint8_t>(f.stage));
    w.put(static_cast<std::uint8_t>(f.code));
    w.str(f.reason);
  }
  w.vec(p.tokens.input_ids);
  w.vec(p.tokens.labels);
  w.put<std::uint64_t>(p.tokens.vision.size());
  for (const text::VisionSpan& v : p.tokens.vision) {
    w.put<std::uint8_t>(v.video ? 1 : 0);
    w.put<std::int32_t>(v.media_index);
    w.put<std::int32_t>(v.group);
    w.put(v.begin);
    w.put(v.count);
  }
  w.put<std::int32_t>(p.tokens.num_images);
  w.put<std::int32_t>(p.tokens.num_videos);
  w.put<std::int32_t>(p.tokens.num_messages);
  w.put<std::uint8_t>(p.tokens.truncated ? 1 : 0);
  w.vec(p.positions);
  w.put<std::uint32_t>(static_cast<std::uint32_t>(p.media.size()));
  for (const auto& m : p.media) {
    w.put<std::uint8_t>(pipeline::kind_id(m->kind()));
    m->save(w, with_media_bytes);
  }
  w.vec(r.payloads);
  return w.take();
}

Result<SampleResult> decode_result(const std::vector<std::uint8_t>& bytes) {
  Reader rd(bytes);
  SampleResult r;
  pipeline::Prepared& p = r.prepared;
  auto bad = [&](const char* what) {
    return data_loss(std::string("cluster: malformed result message (") + what + ", " +
                     std::to_string(bytes.size()) + " bytes)");
  };
  std::uint8_t has_failure = 0;
  if (!(rd.get(&r.ticket) && rd.get(&p.item.seq) && rd.get(&p.item.sample) && rd.get(&has_failure)))
    return bad("header");
  if (has_failure) {
    pipeline::SampleFailure f;
    std::uint8_t stage = 0, code = 0;
    if (!(rd.get(&f.sample) && rd.str(&f.file) && rd.get(&f.line) && rd.get(&stage) &&
          rd.get(&code) && rd.str(&f.reason)) ||
        stage >= pipeline::kNumFailureStages || code > static_cast<int>(kLastErrorCode))
      return bad("failure");
    f.stage = static_cast<pipeline::FailureStage>(stage);
    f.code = static_cast<ErrorCode>(code);
    p.failure = std::move(f);
  }
  std::uint64_t spans = 0;
  if (!(rd.vec(&p.tokens.input_ids) && rd.vec(&p.tokens.labels) && rd.get(&spans)) ||
      spans > bytes.size())
    return bad("tokens");
  for (std::uint64_t i = 0; i < spans; ++i) {
    text::VisionSpan v;
    std::uint8_t video = 0;
    std::int32_t media = 0, group = 0;
    if (!(rd.get(&video) && rd.get(&media) && rd.get(&group) && rd.get(&v.begin) && rd.get(&v.count)))
      return bad("vision spans");
    v.video = video != 0;
    v.modality = v.video ? "video" : "image";
    v.media_index = media;
    v.group = group;
    p.tokens.vision.push_back(v);
  }
  std::int32_t ni = 0, nv = 0, nm = 0;
  std::uint8_t truncated = 0;
  std::uint32_t media = 0;
  if (!(rd.get(&ni) && rd.get(&nv) && rd.get(&nm) && rd.get(&truncated) && rd.vec(&p.positions) &&
        rd.get(&media)) ||
      media > kMaxMedia)
    return bad("counts");
  p.tokens.num_images = ni;
  p.tokens.num_videos = nv;
  p.tokens.num_messages = nm;
  p.tokens.truncated = truncated != 0;
  for (std::uint32_t i = 0; i < media; ++i) {
    std::uint8_t id = 0;
    if (!rd.get(&id)) return bad("media");
    const pipeline::MediaKind* kind = pipeline::kind_by_id(id);
    if (kind == nullptr) return bad("media kind");
    Result<std::unique_ptr<pipeline::Medium>> m = kind->load(rd);
    if (!m.ok()) return bad("media plans");
    p.media.push_back(std::move(m).value());
  }
  if (!rd.vec(&r.payloads) || !rd.done()) return bad("trailer");
  const std::size_t len = p.tokens.input_ids.size();
  // Positions: some rows × len (the model's rule; the engine checks how many).
  const bool positions_fit = len == 0 ? p.positions.empty()
                                      : p.positions.size() % len == 0 && p.positions.size() / len <= 8;
  if (!p.failure && (p.tokens.labels.size() != len || !positions_fit ||
                     (!r.payloads.empty() && r.payloads.size() != p.media.size())))
    return bad("inconsistent sizes");
  return r;
}

std::uint64_t payload_bytes(const pipeline::Medium& m, Wire wire, const pipeline::MediaEnv& env,
                            image::PixelDType dtype) {
  switch (wire) {
    case Wire::kEncoded: return 0;
    case Wire::kUint8: return m.resized_bytes();
    case Wire::kFloat: {  // the batch's rows: finished, or uint8 ones for the device (finish)
      const image::PixelDType d = pipeline::rows_dtype(m.modality(), dtype);
      if (d == image::PixelDType::kUInt8) {
        return static_cast<std::uint64_t>(m.rows()) * pipeline::row_bytes(m.modality(), env, dtype);
      }
      // A finished medium's own width (an audio clip may be narrower than its modality's).
      return static_cast<std::uint64_t>(m.rows()) * static_cast<std::uint64_t>(m.columns(env)) *
             (d == image::PixelDType::kFloat32 ? 4 : 2);
    }
  }
  return 0;
}

}  // namespace stoker::cluster
