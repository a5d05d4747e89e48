// What crosses the network between the roles of `stoker cluster` (README.md "Messages"):
// a request (receiver → worker: one item of the receiver's schedule), a result (worker →
// receiver: the prepared sample — tokens, labels, positions, and every medium's plan in its
// kind's wire form (pipeline/media.h), or the sample's failure — and, on the encoded wire, the
// media's bytes), then one payload message per medium (its float/bf16 rows, or its resized uint8
// pixels) that the receiver lands in its batch block. Every media kind rides every wire.
// Encoding is little-endian fixed-width fields; decoding is bounds-checked (a short or
// inconsistent message is DataLoss naming what was wrong, never a read past the end).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "stoker/base/result.h"
#include "stoker/pipeline/prepare.h"

namespace stoker::cluster {

// What a worker ships per sample (`--wire`).
enum class Wire {
  kFloat,    // the batch's rows (the pixel dtype: float32 or bf16; with --finish device the
             // resized uint8 pixels), straight into the block
  kUint8,    // resized uint8 RGB; the receiver normalises + patchifies (bit-identical); with
             // --finish device it copies the bytes as they are (the device finishes)
  kEncoded,  // the compressed media bytes; the receiver decodes, resizes, normalises
};
Result<Wire> parse_wire(std::string_view s);
const char* wire_name(Wire w);

// MPI tags. Payload tags carry the ticket: kPayloadBase + ticket % kPayloadTags (tickets in
// flight between two ranks are far fewer than kPayloadTags).
inline constexpr int kTagRequest = 1;
inline constexpr int kTagResult = 2;
inline constexpr int kTagStop = 3;
inline constexpr int kPayloadBase = 16;
inline constexpr int kPayloadTags = 1 << 20;
inline int payload_tag(std::uint64_t ticket) {
  return kPayloadBase + static_cast<int>(ticket % kPayloadTags);
}

struct Request {
  std::uint64_t ticket = 0;
  std::uint64_t seq = 0, epoch = 0, k = 0, sample = 0;
};
std::vector<std::uint8_t> encode(const Request& r);
Result<Request> decode_request(const std::vector<std::uint8_t>& bytes);

// A prepared sample as the worker made it. payloads[j] > 0: medium j's payload message follows
// (tag payload_tag(ticket), in media order; its form is the job's wire).
struct SampleResult {
  std::uint64_t ticket = 0;
  pipeline::Prepared prepared;  // item: only seq/sample are meaningful
  std::vector<std::uint64_t> payloads;  // one per medium of prepared.media, or none
  std::uint64_t payload_bytes() const;  // their sum
};
// `with_media_bytes`: the media's encoded bytes ride in the result (the encoded wire).
std::vector<std::uint8_t> encode(const SampleResult& r, bool with_media_bytes);
Result<SampleResult> decode_result(const std::vector<std::uint8_t>& bytes);

// The payload of medium `m` on `wire` (0 for kEncoded: its bytes ride in the result): its rows
// (float) or its resized pixels (uint8).
std::uint64_t payload_bytes(const pipeline::Medium& m, Wire wire, const pipeline::MediaEnv& env,
                            image::PixelDType dtype);

}  // namespace stoker::cluster
