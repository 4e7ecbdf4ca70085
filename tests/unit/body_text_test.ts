/** A reply body's text piece by piece (lib/kube/body_text.ts): byte streams read into one buffer, others as given. */
import assert from "node:assert/strict";
import fc from "fast-check";
import { textPieces } from "../../lib/kube/body_text.ts";

/** A stream of `chunks`, a byte stream (as fetch's bodies are) or a plain one; `cancelled` records a cancel. */
function body(chunks: Uint8Array[], bytes: boolean, cancelled: { yes: boolean } = { yes: false }) {
  let next = 0;
  const source = {
    pull(controller: ReadableStreamDefaultController<Uint8Array> | ReadableByteStreamController) {
      while (next < chunks.length && chunks[next].length === 0) next++; // a byte stream refuses empty chunks
      if (next < chunks.length) return controller.enqueue(chunks[next++].slice());
      controller.close();
      // A byte stream's pending read ends when its request is answered (as Deno's own bodies do).
      if ("byobRequest" in controller) controller.byobRequest?.respond(0);
    },
    cancel() {
      cancelled.yes = true;
    },
  };
  return bytes
    ? new ReadableStream({ type: "bytes", ...source } as UnderlyingByteSource) as ReadableStream<Uint8Array>
    : new ReadableStream<Uint8Array>(source as UnderlyingDefaultSource<Uint8Array>);
}

/** `bytes` cut at `cuts` (positions, any order). */
function cut(bytes: Uint8Array, cuts: number[]): Uint8Array[] {
  const at = [...new Set(cuts.map((c) => Math.min(c, bytes.length)))].sort((a, b) => a - b);
  const pieces: Uint8Array[] = [];
  let from = 0;
  for (const c of [...at, bytes.length]) {
    pieces.push(bytes.subarray(from, c));
    from = c;
  }
  return pieces;
}

async function read(stream: ReadableStream<Uint8Array>): Promise<string> {
  let text = "";
  for await (const piece of textPieces(stream)) text += piece;
  return text;
}

for (const bytes of [true, false]) {
  const kind = bytes ? "a byte stream" : "a plain stream";

  Deno.test(`textPieces: ${kind} cut anywhere, inside multi-byte characters too, reads as the whole text`, async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.string({ unit: "binary", maxLength: 200 }),
        fc.array(fc.nat({ max: 800 }), { maxLength: 12 }),
        async (text, cuts) => {
          const encoded = new TextEncoder().encode(text);
          assert.equal(await read(body(cut(encoded, cuts), bytes)), new TextDecoder().decode(encoded));
        },
      ),
    );
  });

  Deno.test(`textPieces: ${kind} larger than one read (200 KiB in 5 KiB chunks) arrives whole`, async () => {
    const text = "ü日😀x".repeat(20_000);
    const encoded = new TextEncoder().encode(text);
    assert.equal(await read(body(cut(encoded, Array.from({ length: 40 }, (_, i) => i * 5120 + 1)), bytes)), text);
  });

  Deno.test(`textPieces: ${kind} is cancelled when the reader stops early`, async () => {
    const cancelled = { yes: false };
    const encoded = new TextEncoder().encode("first");
    for await (const piece of textPieces(body([encoded, encoded, encoded], bytes, cancelled))) {
      assert.equal(piece, "first");
      break;
    }
    assert.equal(cancelled.yes, true, "the body was not cancelled");
  });

  Deno.test(`textPieces: ${kind} with invalid UTF-8 reads replacement characters, as TextDecoderStream did`, async () => {
    const encoded = new Uint8Array([0x61, 0xff, 0xe6, 0x97, 0x62]);
    assert.equal(await read(body(cut(encoded, [2, 3]), bytes)), "a\ufffd\ufffdb");
  });
}
