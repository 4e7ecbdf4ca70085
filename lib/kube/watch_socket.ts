/**
 * NOT USED YET by the controller (transport_fetch.ts sends watches by fetch): with it, tenant_memory_test's restart
 * peaked at 68.2 MiB anonymous against 57.8 with fetch (objects with 1 MiB of ownerReferences or labels), so what
 * others write would raise espejo's memory; the cause is not found yet (Deno's TLS reading ahead is the first guess).
 *
 * A watch over a connection of its own, its HTTP/1.1 read here: the request written, the reply's head parsed, the
 * chunked body decoded, all the text a read of the socket brings handed on at once.
 *
 * Why not fetch: Deno's fetch hands a body on one HTTP chunk at a time, through the web streams' machinery, and the
 * API server writes a chunk per event or few. After a restart every object espejo manages arrives that way; inside
 * 300m the streams' code was 15 % of the restart's CPU at 100,000 objects (bench/results/cold-start.md). Read here,
 * a read takes whatever the socket holds (up to 64 KiB: dozens of events while the controller is behind) into one
 * reused buffer, and costs one decode and one piece of text.
 *
 * Only for what a fetch client would do plainly: `https:` with the kubeconfig's CA and client certificate, or
 * `http:`; no proxy (transport_fetch.ts keeps fetch for those). No compression is asked for.
 */
import type { SendInit, TransportOptions, WatchReply } from "./transport.ts";

/** Bytes read at once, into one buffer per watch. */
const READ_SIZE = 64 * 1024;
/**
 * How long reads that the socket answers at once may go on before the event loop gets a turn. A TLS read whose bytes
 * are there already resolves without one (Deno polls an op once as it starts), and after a restart the bytes are
 * always there: a leader reading 100,000 objects could not renew its Lease (renewed every 2 s, lost after 10 s
 * without). The turn is a timer's, not `setImmediate`'s, which runs before other replies are read: measured with a
 * request every 500 ms during a stream, 1 to 127 ms a reply against about 700 ms.
 */
const TURN_AFTER_MS = 50;
/** The longest reply head (status line and headers) read; the API server's are a few hundred bytes. */
const MAX_HEAD = 64 * 1024;
/** The longest chunk-size line (hex size and extensions). */
const MAX_CHUNK_LINE = 4096;

const CR = 13;
const LF = 10;

export async function openWatch(url: URL, init: SendInit, tls: TransportOptions): Promise<WatchReply> {
  const { signal } = init;
  signal?.throwIfAborted();
  const request = requestText(url, init);
  const hostname = url.hostname.replace(/^\[(.*)\]$/, "$1");
  const port = Number(url.port) || (url.protocol === "https:" ? 443 : 80);
  const conn: Deno.Conn = url.protocol === "https:"
    ? await Deno.connectTls({
      hostname,
      port,
      caCerts: tls.caCerts,
      ...(tls.cert && tls.key ? { cert: tls.cert, key: tls.key } : {}),
    })
    : await Deno.connect({ hostname, port });
  const socket = new Socket(conn, signal);
  try {
    signal?.throwIfAborted();
    await socket.writeAll(new TextEncoder().encode(request));
    const { status, headers, rest } = await readHead(socket);
    return { status, headers, pieces: bodyText(socket, headers, rest) };
  } catch (e) {
    socket.close();
    throw e;
  }
}

/** The request's head; a header that could end it early (a CR or LF in a value) is refused. */
function requestText(url: URL, init: SendInit): string {
  const lines = [`${init.method} ${url.pathname}${url.search} HTTP/1.1`, `host: ${url.host}`];
  for (const [name, value] of Object.entries({ ...init.headers, connection: "close" })) {
    if (/[\r\n]/.test(name) || /[\r\n]/.test(value)) {
      throw new Error(`header ${JSON.stringify(name)} holds a line break`);
    }
    lines.push(`${name}: ${value}`);
  }
  if (init.body !== undefined) throw new Error("a watch sends no body");
  return `${lines.join("\r\n")}\r\n\r\n`;
}

/** The connection, closed when the signal aborts; a read or write it interrupted fails with the signal's reason. */
export class Socket {
  readonly buffer = new Uint8Array(READ_SIZE);
  #closed = false;
  /** When the event loop last had a turn between reads. */
  #turn = performance.now();
  readonly #onAbort = () => this.close();

