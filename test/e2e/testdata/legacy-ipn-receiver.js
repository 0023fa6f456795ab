// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// A webhook receiver written for the older gateway's IPN convention, as merchants copied it from
// that gateway's documentation: X-Signature is the hex HMAC-SHA256 of the body with the secret.
// It checks each delivery in the two ways such receivers exist in the wild, over the raw bytes
// and over JSON.stringify of the parsed body (as the WooCommerce plugin and several SDKs do),
// then checks what the plugin needs (a top-level status and data.ref_trx). It answers 200 only
// when everything holds, and prints one JSON line per delivery for the test to read.
// Usage: IPN_SECRET=... node legacy-ipn-receiver.js   (prints {"listening": port} first)
const http = require("http");
const crypto = require("crypto");

const secret = process.env.IPN_SECRET || "";
const sign = (s) => crypto.createHmac("sha256", secret).update(s).digest("hex");
const same = (a, b) => a.length === b.length && crypto.timingSafeEqual(Buffer.from(a), Buffer.from(b));

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const raw = Buffer.concat(chunks);
    const sig = String(req.headers["x-signature"] || "");
    const line = { raw: false, stringify: false, plugin: false };
    try {
      line.raw = same(sig, sign(raw));
      const parsed = JSON.parse(raw.toString("utf8"));
      line.stringify = same(sig, sign(JSON.stringify(parsed)));
      line.plugin = typeof parsed.status === "string" && !!(parsed.data && parsed.data.ref_trx);
      line.status = parsed.status;
      line.trx_id = parsed.data && parsed.data.trx_id;
      line.data = parsed.data;
    } catch (e) {
      line.error = String(e);
    }
    process.stdout.write(JSON.stringify(line) + "\n");
    const ok = line.raw && line.stringify && line.plugin;
    res.writeHead(ok ? 200 : 401, { "Content-Type": "text/plain" });
    res.end(ok ? "OK" : "invalid signature");
  });
});
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(JSON.stringify({ listening: server.address().port }) + "\n");
});
