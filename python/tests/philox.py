"""A plain-Python Philox-4x32-10 and the dropout rule of
src/unifuse/activation.h, to check which elements the library keeps."""

import math

_MUL = (0xD2511F53, 0xCD9E8D57)
_WEYL = (0x9E3779B9, 0xBB67AE85)
_M32 = 0xFFFFFFFF


def philox4x32_10(counter, key):
    c0, c1, c2, c3 = counter
    k0, k1 = key
    for _ in range(10):
        p0, p1 = _MUL[0] * c0, _MUL[1] * c2
        c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & _M32, (p0 >> 32) ^ c3 ^ k1, p0 & _M32
        k0, k1 = (k0 + _WEYL[0]) & _M32, (k1 + _WEYL[1]) & _M32
    return c0, c1, c2, c3


def kept(p, seed, offset, count):
    """Element i of a call is kept when its 16-bit draw is at least p."""
    seed, offset = seed & (2**64 - 1), offset & (2**64 - 1)
    threshold = math.ceil(p * (1 << 16))
    out = []
    for i in range(count):
        g = i // 8
        words = philox4x32_10((g & _M32, g >> 32, offset & _M32, offset >> 32),
                              (seed & _M32, seed >> 32))
        word = words[i % 8 // 2]
        out.append(((word >> 16) if i % 2 else (word & 0xFFFF)) >= threshold)
    return out
