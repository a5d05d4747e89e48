"""The Python reference path for audio, as qwen-omni-utils + transformers run it without stoker.

Nothing here imports stoker. Debian has neither librosa nor python-soxr, so their few lines are
re-written here from their sources, on the real libraries underneath:

- qwen-omni-utils 0.0.3 (QwenLM/Qwen2.5-Omni @ 3803ca60, qwen_omni_utils/v2_5/audio_process.py):
  every audio (and, with use_audio_in_video, every video's audio track) is
  `librosa.load(path, sr=16000)[0]`.
- librosa 0.11.0 (librosa/librosa @ af8c839f, core/audio.py, util/utils.py): `load` reads with
  soundfile (python3-soundfile 0.12.1 on libsndfile 1.2.0) as float32; when libsndfile cannot
  open the file it falls back to audioread (python3-audioread 2.1.9: the `ffmpeg` CLI with
  `-f s16le`, so 16-bit samples, `buf_to_float` = int16 · 2⁻¹⁵). Then `to_mono` =
  `np.mean(y, axis=0)` in float32, then `resample(res_type="soxr_hq")`: unchanged when the rate
  is already 16 kHz, else `soxr.resample(y, sr, 16000, quality="soxr_hq")` and
  `fix_length(size=int(np.ceil(n * (16000 / sr))))` (zero padding or a cut).
- python-soxr (dofuuz/python-soxr @ 599e687, src/soxr/__init__.py, src/soxr_ext.cpp): a 1-D
  float32 array goes to `csoxr_split_ch_float32`: soxr_create(in, out, 1, io float32 split,
  soxr_quality_spec(SOXR_HQ, 0), runtime NULL), input fed in chunks of
  `max(1000, 48000·in/out)` samples, output buffer `n·out/in + 1`, one flush call. Here the same
  calls go to Debian's libsoxr 0.1.3 through ctypes (python-soxr bundles its own libsoxr build).
- transformers' WhisperFeatureExtractor, NumPy path (huggingface/transformers 4.57,
  models/whisper/feature_extraction_whisper.py + audio_utils.py + feature_extraction_sequence_utils
  .py): pad/truncate (right, 0.0), `spectrogram(window_function(400, "hann"), frame_length=400,
  hop_length=160, power=2.0, mel_filters, log_mel="log10")` (reflect padding by 200, float64 rfft
  stored as complex64, |X|² in float64, mel filters float64, max(1e-10, ·), log10, float32),
  drop the last frame, max(x, max − 8), (x + 4) / 4; attention mask `mask[:, ::160]` minus its last
  column when the padded length is not a multiple of 160.
"""
import ctypes
import ctypes.util
import math
import subprocess

import numpy as np

SAMPLE_RATE = 16000
N_FFT = 400
HOP = 160

# ---------------------------------------------------------------------------------------------
# libsoxr through ctypes (soxr.h of libsoxr-dev 0.1.3)


class _IoSpec(ctypes.Structure):
    _fields_ = [("itype", ctypes.c_int), ("otype", ctypes.c_int), ("scale", ctypes.c_double),
                ("e", ctypes.c_void_p), ("flags", ctypes.c_ulong)]


class _QualitySpec(ctypes.Structure):
    _fields_ = [("precision", ctypes.c_double), ("phase_response", ctypes.c_double),
                ("passband_end", ctypes.c_double), ("stopband_begin", ctypes.c_double),
                ("e", ctypes.c_void_p), ("flags", ctypes.c_ulong)]


SOXR_HQ = 4          # SOXR_20_BITQ
SOXR_FLOAT32_S = 4   # split channels, float32
_soxr = None


def _lib():
    global _soxr
    if _soxr is None:
        lib = ctypes.CDLL(ctypes.util.find_library("soxr") or "libsoxr.so.0")
        lib.soxr_quality_spec.restype = _QualitySpec
        lib.soxr_quality_spec.argtypes = [ctypes.c_ulong, ctypes.c_ulong]
        lib.soxr_io_spec.restype = _IoSpec
        lib.soxr_io_spec.argtypes = [ctypes.c_int, ctypes.c_int]
        lib.soxr_create.restype = ctypes.c_void_p
        lib.soxr_create.argtypes = [ctypes.c_double, ctypes.c_double, ctypes.c_uint,
                                    ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(_IoSpec),
                                    ctypes.POINTER(_QualitySpec), ctypes.c_void_p]
        lib.soxr_process.restype = ctypes.c_char_p
        lib.soxr_process.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                                     ctypes.POINTER(ctypes.c_size_t), ctypes.c_void_p,
                                     ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t)]
        lib.soxr_delete.restype = None
        lib.soxr_delete.argtypes = [ctypes.c_void_p]
        lib.soxr_version.restype = ctypes.c_char_p
        _soxr = lib
    return _soxr


