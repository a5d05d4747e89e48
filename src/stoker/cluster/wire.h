// What crosses the network between the roles of `stoker cluster` (README.md "Messages"):
// a request (receiver → worker: one item of the receiver's schedule), a result (worker →
// receiver: the prepared sample — tokens, labels, positions, image plans, or its failure — and,
// on the encoded wire, the media bytes), then the sample's pixels as one separate payload message
// (float/bf16 rows, or resized uint8 RGB) that the receiver lands in its batch block. Encoding is
// little-endian fixed-width fields; decoding is bounds-checked (a short or inconsistent message
// is DataLoss naming what was wrong, never a read past the end).
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
  kFloat,    // finished pixel rows (the pixel dtype: float32 or bf16), straight into the block
  kUint8,    // resized uint8 RGB; the receiver normalises + patchifies (bit-identical)
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

// A prepared sample as the worker made it. `payload_bytes` > 0: a payload message with tag
// payload_tag(ticket) follows (its form is the job's wire).
struct SampleResult {
  std::uint64_t ticket = 0;
  pipeline::Prepared prepared;  // item: only seq/sample are meaningful; encoded: kEncoded wire
  std::uint64_t payload_bytes = 0;
};
std::vector<std::uint8_t> encode(const SampleResult& r);
Result<SampleResult> decode_result(const std::vector<std::uint8_t>& bytes);

// Payload size of a prepared sample on `wire` (0 for kEncoded: the bytes ride in the result).
std::uint64_t payload_bytes(const pipeline::Prepared& p, Wire wire, std::int64_t columns,
                            image::PixelDType dtype);

}  // namespace stoker::cluster
