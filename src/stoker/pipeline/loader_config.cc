#include "stoker/pipeline/loader_config.h"

#include <limits>

namespace stoker::pipeline {

Status LoaderConfig::validate() const {
  if (data.empty()) return invalid_argument("loader: no data files");
  if (batch_size < 1) return invalid_argument("loader: batch_size must be at least 1");
  if (max_length < 0) return invalid_argument("loader: max_length must be >= 0");
  if (padding == Padding::kFixed && max_length == 0) {
    return invalid_argument("loader: fixed padding needs max_length");
  }
  if (epochs == 0 || epochs < -1) return invalid_argument("loader: epochs must be >= 1 or -1");
  if (threads < 0) return invalid_argument("loader: threads must be >= 0");
  if (io_threads < 1) return invalid_argument("loader: io_threads must be >= 1");
  if (prefetch < 1) return invalid_argument("loader: prefetch must be >= 1");
  if (window < 0) return invalid_argument("loader: window must be >= 0");
  if (fetch_bytes_in_flight < 1) return invalid_argument("loader: fetch_bytes_in_flight must be > 0");
  if (max_object_bytes < 1) return invalid_argument("loader: max_object_bytes must be >= 1");
  if (max_record_bytes < 1 || max_record_bytes > (std::int64_t{4} << 30)) {
    return invalid_argument("loader: max_record_bytes must be in [1, 4 GiB]");
  }
  if (max_manifest_bytes < 1) return invalid_argument("loader: max_manifest_bytes must be >= 1");
  if (max_media_per_record < 1) {
    return invalid_argument("loader: max_media_per_record must be >= 1");
  }
  if (io_deadline_ms < 0) return invalid_argument("loader: io_deadline_ms must be >= 0");
  if (io_max_attempts < 0) return invalid_argument("loader: io_max_attempts must be >= 0");
  if (manifest_chunk_bytes < 1) return invalid_argument("loader: manifest_chunk_bytes must be >= 1");
  for (const std::string& r : media_roots) {
    if (r.empty()) return invalid_argument("loader: an empty media root");
  }
  for (const std::string& b : allow_buckets) {
    if (b.empty()) return invalid_argument("loader: an empty bucket name in allow_buckets");
  }
  if (errors.max_error_rate < 0 || errors.max_error_rate > 1) {
    return invalid_argument("loader: max_error_rate must be in [0, 1]");
  }
  if (packing.batching != Batching::kFixed) {
    const std::int64_t budget = pack_capacity();
    // cu_seqlens are int32; 0 would mean "no limit", which a token budget cannot be.
    if (packing.max_tokens < 0 || budget < 1 || budget > std::numeric_limits<std::int32_t>::max()) {
      return invalid_argument("loader: packing needs max_tokens (or max_length) in [1, 2^31-1]");
    }
    if (packing.window < 1) return invalid_argument("loader: packing window must be >= 1");
    if (packing.position_rows != 3 && packing.position_rows != 4) {
      return invalid_argument("loader: position_rows must be 3 or 4");
    }
    if (packing.align < 1 || packing.align > budget) {
      return invalid_argument("loader: pack align must be in [1, max_tokens]");
    }
    if (padding == Padding::kFixed) {
      return invalid_argument("loader: fixed padding (pad to max_length) does not combine with "
                              "packing or token budgets");
    }
  }
  if (!trace_path.empty() || tracer != nullptr) STOKER_RETURN_IF_ERROR(trace.validate());
  return arena.validate();
}

model::ModelOptions model_options(const LoaderConfig& config) {
  model::ModelOptions o;
  o.tokenizer = config.tokenizer;
  o.apply_exif_orientation = config.apply_exif_orientation;
  o.small_images = config.small_images;
  o.video_time_index = config.video_time_index;
  o.parsed = config.model_config;
  o.chat_template = config.chat_template;
  o.chat_template_kwargs = config.chat_template_kwargs;
  return o;
}

Result<model::ModelConfig> resolved_model(const LoaderConfig& config) {
  return model::load_model(config.model, model_options(config));
}

}  // namespace stoker::pipeline