def soxr_version():
    return _lib().soxr_version().decode()


def soxr_resample(x, in_rate, out_rate):
    """python-soxr's csoxr_split_ch<float> for one channel, on Debian's libsoxr."""
    lib = _lib()
    x = np.ascontiguousarray(x, dtype=np.float32)
    ilen = x.shape[0]
    in_rate, out_rate = float(in_rate), float(out_rate)
    olen = int(ilen * out_rate / in_rate + 1)      # size_t(ilen * out_rate / in_rate + 1)
    err = ctypes.c_char_p()
    io = lib.soxr_io_spec(SOXR_FLOAT32_S, SOXR_FLOAT32_S)
    q = lib.soxr_quality_spec(SOXR_HQ, 0)
    h = lib.soxr_create(in_rate, out_rate, 1, ctypes.byref(err), ctypes.byref(io), ctypes.byref(q), None)
    if err.value:
        raise RuntimeError(err.value.decode())
    div_len = int(max(1000.0, 48000 * in_rate / out_rate))
    y = np.zeros(olen, dtype=np.float32)
    out_pos = 0
    odone = ctypes.c_size_t(0)
    base_in = x.ctypes.data
    base_out = y.ctypes.data
    try:
        for idx in range(0, ilen, div_len):
            ibuf = ctypes.c_void_p(base_in + 4 * idx)
            obuf = ctypes.c_void_p(base_out + 4 * out_pos)
            e = lib.soxr_process(h, ctypes.byref(ibuf), min(div_len, ilen - idx), None,
                                 ctypes.byref(obuf), olen - out_pos, ctypes.byref(odone))
            if e:
                raise RuntimeError(e.decode())
            out_pos += odone.value
        obuf = ctypes.c_void_p(base_out + 4 * out_pos)
        e = lib.soxr_process(h, None, 0, None, ctypes.byref(obuf), olen - out_pos, ctypes.byref(odone))
        if e:
            raise RuntimeError(e.decode())
        out_pos += odone.value
    finally:
        lib.soxr_delete(h)
    return y[:out_pos]


# ---------------------------------------------------------------------------------------------
# librosa.load(path, sr=16000)


def _soundfile_read(path, offset=0.0, duration=None):
    """librosa's __soundfile_load: seek(int(offset · sr)), read(frames=int(duration · sr))."""
    import soundfile as sf
    with sf.SoundFile(path) as f:
        sr = f.samplerate
        if offset:
            f.seek(int(offset * sr))
        frames = int(duration * sr) if duration is not None else -1
        y = f.read(frames=frames, dtype=np.float32, always_2d=False).T
    return y, sr


def _audioread_read(path, offset=0.0, duration=None):
    """librosa's __audioread_load with audioread's FFmpeg backend (the ffmpeg CLI, s16le): the
    interleaved samples [int(sr · offset) · C, + int(sr · duration) · C)."""
    import audioread
    buf = []
    with audioread.audio_open(path) as f:
        sr = f.samplerate
        channels = f.channels
        for block in f:
            buf.append((1.0 / float(1 << 15)) * np.frombuffer(block, "<i2").astype(np.float32))
    y = np.concatenate(buf) if buf else np.empty(0, dtype=np.float32)
    s_start = int(sr * offset) * channels
    s_end = None if duration is None else s_start + int(sr * duration) * channels
    y = y[s_start:s_end]
    if channels > 1:
        y = y.reshape((-1, channels)).T
    return y, sr


def to_mono(y):
    if y.ndim > 1:
        y = np.mean(y, axis=tuple(range(y.ndim - 1)))
    return y


