#!/usr/bin/env python3
"""Generates the known-answer vectors in ../kat.rs with Python `cryptography`.

Independent of sluice and aws-lc: each construction is rebuilt here from its
specification (RFC 5647 + OpenSSH PROTOCOL for AES-GCM, PROTOCOL.chacha20poly1305,
RFC 4344 AES-CTR with RFC 6668 HMAC-SHA2 encrypt-and-MAC, OpenSSH PROTOCOL 1.5
encrypt-then-MAC). Run: python3 kat_gen.py > vectors.txt and paste the output
into the KATS table of kat.rs.
"""
import hmac
import hashlib
import struct

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.poly1305 import Poly1305


def pattern(n, seed):
    return bytes((seed + 29 * i) & 0xFF for i in range(n))


def packet(payload, bs, length_in_blocks):
    unpadded = 1 + len(payload) + (4 if length_in_blocks else 0)
    pad = bs - unpadded % bs
    if pad < 4:
        pad += bs
    padding = bytes((0xA0 + i) & 0xFF for i in range(pad))
    plen = 1 + len(payload) + pad
    return struct.pack(">IB", plen, pad) + payload + padding


def ctr(key, iv, offset, data):
    ctr0 = (int.from_bytes(iv, "big") + offset // 16) % (1 << 128)
    enc = Cipher(algorithms.AES(key), modes.CTR(ctr0.to_bytes(16, "big"))).encryptor()
    return enc.update(data) + enc.finalize()


HASHES = {
    "hmac-sha2-256": (hashlib.sha256, 32, False),
    "hmac-sha2-512": (hashlib.sha512, 64, False),
    "hmac-sha2-256-etm@openssh.com": (hashlib.sha256, 32, True),
    "hmac-sha2-512-etm@openssh.com": (hashlib.sha512, 64, True),
    "none": (None, 0, False),
}


def mac(name, key, seq, data):
    h = HASHES[name][0]
    if h is None:
        return b""
    return hmac.new(key, struct.pack(">I", seq) + data, h).digest()


def gcm(key, iv, index, payload):
    fixed, counter = iv[:4], int.from_bytes(iv[4:], "big")
    nonce = fixed + ((counter + index) % (1 << 64)).to_bytes(8, "big")
    p = packet(payload, 16, False)
    out = AESGCM(key).encrypt(nonce, p[4:], p[:4])
    return p, p[:4] + out[:-16], out[-16:]


def chacha(key, seq, payload):
    k2, k1 = key[:32], key[32:]
    nonce = struct.pack(">Q", seq)
    p = packet(payload, 8, False)

    def stream(k, counter, data):
        c = Cipher(algorithms.ChaCha20(k, struct.pack("<Q", counter) + nonce), None)
        e = c.encryptor()
        return e.update(data)

    enc_len = stream(k1, 0, p[:4])
    poly_key = stream(k2, 0, bytes(32))
    body = stream(k2, 1, p[4:])
    tag = Poly1305.generate_tag(poly_key, enc_len + body)
    return p, enc_len + body, tag


def ctr_mac(key, iv, mac_name, mac_key, seq, offset, payload):
    etm = HASHES[mac_name][2]
    bs = 16 if key else 8
    p = packet(payload, bs, not etm)
    enc = (lambda d: ctr(key, iv, offset, d)) if key else (lambda d: d)
    if etm:
        sealed = p[:4] + enc(p[4:])
        tag = mac(mac_name, mac_key, seq, sealed)
    else:
        tag = mac(mac_name, mac_key, seq, p)
        sealed = enc(p)
    return p, sealed, tag


def emit(cipher, mac_name, key, iv, mac_key, seq, index, offset, result):
    p, sealed, tag = result
    print("    Kat {")
    print(f'        cipher: "{cipher}",')
    print(f'        mac: "{mac_name}",')
    for field, value in [("key", key), ("iv", iv), ("mac_key", mac_key)]:
        print(f'        {field}: "{value.hex()}",')
    print(f"        pos: PacketPos {{ seq: {seq:#x}, index: {index:#x}, offset: {offset:#x} }},")
    for field, value in [("plain", p), ("sealed", sealed), ("tag", tag)]:
        print(f'        {field}: "{value.hex()}",')
    print("    },")


def main():
    msg = b"sluice known-answer test payload"
    k16, k24, k32, k64 = pattern(16, 1), pattern(24, 2), pattern(32, 3), pattern(64, 4)
    m32, m64 = pattern(32, 5), pattern(64, 6)
    iv12 = pattern(12, 7)
    # Invocation counter about to wrap in 64 bits (RFC 5647 7.1).
    iv12_wrap = bytes.fromhex("01020304fffffffffffffffe")
    iv16 = pattern(16, 8)
    # Low 32 bits about to overflow: the CTR carry must reach the upper bits.
    iv16_c32 = bytes.fromhex("000102030405060708090a0bfffffffe")
    # The whole 128-bit counter wraps (RFC 4344 4).
    iv16_wrap = bytes.fromhex("fffffffffffffffffffffffffffffffe")

    emit("aes128-gcm@openssh.com", "none", k16, iv12, b"", 3, 5, 0,
         gcm(k16, iv12, 5, msg))
    emit("aes256-gcm@openssh.com", "none", k32, iv12_wrap, b"", 9, 3, 0,
         gcm(k32, iv12_wrap, 3, msg + b"!"))
    emit("chacha20-poly1305@openssh.com", "none", k64, b"", b"", 7, 0, 0,
         chacha(k64, 7, msg))
    emit("chacha20-poly1305@openssh.com", "none", k64, b"", b"", 0xFFFFFFFF, 0, 0,
         chacha(k64, 0xFFFFFFFF, msg * 5))
    emit("aes128-ctr", "hmac-sha2-256", k16, iv16, m32, 3, 3, 48,
         ctr_mac(k16, iv16, "hmac-sha2-256", m32, 3, 48, msg))
    emit("aes192-ctr", "hmac-sha2-512", k24, iv16_c32, m64, 0x10000, 0, 0x10,
         ctr_mac(k24, iv16_c32, "hmac-sha2-512", m64, 0x10000, 0x10, msg * 3))
    emit("aes256-ctr", "hmac-sha2-256-etm@openssh.com", k32, iv16_wrap, m32, 11, 0, 0,
         ctr_mac(k32, iv16_wrap, "hmac-sha2-256-etm@openssh.com", m32, 11, 0, msg * 2))
    emit("aes128-ctr", "hmac-sha2-512-etm@openssh.com", k16, iv16, m64, 1, 0, 0x1230,
         ctr_mac(k16, iv16, "hmac-sha2-512-etm@openssh.com", m64, 1, 0x1230, msg))
    emit("none", "hmac-sha2-256", b"", b"", m32, 42, 0, 0,
         ctr_mac(b"", b"", "hmac-sha2-256", m32, 42, 0, msg))
    emit("none", "hmac-sha2-512-etm@openssh.com", b"", b"", m64, 5, 0, 0,
         ctr_mac(b"", b"", "hmac-sha2-512-etm@openssh.com", m64, 5, 0, msg))
    emit("none", "none", b"", b"", b"", 0, 0, 0,
         ctr_mac(b"", b"", "none", b"", 0, 0, msg))


if __name__ == "__main__":
    main()
