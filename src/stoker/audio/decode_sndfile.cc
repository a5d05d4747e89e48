// The libsndfile backend: SF_VIRTUAL_IO over the bytes; sf_readf_float as python-soundfile
// reads (normalised floats); at most the header's frame count, as soundfile's read(frames=-1)
// asks for exactly `frames − tell()`.
#include <sndfile.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "stoker/audio/decode.h"

namespace stoker::audio::detail {
namespace {

struct Memory {
  const std::uint8_t* data = nullptr;
  sf_count_t size = 0;
  sf_count_t pos = 0;
};

sf_count_t vio_length(void* user) { return static_cast<Memory*>(user)->size; }

sf_count_t vio_seek(sf_count_t offset, int whence, void* user) {
  auto* m = static_cast<Memory*>(user);
  sf_count_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? m->pos : whence == SEEK_END ? m->size : -1;
  if (base < 0) return -1;
  const sf_count_t to = base + offset;
  if (to < 0) return -1;
  m->pos = to;  // past the end is allowed (reads then return 0), as with a file
  return to;
}

sf_count_t vio_read(void* ptr, sf_count_t count, void* user) {
  auto* m = static_cast<Memory*>(user);
  if (count <= 0 || m->pos >= m->size) return 0;
  const sf_count_t n = std::min(count, m->size - m->pos);
  std::memcpy(ptr, m->data + m->pos, static_cast<std::size_t>(n));
  m->pos += n;
  return n;
}

sf_count_t vio_write(const void*, sf_count_t, void*) { return 0; }
sf_count_t vio_tell(void* user) { return static_cast<Memory*>(user)->pos; }

const char* major_name(int format) {
  switch (format & SF_FORMAT_TYPEMASK) {
    case SF_FORMAT_WAV: return "WAV";
    case SF_FORMAT_AIFF: return "AIFF";
    case SF_FORMAT_AU: return "AU";
    case SF_FORMAT_RAW: return "RAW";
    case SF_FORMAT_W64: return "W64";
    case SF_FORMAT_WAVEX: return "WAVEX";
    case SF_FORMAT_FLAC: return "FLAC";
    case SF_FORMAT_CAF: return "CAF";
    case SF_FORMAT_OGG: return "OGG";
    case SF_FORMAT_RF64: return "RF64";
    case SF_FORMAT_MPEG: return "MP3";
    case SF_FORMAT_NIST: return "NIST";
    case SF_FORMAT_VOC: return "VOC";
    default: return "OTHER";
  }
}

const char* subtype_name(int format) {
  switch (format & SF_FORMAT_SUBMASK) {
    case SF_FORMAT_PCM_S8: return "PCM_S8";
    case SF_FORMAT_PCM_16: return "PCM_16";
    case SF_FORMAT_PCM_24: return "PCM_24";
    case SF_FORMAT_PCM_32: return "PCM_32";
    case SF_FORMAT_PCM_U8: return "PCM_U8";
    case SF_FORMAT_FLOAT: return "FLOAT";
    case SF_FORMAT_DOUBLE: return "DOUBLE";
    case SF_FORMAT_ULAW: return "ULAW";
    case SF_FORMAT_ALAW: return "ALAW";
    case SF_FORMAT_IMA_ADPCM: return "IMA_ADPCM";
    case SF_FORMAT_MS_ADPCM: return "MS_ADPCM";
    case SF_FORMAT_VORBIS: return "VORBIS";
    case SF_FORMAT_OPUS: return "OPUS";
    case SF_FORMAT_MPEG_LAYER_I: return "MPEG_LAYER_I";
    case SF_FORMAT_MPEG_LAYER_II: return "MPEG_LAYER_II";
    case SF_FORMAT_MPEG_LAYER_III: return "MPEG_LAYER_III";
    default: return "OTHER";
  }
}

// libsndfile clamps a data chunk that claims more bytes than the file holds and logs
// "data : CLAIMED (should be ACTUAL)" (WAV family; "SSND" for AIFF). A claim that is larger is
// a truncated file — unless it is a streaming writer's placeholder (0 or ~4 GiB).
bool header_claims_more(SNDFILE* sf) {
  char log[4096] = {};
  sf_command(sf, SFC_GET_LOG_INFO, log, sizeof log);
  for (const char* tag : {"data : ", "SSND : "}) {
    const char* at = std::strstr(log, tag);
    while (at) {
      unsigned long long claimed = 0, actual = 0;
      if (std::sscanf(at + std::strlen(tag), "%llu (should be %llu)", &claimed, &actual) == 2 &&
          claimed > actual && claimed < 0xFFFFF000ull) {
        return true;
      }
      at = std::strstr(at + 1, tag);
    }
  }
  return false;
}

class SndfileSource final : public AudioSource {
 public:
  SndfileSource(AudioInfo info, const AudioLimits& limits, std::unique_ptr<Memory> mem, SNDFILE* sf,
                bool truncated_header)
      : AudioSource(std::move(info), limits), mem_(std::move(mem)), sf_(sf),
        truncated_header_(truncated_header) {}
  ~SndfileSource() override { sf_close(sf_); }