def resample(y, orig_sr, target_sr=SAMPLE_RATE):
    if orig_sr == target_sr:
        return y
    ratio = float(target_sr) / orig_sr
    n_samples = int(np.ceil(y.shape[-1] * ratio))
    y_hat = soxr_resample(y, orig_sr, target_sr)
    n = y_hat.shape[-1]
    if n > n_samples:
        y_hat = y_hat[:n_samples]
    elif n < n_samples:
        y_hat = np.pad(y_hat, (0, n_samples - n), mode="constant")
    return np.asarray(y_hat, dtype=y.dtype)


def librosa_load(path, sr=SAMPLE_RATE, offset=0.0, duration=None):
    """(waveform float32 at sr, native rate, channels, backend) as
    librosa.load(path, sr=sr, offset=offset, duration=duration)."""
    import soundfile as sf
    try:
        y, native = _soundfile_read(path, offset, duration)
        backend = "sndfile"
    except sf.SoundFileRuntimeError:
        y, native = _audioread_read(path, offset, duration)
        backend = "ffmpeg"
    channels = 1 if y.ndim == 1 else y.shape[0]
    y = to_mono(y)
    y = resample(y, native, sr)
    return y, native, channels, backend


def decode_only(path):
    """The decoded (channels, n) float32 samples and rate, before mono/resample."""
    import soundfile as sf
    try:
        y, native = _soundfile_read(path)
        backend = "sndfile"
    except sf.SoundFileRuntimeError:
        y, native = _audioread_read(path)
        backend = "ffmpeg"
    if y.ndim == 1:
        y = y[None, :]
    return y, native, backend


# ---------------------------------------------------------------------------------------------
# transformers WhisperFeatureExtractor (NumPy path)


def hertz_to_mel_slaney(freq):
    min_log_hertz = 1000.0
    min_log_mel = 15.0
    logstep = 27.0 / np.log(6.4)
    mels = 3.0 * freq / 200.0
    if isinstance(freq, np.ndarray):
        log_region = freq >= min_log_hertz
        mels[log_region] = min_log_mel + np.log(freq[log_region] / min_log_hertz) * logstep
    elif freq >= min_log_hertz:
        mels = min_log_mel + np.log(freq / min_log_hertz) * logstep
    return mels


def mel_to_hertz_slaney(mels):
    min_log_hertz = 1000.0
    min_log_mel = 15.0
    logstep = np.log(6.4) / 27.0
    freq = 200.0 * mels / 3.0
    log_region = mels >= min_log_mel
    freq[log_region] = min_log_hertz * np.exp(logstep * (mels[log_region] - min_log_mel))
    return freq


