/**
 * A reply body's text, piece by piece, read into one buffer that is reused for the whole body. Deno's default reader
 * (and `pipeThrough(new TextDecoderStream())` on it) allocates a fresh 64 KiB buffer outside the JS heap for every
 * read, freed only once the garbage collector finds its view; a restart's WatchLists read thousands of them. Measured
 * on a restart at 122,424 objects inside the limits: 64.1, 65.5 MiB anonymous at the peak, against 66.0 to 66.4 MiB.
 */

/** Bytes read at once: Deno's own read size for a body. */
const READ_SIZE = 64 * 1024;

/** Each piece of `body`'s UTF-8 text as it arrives; the reader is released (and the body cancelled) when stopped. */
export async function* textPieces(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let byob: ReadableStreamBYOBReader | undefined;
  try {
    byob = body.getReader({ mode: "byob" });
  } catch {
    // Not a byte stream (another transport's body): its chunks are its own.
  }
  if (!byob) {
    for await (const chunk of body) {
      const text = decoder.decode(chunk, { stream: true });
      if (text) yield text;
    }
  } else {
    let buffer = new ArrayBuffer(READ_SIZE);
    try {
      for (;;) {
        const { value, done } = await byob.read(new Uint8Array(buffer));
        if (done) break;
        // The read transfers the buffer: its memory comes back as the view's buffer.
        buffer = value.buffer as ArrayBuffer;
        const text = decoder.decode(value, { stream: true });
        if (text) yield text;
      }
    } finally {
      await byob.cancel().catch(() => {});
    }
  }
  const tail = decoder.decode();
  if (tail) yield tail;
}
