// WebDataset samples -> SourceRecords, in the two sample formats stoker reads.
//
// CrudeWebdataset — stoker's convention (Energon leaves crude samples to a user "cooker"; this is
// ours): the sample's `json` part (else its only part ending in ".json") is the record, in any
// form dataset::parse_record reads. A media reference in it that equals the name of one of the
// sample's parts — the part name ("jpg", "0.png"), the member's base name ("abc.0.png") or the
// full member name — is that part's bytes (a byte range of the shard); any other reference is a
// path resolved against the shard's folder through the trust boundary.
//
// ChatMLWebdataset — Megatron-Bridge's format (data/energon/task_encoder_utils.py,
// data/conversation_processing.py at Megatron-Bridge@067f987): the `conversation` field's part
// holds JSON — a list of turns, or an object whose "conversations" / "messages" /
// "conversation" key (that priority) holds them, with optional top-level "tools". Turns are
// ShareGPT ({"from": human|gpt|…, "value"}; human -> user, gpt -> assistant) or OpenAI ({"role",
// "content"}; other keys such as tool_calls kept). Media placeholders are typed parts
// ({"type":"image"} / {"type":"video"} without a path) or `<image>` / `<video>` tags in string
// content, bound in order to the `imgs` / `videos` fields: by the part's last extension, `jpgs`
// is a pickled list of encoded images, an image extension (jpg jpeg png webp ppm pgm pbm pnm) one
// image; `videos` / `mp4s` a pickled list of videos, each a list of JPEG frames; mp4 / webm /
// mkv / mov / avi one video file. The record comes out in OpenAI form with each placeholder
// filled by a reference "@imgs/0", "@videos/1/3" (frame 3 of video 1), "@videos/0" (a file).
// Differences from Bridge, on purpose: placeholders and media must match in number (Bridge
// leaves extra placeholders empty), and text around a tag is kept verbatim (Bridge strips
// spaces), as stoker does for every record.
// Pure functions of the sample; thread-safe. Errors: InvalidArgument / DataLoss naming
// "shard: sample i (key 'k'): part 'p'".
#pragma once

#include "stoker/base/result.h"
#include "stoker/dataset/energon.h"
#include "stoker/dataset/pickle.h"
#include "stoker/dataset/source_record.h"
#include "stoker/dataset/wds.h"

namespace stoker::dataset {

// "shard: sample i (key 'k')"
std::string sample_location(const WdsShard& shard, const WdsSample& sample);

Result<SourceRecord> crude_record(const WdsShard& shard, const WdsSample& sample);
Result<SourceRecord> chatml_record(const WdsShard& shard, const WdsSample& sample,
                                   const EnergonSampleConfig& config, const PickleLimits& limits = {});

}  // namespace stoker::dataset