def mel_filter_bank(num_frequency_bins=201, num_mel_filters=128, min_frequency=0.0,
                    max_frequency=8000.0, sampling_rate=SAMPLE_RATE):
    """audio_utils.mel_filter_bank(..., norm="slaney", mel_scale="slaney"): (bins, mels) float64."""
    mel_min = hertz_to_mel_slaney(min_frequency)
    mel_max = hertz_to_mel_slaney(max_frequency)
    mel_freqs = np.linspace(mel_min, mel_max, num_mel_filters + 2)
    filter_freqs = mel_to_hertz_slaney(mel_freqs)
    fft_freqs = np.linspace(0, sampling_rate // 2, num_frequency_bins)
    filter_diff = np.diff(filter_freqs)
    slopes = np.expand_dims(filter_freqs, 0) - np.expand_dims(fft_freqs, 1)
    down_slopes = -slopes[:, :-2] / filter_diff[:-1]
    up_slopes = slopes[:, 2:] / filter_diff[1:]
    filters = np.maximum(np.zeros(1), np.minimum(down_slopes, up_slopes))
    enorm = 2.0 / (filter_freqs[2:num_mel_filters + 2] - filter_freqs[:num_mel_filters])
    filters *= np.expand_dims(enorm, 0)
    return filters


def window_hann_periodic(n=N_FFT):
    return np.hanning(n + 1)[:-1]


_MEL = {}


def spectrogram_log_mel(waveform, mel_filters, vectorized=False):
    """audio_utils.spectrogram(waveform, hann, 400, 160, power=2.0, mel_filters, log_mel="log10").
    vectorized=False is the per-frame loop transformers runs; True does the same operations on all
    frames at once (np.fft.rfft on each row of a frame matrix: pocketfft runs the same 1-D
    transform per row), for the tests' speed."""
    frame_length = N_FFT
    window = window_hann_periodic()
    padding = [(int(frame_length // 2), int(frame_length // 2))]
    waveform = np.pad(waveform, padding, mode="reflect")
    waveform = waveform.astype(np.float64)
    window = window.astype(np.float64)
    num_frames = int(1 + np.floor((waveform.size - frame_length) / HOP))
    if vectorized:
        frames = np.lib.stride_tricks.as_strided(
            waveform, shape=(num_frames, frame_length), strides=(HOP * 8, 8)) * window
        spec = np.fft.rfft(frames, axis=1).astype(np.complex64)
    else:
        spec = np.empty((num_frames, frame_length // 2 + 1), dtype=np.complex64)
        buffer = np.zeros(frame_length)
        timestep = 0
        for frame_idx in range(num_frames):
            buffer[:frame_length] = waveform[timestep:timestep + frame_length]
            buffer[:frame_length] *= window
            spec[frame_idx] = np.fft.rfft(buffer)
            timestep += HOP
    spec = np.abs(spec, dtype=np.float64) ** 2.0
    spec = spec.T
    spec = np.maximum(1e-10, np.dot(mel_filters.T, spec))
    spec = np.log10(spec)
    return np.asarray(spec, np.float32)


def whisper_features(waveforms, n_mels=128, chunk_length=30, padding="max_length", truncation=True,
                     vectorized=False):
    """WhisperFeatureExtractor()(waveforms, sampling_rate=16000, padding=..., truncation=...,
    return_attention_mask=True), NumPy path. Returns (input_features [B, n_mels, F] float32,
    attention_mask [B, F] int32)."""
    n_samples = chunk_length * SAMPLE_RATE
    if n_mels not in _MEL:
        _MEL[n_mels] = mel_filter_bank(num_mel_filters=n_mels)
    mel = _MEL[n_mels]
    waves = [np.asarray(w, dtype=np.float32) for w in waveforms]
    if padding == "max_length":
        target = n_samples
    else:  # padding=True: the longest
        target = max(len(w) for w in waves)
    padded, masks = [], []
    for w in waves:
        if truncation and len(w) > target:
            w = w[:target]
        m = np.ones(len(w), dtype=np.int32)
        if len(w) < target:
            m = np.pad(m, (0, target - len(w)))
            w = np.pad(w, (0, target - len(w)), constant_values=0.0)
        padded.append(w.astype(np.float32))
        masks.append(m)
    batch = np.stack(padded)
    mask = np.stack(masks)
    feats = []
    for w in batch:
        log_spec = spectrogram_log_mel(w, mel, vectorized)
        log_spec = log_spec[:, :-1]
        log_spec = np.maximum(log_spec, log_spec.max() - 8.0)
        log_spec = (log_spec + 4.0) / 4.0
        feats.append(log_spec)
    feats = np.array(feats)
    rescaled = mask[:, ::HOP]
    if mask.shape[1] % HOP != 0:
        rescaled = rescaled[:, :-1]
    return feats, rescaled


# ---------------------------------------------------------------------------------------------
# Token counts (Python integer arithmetic, floor division)


def tokens_qwen2_audio(mask_sum):
    input_length = (mask_sum - 1) // 2 + 1
    return (input_length - 2) // 2 + 1


def tokens_qwen3_omni(L):
    leave = L % 100
    feat = (leave - 1) // 2 + 1
    return ((feat - 1) // 2 + 1 - 1) // 2 + 1 + (L // 100) * 13


# model → (chunk_length s, padding, truncation, token formula)
MODELS = {
    "qwen2-audio": (30, "max_length", True, tokens_qwen2_audio),
    "qwen2.5-omni": (300, "max_length", True, tokens_qwen2_audio),
    "qwen3-omni": (30, True, False, tokens_qwen3_omni),
}


def features_for_model(model, waveforms, vectorized=False):
    chunk, padding, trunc, tok = MODELS[model]
    feats, mask = whisper_features(waveforms, chunk_length=chunk, padding=padding, truncation=trunc,
                                   vectorized=vectorized)
    tokens = [int(tok(int(s))) for s in mask.sum(-1)]
    return feats, mask, tokens


def ffmpeg_cli_version():
    out = subprocess.run(["ffmpeg", "-version"], capture_output=True, text=True).stdout
    return out.split("\n", 1)[0]
