/**
 * Watches read off their own socket (lib/kube/watch_socket.ts, not used by the controller yet), against a local
 * server that writes its replies byte by byte as given: chunk-size lines, CRLFs and UTF-8 characters cut between
 * writes, errors, an abort, a cut body.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import type { WatchEvent } from "../../lib/kube/client.ts";
import { LineSplitter } from "../../lib/kube/json_lines.ts";
import { ApiError, apiErrorFrom } from "../../lib/kube/errors.ts";
import { ChunkedDecoder, openWatch, Socket } from "../../lib/kube/watch_socket.ts";

/** A server that answers one connection with `writes`, each written (and flushed) apart; returns its URL. */
function serveOnce(writes: (string | Uint8Array)[], o: { holdOpen?: boolean } = {}) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  let request = "";
  const done = (async () => {
    const conn = await listener.accept();
    const buf = new Uint8Array(4096);
    while (!request.includes("\r\n\r\n")) {
      const n = await conn.read(buf);
      if (n === null) break;
      request += new TextDecoder().decode(buf.subarray(0, n));
    }
    for (const w of writes) {
      await conn.write(typeof w === "string" ? new TextEncoder().encode(w) : w);
      await new Promise((r) => setTimeout(r, 2)); // a write per packet, as a server flushing each event
    }
    if (o.holdOpen) await conn.read(buf).catch(() => null); // until the client closes
    try {
      conn.close();
    } catch {
      // closed by the client
    }
    listener.close();
  })();
  const { port } = listener.addr as Deno.NetAddr;
  return { server: `http://127.0.0.1:${port}`, done, request: () => request };
}

const chunk = (text: string) => `${new TextEncoder().encode(text).length.toString(16)}\r\n${text}\r\n`;
const event = (name: string): WatchEvent => ({ type: "ADDED", object: { metadata: { name } } });
const line = (ev: WatchEvent) => `${JSON.stringify(ev)}\n`;
const HEAD = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n";

/** A watch through openWatch, as a transport would make it for the client: its events, parsed line by line. */
async function* watch(server: string, signal: AbortSignal): AsyncGenerator<WatchEvent> {
  const url = new URL(`${server}/api/v1/configmaps?allowWatchBookmarks=true&watch=true`);
  const reply = await openWatch(url, { method: "GET", headers: { accept: "application/json" }, signal }, {});
  if (reply.status !== 200) {
    let text = "";
    for await (const piece of reply.pieces) text += piece;
    throw apiErrorFrom(reply.status, text, null);
  }
  const lines = new LineSplitter();
  for await (const text of reply.pieces) for (const l of lines.push(text)) yield JSON.parse(l) as WatchEvent;
}

async function events(server: string, signal = new AbortController().signal): Promise<WatchEvent[]> {
  const out: WatchEvent[] = [];
  for await (const ev of watch(server, signal)) out.push(ev);
  return out;
}

Deno.test("watch socket: events whose chunk lines, CRLFs and characters are cut between writes", async () => {
  const a = line(event("a-ü€"));
  const b = line(event("b"));
  const c = line(event("c😀"));
  const body = chunk(a) + chunk(b + c) + "0\r\n\r\n";
  const bytes = new TextEncoder().encode(HEAD + body);
  // One write per byte: every boundary is cut somewhere.
  const s = serveOnce(Array.from(bytes, (x) => new Uint8Array([x])));
  assert.deepEqual(await events(s.server), [event("a-ü€"), event("b"), event("c😀")]);
  await s.done;
  assert.match(s.request(), /^GET \/api\/v1\/configmaps\?allowWatchBookmarks=true&watch=true HTTP\/1\.1\r\n/);
  assert.match(s.request(), /\r\nconnection: close\r\n/);
});

Deno.test("watch socket: a refused watch is the API server's error, read from its body", async () => {
  const status = JSON.stringify({ kind: "Status", code: 403, reason: "Forbidden", message: "configmaps is forbidden" });
  const s = serveOnce([
    `HTTP/1.1 403 Forbidden\r\ncontent-type: application/json\r\ncontent-length: ${status.length}\r\n\r\n`,
    status,
  ]);
  await assert.rejects(events(s.server), (e) => e instanceof ApiError && e.code === 403 && /forbidden/.test(e.message));
  await s.done;
});

Deno.test("watch socket: an abort while the body is read ends the watch with the signal's reason", async () => {
  const s = serveOnce([HEAD, chunk(line(event("a")))], { holdOpen: true });
  const ac = new AbortController();
  const seen: WatchEvent[] = [];
  await assert.rejects(
    (async () => {
      for await (const ev of watch(s.server, ac.signal)) {
        seen.push(ev);
        ac.abort(new DOMException("stopped", "AbortError"));
      }
    })(),
    (e) => e instanceof DOMException && e.name === "AbortError",
  );
  assert.deepEqual(seen, [event("a")]);
  await s.done;
});

Deno.test("watch socket: a body cut before its last chunk fails (the reflector watches again)", async () => {
  const s = serveOnce([HEAD, chunk(line(event("a"))), '40\r\n{"type"']);
  await assert.rejects(events(s.server), /closed before the reply's body ended/);
  await s.done;
});

Deno.test("watch socket: a header value with a line break is refused before anything is sent", async () => {
  await assert.rejects(
    openWatch(new URL("http://127.0.0.1:1/x"), { method: "GET", headers: { authorization: "Bearer a\r\nx: y" } }, {}),
    /line break/,
  );
});

Deno.test("ChunkedDecoder: any text, chunked any way and pushed in any pieces, comes out whole", () => {
  fc.assert(fc.property(
    fc.array(fc.string({ unit: "grapheme", maxLength: 40 }), { maxLength: 8 }),
    fc.array(fc.integer({ min: 1, max: 9 }), { minLength: 1, maxLength: 8 }),
    fc.boolean(),
    (texts, cuts, extensions) => {
      const enc = new TextEncoder();
      const body = texts.filter((t) => t.length > 0).map((t) => {
        const n = enc.encode(t).length.toString(16);
        return `${n}${extensions ? ";name=value" : ""}\r\n${t}\r\n`;
      }).join("") + "0\r\ntrailer: x\r\n\r\n";
      const bytes = enc.encode(body);
      const decoder = new ChunkedDecoder();
      const text = new TextDecoder();
      let out = "";
      for (let i = 0, k = 0; i < bytes.length; k++) {
        const n = cuts[k % cuts.length];
        out += decoder.push(bytes.subarray(i, i + n), text);
        i += n;
      }
      out += text.decode();
      assert.equal(out, texts.join(""));
      assert.ok(decoder.done);
    },
  ));
});

Deno.test("watch socket: reads the socket answers at once leave the event loop its turns", async () => {
  // A connection whose every read is answered at once, as a TLS read finds its bytes waiting after a restart: its
  // promises resolve without a turn of the event loop, so only the reader's own turns let a timer (the Lease's
  // renewal) or another reply in. Each read takes a little CPU, as judging its objects does.
  const conn = {
    read(buf: Uint8Array) {
      const until = performance.now() + 0.2;
      while (performance.now() < until) { /* the reader's work on the bytes */ }
      buf.fill(32);
      return Promise.resolve(buf.length);
    },
    write: (b: Uint8Array) => Promise.resolve(b.length),
    close() {},
  };
  const socket = new Socket(conn);
  let timerRan = false;
  setTimeout(() => timerRan = true, 0);
  let reads = 0;
  while (!timerRan && reads < 100_000) {
    await socket.read();
    reads++;
  }
  assert.ok(timerRan, `a timer due at once ran while reads were answered at once (${reads} reads)`);
});
