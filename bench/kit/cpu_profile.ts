/**
 * A CPU profile of the controller through its inspector (the Chrome DevTools Protocol's Profiler domain, which
 * `deno run --inspect-wait` serves): sampled from before its first line runs, then summed by function and by file.
 * Sampling costs the process some CPU, so a profiled run's times are not the bench's figures; its shares are.
 */

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
}

/** The protocol's Profile: the call tree's nodes, the node of each sample and the time since the sample before. */
export interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** One session with a process's inspector. */
export class InspectorSession {
  #next = 1;
  readonly #waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();

  private constructor(readonly ws: WebSocket) {
    ws.onmessage = (ev) => {
      const msg = JSON.parse(String(ev.data)) as { id?: number; result?: unknown; error?: { message: string } };
      const waiter = msg.id === undefined ? undefined : this.#waiting.get(msg.id);
      if (!waiter) return; // an event
      this.#waiting.delete(msg.id!);
      if (msg.error) waiter.reject(new Error(msg.error.message));
      else waiter.resolve(msg.result);
    };
  }

  /** Connects to the first target the inspector at `port` lists, retrying until `timeoutMs` (the process starts). */
  static async connect(port: number, timeoutMs = 30_000): Promise<InspectorSession> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        const targets = await (await fetch(`http://127.0.0.1:${port}/json/list`)).json() as {
          webSocketDebuggerUrl: string;
        }[];
        const ws = new WebSocket(targets[0].webSocketDebuggerUrl);
        await new Promise((resolve, reject) => {
          ws.onopen = resolve;
          ws.onerror = () => reject(new Error(`inspector at port ${port}: the WebSocket did not open`));
        });
        return new InspectorSession(ws);
      } catch (e) {
        if (Date.now() > deadline) throw e;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }

  send<T = unknown>(method: string, params: Record<string, unknown> = {}): Promise<T> {
    const id = this.#next++;
    const reply = new Promise<T>((resolve, reject) => {
      this.#waiting.set(id, { resolve: resolve as (v: unknown) => void, reject });
    });
    this.ws.send(JSON.stringify({ id, method, params }));
    return reply;
  }

  /** Starts sampling every `intervalUs`, then lets a process started with --inspect-wait run. */
  async startProfiling(intervalUs = 1000): Promise<void> {
    await this.send("Profiler.enable");
    await this.send("Profiler.setSamplingInterval", { interval: intervalUs });
    await this.send("Profiler.start");
    await this.send("Runtime.runIfWaitingForDebugger");
  }

  async stopProfiling(): Promise<CpuProfile> {
    const { profile } = await this.send<{ profile: CpuProfile }>("Profiler.stop");
    return profile;
  }

  close(): void {
    this.ws.close();
  }
}

export interface SelfTime {
  /** A function (`name file:line`) or a file. */
  what: string;
  ms: number;
  /** Of all samples' time, the idle ones included. */
  share: number;
}

/**
 * Where the samples' time went, by function and by file, the most first (idle and garbage collection included);
 * only the samples from `fromMs` to `toMs` after the profile's start, when given.
 */
export function selfTimes(
  profile: CpuProfile,
  window: { fromMs?: number; toMs?: number } = {},
): { byFunction: SelfTime[]; byFile: SelfTime[]; totalMs: number } {
  const frames = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  const byFunction = new Map<string, number>();
  const byFile = new Map<string, number>();
  const from = (window.fromMs ?? -Infinity) * 1000;
  const to = (window.toMs ?? Infinity) * 1000;
  let total = 0;
  let at = 0;
  profile.samples.forEach((id, i) => {
    const us = profile.timeDeltas[i] ?? 0;
    at += us;
    const f = frames.get(id);
    if (!f || at < from || at > to) return;
    total += us;
    const file = shortUrl(f.url);
    const fn = `${f.functionName || "(anonymous)"}${file ? ` ${file}:${f.lineNumber + 1}` : ""}`;
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + us);
    const where = file || f.functionName || "(anonymous)";
    byFile.set(where, (byFile.get(where) ?? 0) + us);
  });
  const sorted = (m: Map<string, number>) =>
    [...m].sort((a, b) => b[1] - a[1]).map(([what, us]) => ({ what, ms: us / 1000, share: total ? us / total : 0 }));
  return { byFunction: sorted(byFunction), byFile: sorted(byFile), totalMs: total / 1000 };
}

/** A source's URL as a path in the repository, or an npm package's name and file. */
function shortUrl(url: string): string {
  if (!url) return "";
  const npm = url.match(/registry\.npmjs\.org\/(.+)$/) ?? url.match(/node_modules\/(.+)$/);
  if (npm) return `npm:${npm[1]}`;
  const repo = url.match(/\/(lib|main\.ts|bench|testenv)(\/.*)?$/);
  if (repo) return `${repo[1]}${repo[2] ?? ""}`;
  return url.replace(/^.*\/ext\//, "ext:").replace(/^file:\/\//, "");
}
