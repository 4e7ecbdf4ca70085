/** Reads an API server audit log incrementally, so that counting the requests of a time window stays cheap. */
import type { AuditEvent } from "../testenv/controlplane.ts";

export class AuditTail {
  #offset = 0;
  #partial = "";

  constructor(private readonly path: string) {}

  /** Skips everything written so far. */
  async skip(): Promise<void> {
    await this.read();
  }

  /** The events appended since the last call. */
  async read(): Promise<AuditEvent[]> {
    const file = await Deno.open(this.path, { read: true }).catch(() => undefined);
    if (!file) return [];
    try {
      await file.seek(this.#offset, Deno.SeekMode.Start);
      const chunks: Uint8Array[] = [];
      const buf = new Uint8Array(1 << 20);
      for (;;) {
        const n = await file.read(buf);
        if (n === null) break;
        chunks.push(buf.slice(0, n));
        this.#offset += n;
      }
      const text = this.#partial + new TextDecoder().decode(concat(chunks));
      const lines = text.split("\n");
      this.#partial = lines.pop() ?? "";
      return lines.filter((l) => l.trim()).map((l) => JSON.parse(l) as AuditEvent);
    } finally {
      file.close();
    }
  }
}

function concat(chunks: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((a, c) => a + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

/** Counts by a key, e.g. verb. */
export function countBy<T>(items: T[], key: (t: T) => string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const i of items) out[key(i)] = (out[key(i)] ?? 0) + 1;
  return out;
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[idx];
}
