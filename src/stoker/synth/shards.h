// `stoker synth --shards N`: the synth set written again as WebDataset shards and as an
// Energon-prepared folder, so tests and benches read the same records from JSONL, from plain
// shards and from an Energon folder with nothing else installed.
// DIR/shards/data-000.tar … (N shards, records in data.jsonl order, contiguous runs): each record
// is one sample, key "%06d" of its line number (0-based): `KEY.json` is the record with each media
// path it names replaced by a part name ("0.jpg", "1.png", "0.mp4" — stoker's CrudeWebdataset
// convention, dataset/chatml.h) and `KEY.<k>.<ext>` that file's bytes; a path whose file does not
// exist (synth's missing_image records) is left as written, so it fails the same way as from
// JSONL. Members are ustar, mode 0644, uid/gid 0, mtime 0: the bytes depend on the records only.
// No `.tar.idx` there: a reader builds it on first scan.
// DIR/energon/: .nv-meta/dataset.yaml (CrudeWebdataset), split.yaml (train: the brace pattern of
// all shards), .info.json (shard_counts in order), shards/data-*.tar hard-linked (copied when the
// file system refuses links) and each one's `.tar.idx`, computed while writing.
// Blocking, single-threaded. Errors: InvalidArgument (N out of range), file I/O errors.
#pragma once

#include <cstdint>
#include <string>

#include "stoker/base/result.h"

namespace stoker::synth {

struct ShardsResult {
  int shards = 0;
  int samples = 0;
  int media_members = 0;
  std::int64_t bytes = 0;  // of all tar files (once)
  std::string shards_pattern;  // DIR/shards/data-{000..N-1}.tar
  std::string energon_dir;     // DIR/energon
};

Result<ShardsResult> write_shards(const std::string& out_dir, int shards);

}  // namespace stoker::synth
