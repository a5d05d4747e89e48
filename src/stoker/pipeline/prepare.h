// The per-sample work before a batch is assembled, shared by every Loader mode: read_and_fetch
// (read the record from the record source → parse → validate → each media part's kind and the
// references it fetches, resolved through the record's MediaResolver — the trust boundary →
// fetch bytes) and prepare (plan every medium from its bytes: headers and packet scans, nothing
// decoded → template + tokenize + labels with the max-length policy → positions). After prepare
// the sample's sizes are known exactly (tokens, rows of every medium), so the engine allocates
// the batch block and then has every medium produce its rows straight into it (emit.cc). A
// sample keeps only its media's encoded bytes until then. A failure is a value (SampleFailure
// naming the stage and, for media, the medium: "video 1: frame 3"), never an error of the run.
// Context is immutable and shared by all threads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "stoker/dataset/conversation.h"
#include "stoker/pipeline/context.h"
#include "stoker/pipeline/media.h"
#include "stoker/pipeline/remote.h"
#include "stoker/text/labels.h"

namespace stoker::pipeline {

struct Fetched {
  Item item;
  std::optional<SampleFailure> failure;
  dataset::Conversation conversation;
  // The conversation's media parts in order: the part (message, part index), its kind, its index
  // among the sample's media of its modality, and its fetches in `bytes` [first, first + count).
  struct MediaPart {
    std::size_t message = 0, part = 0;
    const MediaKind* kind = nullptr;
    std::size_t index = 0;
    std::size_t first = 0, count = 0;
  };
  std::vector<MediaPart> parts;
  std::vector<std::vector<std::uint8_t>> bytes;  // one per fetch, in the parts' order
  SampleLease lease;  // the fetch budget their bytes take until prepare
};

struct Prepared {
  Item item;
  std::optional<SampleFailure> failure;
  // The media the sample keeps (all of them, or a prefix of each modality's after truncation),
  // planned, holding their encoded bytes until they produce their rows at emit.
  std::vector<std::unique_ptr<Medium>> media;
  text::TokenizedSample tokens;
  std::vector<double> positions;  // position_rows × tokens.input_ids.size() (model/family.h)
  // Prepared elsewhere (LoaderConfig::remote): the media's rows arrive at emit (RemoteSamples).
  std::optional<RemotePixels> remote;
  std::int64_t rows() const;  // every medium's rows: the packing plan's vision load
};

Fetched read_and_fetch(const Context& ctx, const Item& item, std::stop_token stop);
// The read half alone (record → conversation → media URIs, one per fetch of `out.parts`); for
// the asynchronous fetch path.
Fetched read_stage(const Context& ctx, const Item& item, std::vector<std::string>* uris);
// One fetch per reference of each media part's kind (an image, a video file, a video frame):
// ResourceExhausted when a record references more than `max_media` (max_media_per_record), before
// any is resolved, budgeted or fetched. read_stage applies it; so does `stoker render`.
Status check_media_count(const dataset::Conversation& conv, std::int64_t max_media);
// Fetch `fetch` of `f` failed: stage fetch, the medium named ("video 1: frame 3").
SampleFailure fetch_failure(const Context& ctx, const Fetched& f, std::size_t fetch,
                            const Error& e);
// `item`'s failure at `stage`, named by its record's origin.
SampleFailure sample_failure(const Context& ctx, const Item& item, FailureStage stage,
                             const Error& e);
// Medium `index` of `modality` (among the sample's) failed while produced into its batch.
SampleFailure decode_failure(const Context& ctx, const Item& item, const Modality& modality,
                             std::size_t index, const Error& e);
Prepared prepare(const Context& ctx, Fetched&& fetched);

}  // namespace stoker::pipeline
