/** Reads an API server audit log incrementally, so that counting the requests of a time window stays cheap. */
import type { AuditEvent } from "../../testenv/controlplane.ts";

export class AuditTail {
  #offset = 0;
  /** Lines that were not JSON, skipped. */
  unreadable = 0;

  constructor(private readonly path: string) {}

  /** Skips everything written so far. */
  async skip(): Promise<void> {
    await this.read();
  }

  /**
   * The events appended since the last call, or only those `keep` accepts. Read a megabyte at a time: at 100,000
   * objects a window's log is hundreds of megabytes, more than one string can hold.
   */
  async read(keep: (e: AuditEvent) => boolean = () => true): Promise<AuditEvent[]> {
    const events: AuditEvent[] = [];
    this.#offset = await eachLine(this.path, this.#offset, (l) => {
      let e: AuditEvent;
      try {
        e = JSON.parse(l) as AuditEvent;
      } catch {
        this.unreadable++; // a line the API server wrote in pieces that interleaved (seen at 100,000 objects)
        return;
      }
      if (keep(e)) events.push(e);
    });
    return events;
  }
}

/**
 * Hands each complete line of the file from byte `offset` on to `onLine`, a megabyte at a time; returns the offset
 * after the last complete line (a line the writer has not finished is read again next time).
 */
export async function eachLine(path: string, offset: number, onLine: (line: string) => void): Promise<number> {
  const file = await Deno.open(path, { read: true }).catch(() => undefined);
  if (!file) return offset;
  try {
    await file.seek(offset, Deno.SeekMode.Start);
    const buf = new Uint8Array(1 << 20);
    let partial = new Uint8Array(0);
    for (;;) {
      const n = await file.read(buf);
      if (n === null) break;
      const chunk = new Uint8Array(partial.length + n);
      chunk.set(partial);
      chunk.set(buf.subarray(0, n), partial.length);
      const end = chunk.lastIndexOf(0x0a) + 1;
      for (const line of new TextDecoder().decode(chunk.subarray(0, end)).split("\n")) if (line.trim()) onLine(line);
      offset += end;
      partial = chunk.slice(end);
    }
    return offset;
  } finally {
    file.close();
  }
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