 protected:
  Result<std::int64_t> read_impl(float* out, std::int64_t max_frames) override {
    std::int64_t want = max_frames;
    if (info_.frames >= 0) want = std::min(want, info_.frames - position_);
    if (want <= 0) return std::int64_t{0};
    const sf_count_t n = sf_readf_float(sf_, out, want);
    if (sf_error(sf_) != SF_ERR_NO_ERROR) {
      return data_loss("audio: " + info_.container + " decoding failed after " +
                       std::to_string(position_) + " frames (" + sf_strerror(sf_) + "; truncated or corrupt?)");
    }
    if (n < 0) return data_loss("audio: libsndfile read failed");
    return static_cast<std::int64_t>(n);
  }

  Status seek_impl(std::int64_t frame) override {
    if (sf_seek(sf_, frame, SEEK_SET) != frame) {
      return data_loss("audio: cannot seek to frame " + std::to_string(frame) + " (" + sf_strerror(sf_) + ")");
    }
    position_ = frame;
    return {};
  }

  Status at_end() override {
    if (truncated_header_) {
      return data_loss("audio: truncated (the " + info_.container + " header's data size is larger than the file)");
    }
    if (info_.frames >= 0 && position_ < info_.frames) {
      // MP3 frame counts may be an estimate (no Xing/LAME header): two MPEG frames of slack.
      const bool mp3 = info_.container == "MP3";
      if (!mp3 || info_.frames - position_ > 2 * 1152) {
        return data_loss("audio: truncated: the header says " + std::to_string(info_.frames) +
                         " frames, " + std::to_string(position_) + " decoded");
      }
    }
    return {};
  }

 private:
  std::unique_ptr<Memory> mem_;
  SNDFILE* sf_;
  bool truncated_header_;
};

}  // namespace

Result<std::unique_ptr<AudioSource>> open_sndfile(std::span<const std::uint8_t> bytes,
                                                  const AudioLimits& limits) {
  auto mem = std::make_unique<Memory>();
  mem->data = bytes.data();
  mem->size = static_cast<sf_count_t>(bytes.size());
  SF_VIRTUAL_IO vio{vio_length, vio_seek, vio_read, vio_write, vio_tell};
  SF_INFO sfi{};
  SNDFILE* sf = sf_open_virtual(&vio, SFM_READ, &sfi, mem.get());
  if (!sf) {
    // Any open failure: librosa then tries audioread/FFmpeg (the caller does the same).
    return not_found(std::string("libsndfile: ") + sf_strerror(nullptr));
  }
  AudioInfo info;
  info.backend = Backend::kSndfile;
  info.container = major_name(sfi.format);
  info.codec = subtype_name(sfi.format);
  info.sample_rate = sfi.samplerate;
  info.channels = sfi.channels;
  info.frames = sfi.frames >= 0 && sfi.frames < (sf_count_t{1} << 62) ? sfi.frames : -1;
  info.frames_exact = info.frames >= 0 && (sfi.format & SF_FORMAT_TYPEMASK) != SF_FORMAT_MPEG;
  Status ok = check_info(info, limits);
  if (!ok.ok()) {
    sf_close(sf);
    return std::move(ok).error();
  }
  const bool truncated = header_claims_more(sf);
  return std::unique_ptr<AudioSource>(
      new SndfileSource(std::move(info), limits, std::move(mem), sf, truncated));
}

}  // namespace stoker::audio::detail