  constructor(readonly conn: Pick<Deno.Conn, "read" | "write" | "close">, readonly signal?: AbortSignal) {
    signal?.addEventListener("abort", this.#onAbort, { once: true });
  }

  /** The next bytes (a view of the reused buffer, valid until the next read); null at the end. */
  async read(): Promise<Uint8Array | null> {
    if (performance.now() - this.#turn > TURN_AFTER_MS) {
      await new Promise((resolve) => setTimeout(resolve, 0));
      this.#turn = performance.now();
    }
    let n: number | null;
    try {
      n = await this.conn.read(this.buffer);
    } catch (e) {
      if (this.signal?.aborted) throw this.signal.reason;
      throw e;
    }
    if (n === null && this.signal?.aborted) throw this.signal.reason;
    return n === null ? null : this.buffer.subarray(0, n);
  }

  async writeAll(bytes: Uint8Array): Promise<void> {
    for (let from = 0; from < bytes.length;) from += await this.conn.write(bytes.subarray(from));
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.signal?.removeEventListener("abort", this.#onAbort);
    try {
      this.conn.close();
    } catch {
      // closed already
    }
  }
}

async function readHead(socket: Socket): Promise<{ status: number; headers: Headers; rest: Uint8Array }> {
  let head = new Uint8Array(0);
  for (;;) {
    const end = indexOfBlankLine(head);
    if (end >= 0) {
      const text = new TextDecoder("latin1").decode(head.subarray(0, end));
      const [statusLine, ...fields] = text.split("\r\n");
      const status = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine);
      if (!status) throw new Error(`not an HTTP/1.1 reply: ${JSON.stringify(statusLine.slice(0, 100))}`);
      const headers = new Headers();
      for (const field of fields) {
        const colon = field.indexOf(":");
        if (colon > 0) headers.append(field.slice(0, colon).trim(), field.slice(colon + 1).trim());
      }
      return { status: Number(status[1]), headers, rest: head.slice(end + 4) };
    }
    if (head.length > MAX_HEAD) throw new Error(`the reply's head is longer than ${MAX_HEAD} bytes`);
    const bytes = await socket.read();
    if (bytes === null) throw new Error("the connection closed before the reply's head");
    const grown = new Uint8Array(head.length + bytes.length);
    grown.set(head);
    grown.set(bytes, head.length);
    head = grown;
  }
}

function indexOfBlankLine(b: Uint8Array): number {
  for (let i = 0; i + 3 < b.length; i++) {
    if (b[i] === CR && b[i + 1] === LF && b[i + 2] === CR && b[i + 3] === LF) return i;
  }
  return -1;
}

/**
 * The body's text, a piece per read of the socket: chunked (the API server's watches), of a content-length, or up to
 * the connection's end. The connection closes when the body ends, fails, or its reader stops.
 */
async function* bodyText(socket: Socket, headers: Headers, first: Uint8Array): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  const chunked = /(^|,)\s*chunked\s*$/i.test(headers.get("transfer-encoding") ?? "");
  const length = headers.get("content-length");
  let left = chunked || length === null ? Infinity : Number(length);
  const decoding = new ChunkedDecoder();
  try {
    let bytes: Uint8Array | null = first;
    for (;;) {
      if (bytes.length) {
        let text: string;
        if (chunked) text = decoding.push(bytes, decoder);
        else {
          const take = bytes.subarray(0, Math.min(bytes.length, left));
          left -= take.length;
          text = decoder.decode(take, { stream: true });
        }
        if (text) yield text;
      }
      if ((chunked && decoding.done) || left === 0) break;
      bytes = await socket.read();
      if (bytes === null) {
        if (chunked || left !== Infinity) throw new Error("the connection closed before the reply's body ended");
        break;
      }
    }
    const tail = decoder.decode();
    if (tail) yield tail;
  } finally {
    socket.close();
  }
}

/**
 * HTTP/1.1 chunked transfer coding (RFC 9112, section 7.1), fed bytes as they arrive: each push returns the text of
 * the chunk data in them, a chunk's size line or its closing CRLF possibly cut between two pushes.
 */
export class ChunkedDecoder {
  /** Bytes of the chunk being read still to come; -1 while its size line is read; -2 after, its CRLF. */
  #left = -1;
  #line = "";
  #crlf = 0;
  #trailers = false;
  done = false;

  push(bytes: Uint8Array, decoder: TextDecoder): string {
    const pieces: string[] = [];
    let i = 0;
    while (i < bytes.length && !this.done) {
      if (this.#left > 0) {
        const take = Math.min(this.#left, bytes.length - i);
        pieces.push(decoder.decode(bytes.subarray(i, i + take), { stream: true }));
        this.#left -= take;
        i += take;
        if (this.#left === 0) {
          this.#left = -2;
          this.#crlf = 0;
        }
      } else if (this.#left === -2) {
        // The CRLF that ends a chunk's data.
        if (bytes[i] !== (this.#crlf === 0 ? CR : LF)) throw new Error("chunked body: no CRLF after a chunk's data");
        i++;
        if (++this.#crlf === 2) this.#left = -1;
      } else {
        const lf = bytes.indexOf(LF, i);
        const end = lf < 0 ? bytes.length : lf;
        if (this.#line.length + end - i > MAX_CHUNK_LINE) {
          throw new Error("chunked body: a chunk-size line is too long");
        }
        this.#line += String.fromCharCode(...bytes.subarray(i, end));
        i = lf < 0 ? bytes.length : lf + 1;
        if (lf < 0) continue;
        const line = this.#line.replace(/\r$/, "");
        this.#line = "";
        if (this.#trailers) {
          if (line === "") this.done = true; // the blank line after the trailer fields
          continue;
        }
        const size = /^[0-9a-fA-F]+/.exec(line);
        if (!size) throw new Error(`chunked body: not a chunk size: ${JSON.stringify(line.slice(0, 40))}`);
        const n = parseInt(size[0], 16);
        if (n === 0) this.#trailers = true;
        else this.#left = n;
      }
    }
    return pieces.length === 1 ? pieces[0] : pieces.join("");
  }
}
