// The record-source kinds of issue 23 behind the engine's seam (store_fetcher.h): WebDataset
// shard lists ("shards/train-{000..127}.tar", "::"-separated lists) and Energon-prepared folders
// (a folder holding .nv-meta/), local, s3:// or http(s)://, through the run's io::ObjectStore.
// - Shards are opened through the store: local ones with their `.tar.idx` read or built and
//   cached (beside the shard, else in the cache folder: dataset/wds.h); remote ones by HEAD
//   (size, ETag) and ranged GETs with If-Match, their index read from beside the shard, else
//   from the cache folder (named by URI + ETag + size), else built by one scan and cached there.
// - Records are dataset::ShardSource's SourceRecords: the JSON text, the origin (shard name and
//   1-based sample number in the shard), and the media context: a reference naming bytes inside
//   the shard becomes a range URI (range_uri, store_fetcher.h) of the shard object, read by one
//   ranged read — never a temporary file; any other reference resolves against the shard's
//   folder through the trust boundary (io::MediaScope), the dataset's folders being its roots.
// - media(id) answers for the record this thread read last (read() keeps its media context in a
//   thread-local slot; asked for another id, it reads that record again).
// Compressed JSONL is the JSONL kind's (store_fetcher.cc): decompress_remote_jsonl below.
// Thread-safe once opened. Errors at open: those of the shard list (brace expansion over its cap,
// a missing or unreadable shard of a plain list), of the Energon metadata (file:line:col), of
// the store.
#pragma once

#include <string>
#include <string_view>

#include "stoker/base/result.h"
#include "stoker/dataset/jsonl_file.h"
#include "stoker/io/object_store.h"
#include "stoker/pipeline/store_fetcher.h"

namespace stoker::pipeline {

// The two kinds; store_fetcher.cc registers them beside JSONL.
const RecordSourceKind* wds_record_source_kind();
const RecordSourceKind* energon_record_source_kind();

// A spec naming tar shards: it (or each "::" part) ends with ".tar" (brace patterns included).
bool is_shard_list_spec(std::string_view spec);
// A local folder with a .nv-meta folder, or an s3:// / http(s):// URI ending with '/'.
bool is_energon_spec(std::string_view spec);

// One Energon folder's split part as a record source (the energon kind opens "train"); its scope.
Result<std::unique_ptr<dataset::RecordSource>> open_energon_split(const std::string& spec, const std::string& split_part,
                                                                  const SourceEnv& env);
Result<io::MediaScope> energon_media_scope(std::string_view spec, const io::MediaAccess& access);

// A remote `.jsonl.gz` / `.jsonl.zst` streamed (ranged GETs, If-Match) through the decompressor
// into `cache_dir` (named by URI + ETag + size; reused when present), bounded by the caps of
// `options`. Returns the plain file's path.
Result<std::string> decompress_remote_jsonl(io::ObjectStore& store, const std::string& uri,
                                            const std::string& cache_dir,
                                            const dataset::DecompressOptions& options);

}  // namespace stoker::pipeline
