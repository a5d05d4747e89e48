"""Hostile media files for the bad-input tests, made with Pillow and a few lines of PNG/JPEG/RIFF
surgery: damaged, lying headers, bombs, unsupported formats. Each maker returns bytes (or writes
a file, for the sparse one). The damage is chosen to be deterministic: every maker's output is
one that Pillow and libjpeg/libpng/libwebp refuse (or, where noted, accept)."""
from __future__ import annotations

import functools
import io
import pathlib
import struct
import zlib

import numpy as np
from PIL import Image


def noise(w: int, h: int, seed: int = 1, mode: str = "RGB") -> Image.Image:
    rs = np.random.RandomState(seed)
    if mode == "L":
        return Image.fromarray(rs.randint(0, 256, (h, w), dtype=np.uint8), "L")
    return Image.fromarray(rs.randint(0, 256, (h, w, 3), dtype=np.uint8)).convert(mode)


def encoded(fmt: str, w: int = 96, h: int = 80, seed: int = 1, **kw) -> bytes:
    buf = io.BytesIO()
    noise(w, h, seed).save(buf, fmt, **kw)
    return buf.getvalue()


def png(w=96, h=80, seed=1) -> bytes:
    return encoded("PNG", w, h, seed)


def jpeg(w=96, h=80, seed=1, **kw) -> bytes:
    return encoded("JPEG", w, h, seed, quality=90, **kw)


def webp(w=96, h=80, seed=1, **kw) -> bytes:
    return encoded("WEBP", w, h, seed, **kw)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + \
        struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def png_raw(width: int, height: int, bit_depth: int, color_type: int, idat: bytes) -> bytes:
    ihdr = struct.pack(">IIBBBBB", width, height, bit_depth, color_type, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", idat) + \
        _chunk(b"IEND", b"")


def png_header_claims(width: int, height: int) -> bytes:
    """A real 64×64 PNG whose IHDR says width×height (CRC fixed up)."""
    d = bytearray(png(64, 64))
    d[16:24] = struct.pack(">II", width, height)
    d[29:33] = struct.pack(">I", zlib.crc32(bytes(d[12:29])) & 0xFFFFFFFF)
    return bytes(d)


def jpeg_header_claims(width: int, height: int) -> bytes:
    """A real baseline JPEG whose SOF0 says width×height."""
    d = bytearray(jpeg(64, 64))
    pos = d.index(b"\xff\xc0")
    d[pos + 5:pos + 9] = struct.pack(">HH", height, width)
    return bytes(d)


def webp_lossless_claims(width: int, height: int) -> bytes:
    """A real lossless WebP whose VP8L header says width×height (14 bits each, minus one)."""
    d = bytearray(webp(64, 64, lossless=True))
    pos = d.index(b"VP8L") + 8
    assert d[pos] == 0x2F
    bits = int.from_bytes(d[pos + 1:pos + 5], "little")
    bits = (bits & ~((1 << 28) - 1)) | (width - 1) | ((height - 1) << 14)
    d[pos + 1:pos + 5] = bits.to_bytes(4, "little")
    return bytes(d)


@functools.lru_cache(maxsize=None)
def png_bilevel_bomb(side: int) -> bytes:
    """side×side 1-bit grey, all black: legal (under Pillow's hard limit for side ≤ 13000) but a
    few kB that inflate to side² pixels (3·side² bytes as RGB)."""
    row = b"\x00" + b"\x00" * ((side + 7) // 8)
    comp = zlib.compressobj(9)
    parts = [comp.compress(row) for _ in range(side)]
    return png_raw(side, side, 1, 0, b"".join(parts) + comp.flush())


@functools.lru_cache(maxsize=None)
def png_extra_idat(extra_mb: int) -> bytes:
    """A valid 64×64 grey PNG whose IDAT stream carries extra_mb MiB of zeros after the image's
    rows (about 1 kB per MiB): a decoder that inflates the whole stream first is bombed."""
    rows = b"".join(b"\x00" + bytes(range(64)) for _ in range(64))
    comp = zlib.compressobj(9)
    parts = [comp.compress(rows)]
    zero = bytes(1 << 20)
    parts += [comp.compress(zero) for _ in range(extra_mb)]
    return png_raw(64, 64, 8, 0, b"".join(parts) + comp.flush())


def sparse_file(path: pathlib.Path, size: int, head: bytes) -> None:
    """`head` (a valid small image) followed by a hole up to `size` bytes: costs no disk."""
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(size)


def jpeg_bad_huffman() -> bytes:
    """The first DHT's 16 code counts set to 0xFF: 'Bogus Huffman table definition'."""
    d = bytearray(jpeg())
    pos = d.index(b"\xff\xc4")
    d[pos + 5:pos + 21] = b"\xff" * 16
    return bytes(d)


def jpeg_zero_width() -> bytes:
    d = bytearray(jpeg())
    pos = d.index(b"\xff\xc0")
    d[pos + 7:pos + 9] = b"\x00\x00"
    return bytes(d)


def png_idat_crc() -> bytes:
    """One IDAT data byte flipped: the chunk's CRC no longer matches (a critical chunk)."""
    d = bytearray(png())
    pos = d.index(b"IDAT") + 4 + 10
    d[pos] ^= 0xFF
    return bytes(d)


def png_zero_width() -> bytes:
    return png_header_claims(0, 64)


def webp_bad_frame() -> bytes:
    """Lossy WebP with the VP8 key-frame start code (9d 01 2a) destroyed."""
    d = bytearray(webp(quality=80))
    pos = d.index(b"\x9d\x01\x2a")
    d[pos:pos + 3] = b"\x00\x00\x00"
    return bytes(d)


def truncated(data: bytes, keep: float) -> bytes:
    return data[:max(1, int(len(data) * keep))]


def mp4_bytes() -> bytes:
    """The start of an ISO-BMFF (MP4) file: an ftyp box and an empty mdat."""
    ftyp = b"ftyp" + b"isom" + struct.pack(">I", 512) + b"isomiso2avc1mp41"
    return struct.pack(">I", len(ftyp) + 4) + ftyp + struct.pack(">I", 8) + b"mdat"


SVG = (b'<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" width="100" height="100">'
       b'<rect width="100" height="100" fill="red"/></svg>')
