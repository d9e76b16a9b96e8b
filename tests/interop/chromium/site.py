#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write the page tests/interop/chromium.sh loads: index.html and 50
subresources (20 PNG and 10 GIF images, 15 scripts, 3 stylesheets, a JSON
file and a 20 MiB binary that a script fetches and hashes). When the page is
done its script requests report.txt?RESULTS (the big file's status, length
and SHA-256, images decoded, scripts run, the JSON read): the test waits for
that request in quack serve's log, then closes the browser.

Usage: site.py DIR BIG_BYTES
Prints the 51 URL paths, one a line (index first), and writes DIR/expect.json
with the big file's length and SHA-256 for the checker."""
import hashlib
import json
import os
import struct
import sys
import zlib


def png(w, h, rgb):
    def chunk(kind, data):
        c = struct.pack(">I", len(data)) + kind + data
        return c + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    row = b"\x00" + bytes(rgb) * w
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(row * h)) + chunk(b"IEND", b""))


def gif(rgb):
    # 1x1, global colour table of 2 entries, one image block (LZW min code 2).
    return (b"GIF89a" + struct.pack("<HHBBB", 1, 1, 0x80, 0, 0) + bytes(rgb) + b"\x00\x00\x00" +
            b",\x00\x00\x00\x00\x01\x00\x01\x00\x00" + b"\x02\x02\x44\x01\x00;")


def main():
    root, big = sys.argv[1], int(sys.argv[2])
    os.makedirs(root + "/img", exist_ok=True)
    os.makedirs(root + "/js", exist_ok=True)
    os.makedirs(root + "/css", exist_ok=True)
    paths, imgs, scripts, css = [], [], [], []
    for i in range(20):
        p = "img/p%02d.png" % i
        open(root + "/" + p, "wb").write(png(8 + i, 8 + i, (i * 12, 255 - i * 12, 128)))
        imgs.append(p)
    for i in range(10):
        p = "img/g%02d.gif" % i
        open(root + "/" + p, "wb").write(gif((i * 25, 0, 255 - i * 25)))
        imgs.append(p)
    for i in range(14):
        p = "js/s%02d.js" % i
        open(root + "/" + p, "w").write(
            "/* %s */\nwindow.qkScripts = (window.qkScripts || 0) + 1;\n%s\n" % (p, "//" + "x" * (500 * i)))
        scripts.append(p)
    for i in range(3):
        p = "css/c%d.css" % i
        open(root + "/" + p, "w").write(".c%d { margin: %dpx; }\n" % (i, i))
        css.append(p)
    open(root + "/report.txt", "w").write("thanks\n")
    open(root + "/data.json", "w").write(json.dumps({"n": 50, "what": "quack"}))
    data = os.urandom(big)
    open(root + "/big.bin", "wb").write(data)
    expect = {"big_len": big, "big_sha256": hashlib.sha256(data).hexdigest()}
    json.dump(expect, open(root + "/expect.json", "w"))
    main_js = r"""
// SHA-256 (FIPS 180-4) in plain JS (crypto.subtle would do as well; this
// keeps the page free of anything but fetch()).
const K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2]);
function sha256(bytes) {
  const n = bytes.length, padded = ((n + 9 + 63) >> 6) << 6;
  const m = new Uint8Array(padded);
  m.set(bytes);
  m[n] = 0x80;
  const dv = new DataView(m.buffer);
  dv.setUint32(padded - 8, Math.floor(n / 0x20000000));
  dv.setUint32(padded - 4, (n * 8) >>> 0);
  const H = new Uint32Array([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                             0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]);
  const W = new Uint32Array(64);
  const rotr = (x, r) => (x >>> r) | (x << (32 - r));
  for (let off = 0; off < padded; off += 64) {
    for (let i = 0; i < 16; i++) W[i] = dv.getUint32(off + 4 * i);
    for (let i = 16; i < 64; i++) {
      const a = W[i - 15], b = W[i - 2];
      const s0 = rotr(a, 7) ^ rotr(a, 18) ^ (a >>> 3), s1 = rotr(b, 17) ^ rotr(b, 19) ^ (b >>> 10);
      W[i] = (W[i - 16] + s0 + W[i - 7] + s1) | 0;
    }
    let a = H[0], b = H[1], c = H[2], d = H[3], e = H[4], f = H[5], g = H[6], h = H[7];
    for (let i = 0; i < 64; i++) {
      const t1 = (h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + W[i]) | 0;
      const t2 = ((rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) | 0;
      h = g; g = f; f = e; e = (d + t1) | 0; d = c; c = b; b = a; a = (t1 + t2) | 0;
    }
    H[0] += a; H[1] += b; H[2] += c; H[3] += d; H[4] += e; H[5] += f; H[6] += g; H[7] += h;
  }
  return Array.from(H).map(x => x.toString(16).padStart(8, '0')).join('');
}
function say(id, text) {
  const p = document.createElement('p'); p.id = id; p.textContent = text; document.body.appendChild(p);
}
async function run() {
  const res = [];
  try {
    const j = await (await fetch('data.json')).json();
    res.push('json=' + j.what + '_' + j.n);
    const r = await fetch('big.bin', {cache: 'no-store'});
    const b = new Uint8Array(await r.arrayBuffer());
    res.push('big=' + r.status + '_' + b.length + '_' + sha256(b));
  } catch (e) {
    res.push('error=' + encodeURIComponent(String(e)));
  }
  if (document.readyState !== 'complete') await new Promise(r => addEventListener('load', r));
  const ok = Array.from(document.images).filter(i => i.complete && i.naturalWidth > 0).length;
  res.push('images=' + ok + '_' + document.images.length);
  res.push('scripts=' + (window.qkScripts || 0));
  say('result', res.join('&'));
  await fetch('report.txt?' + res.join('&'));
}
run();
"""
    open(root + "/js/main.js", "w").write(main_js)
    scripts.append("js/main.js")
    html = ["<!doctype html><html><head><meta charset=utf-8><title>quack h3</title>",
            '<link rel=icon href="data:,">']
    html += ['<link rel=stylesheet href="%s">' % c for c in css]
    html += ['<script src="%s"></script>' % s for s in scripts[:-1]]
    html.append("</head><body><h1>quack serve over HTTP/3</h1>")
    html += ['<img src="%s" alt="">' % p for p in imgs]
    html.append('<script src="js/main.js"></script></body></html>')
    open(root + "/index.html", "w").write("\n".join(html) + "\n")
    paths = [""] + css + scripts + imgs + ["data.json", "big.bin"]
    assert len(paths) == 51, len(paths)
    print("\n".join(paths))


main()
