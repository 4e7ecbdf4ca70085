/**
 * Counters, gauges and histograms with labels, and their Prometheus text exposition (format 0.0.4): the part of a
 * metrics library this controller uses. prom-client did the same at about 6 MiB of anonymous and 4 MiB of
 * file-backed memory (it pulls in much of Deno's Node compatibility layer), a tenth of the budget of a controller
 * that must fit in the Go espejo's 100Mi limit.
 */
import process from "node:process";

type Labels<L extends string> = Partial<Record<L, string | number>>;

interface Sample {
  labels: Record<string, string>;
  value: number;
  /** The name of the series (histograms: `_bucket`, `_sum`, `_count`). */
  metricName?: string;
}

interface Options<L extends string> {
  name: string;
  help: string;
  labelNames?: readonly L[];
  registers?: Registry[];
}

/** Series by their label set, in a canonical key. */
abstract class Metric<L extends string> {
  readonly name: string;
  readonly help: string;
  abstract readonly type: "counter" | "gauge" | "histogram";
  protected readonly series = new Map<string, { labels: Record<string, string>; value: number }>();
  readonly #labelNames: readonly string[];

  constructor(opts: Options<L>) {
    this.name = opts.name;
    this.help = opts.help;
    this.#labelNames = opts.labelNames ?? [];
    for (const r of opts.registers ?? []) r.register(this);
  }

  /** Labels in the declared order (as prom-client writes them), so a series has one key and one spelling. */
  protected clean(labels: Labels<L> | undefined): Record<string, string> {
    const rank = (k: string) => (this.#labelNames.includes(k) ? this.#labelNames.indexOf(k) : this.#labelNames.length);
    const clean: Record<string, string> = {};
    for (const k of Object.keys(labels ?? {}).sort((a, b) => rank(a) - rank(b) || a.localeCompare(b))) {
      clean[k] = String(labels![k as L]);
    }
    return clean;
  }

  protected entry(labels: Labels<L> | undefined): { labels: Record<string, string>; value: number } {
    const clean = this.clean(labels);
    const key = JSON.stringify(clean);
    let e = this.series.get(key);
    if (!e) this.series.set(key, e = { labels: clean, value: 0 });
    return e;
  }

  /** Forgets the series with exactly these labels. */
  remove(labels: Labels<L>): void {
    this.series.delete(JSON.stringify(this.clean(labels)));
  }

  /** Forgets every series whose labels include these (a SyncConfig that went, whatever its other labels). */
  removeMatching(match: Labels<L>): void {
    const wanted = Object.entries(this.clean(match));
    for (const { labels } of [...this.series.values()]) {
      if (wanted.every(([k, v]) => labels[k] === v)) this.remove(labels as Labels<L>);
    }
  }

  get(): { values: Sample[] } {
    return { values: [...this.series.values()].map((e) => ({ labels: e.labels, value: e.value })) };
  }
}

export class Counter<L extends string = never> extends Metric<L> {
  readonly type = "counter";
  inc(labels?: Labels<L> | number, value = 1): void {
    if (typeof labels === "number") [labels, value] = [undefined, labels];
    this.entry(labels).value += value;
  }
}

export class Gauge<L extends string = never> extends Metric<L> {
  readonly type = "gauge";
  set(labels: Labels<L> | number, value?: number): void {
    if (typeof labels === "number") this.entry(undefined).value = labels;
    else this.entry(labels).value = value ?? 0;
  }
}

/** prom-client's and client_golang's default buckets. */
const DEFAULT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export class Histogram<L extends string = never> extends Metric<L> {
  readonly type = "histogram";
  readonly #buckets: number[];
  readonly #counts = new Map<string, { labels: Record<string, string>; buckets: number[]; sum: number; n: number }>();

  constructor(opts: Options<L> & { buckets?: number[] }) {
    super(opts);
    this.#buckets = [...(opts.buckets ?? DEFAULT_BUCKETS)].sort((a, b) => a - b);
  }

  observe(labels: Labels<L> | number, value?: number): void {
    if (typeof labels === "number") [labels, value] = [{}, labels];
    const e = this.entry(labels);
    const key = JSON.stringify(e.labels);
    let h = this.#counts.get(key);
    if (!h) this.#counts.set(key, h = { labels: e.labels, buckets: this.#buckets.map(() => 0), sum: 0, n: 0 });
    for (let i = 0; i < this.#buckets.length; i++) if (value! <= this.#buckets[i]) h.buckets[i]++;
    h.sum += value!;
    h.n++;
  }

  override remove(labels: Labels<L>): void {
    super.remove(labels);
    this.#counts.delete(JSON.stringify(this.clean(labels)));
  }

  override get(): { values: Sample[] } {
    const values: Sample[] = [];
    for (const h of this.#counts.values()) {
      this.#buckets.forEach((le, i) =>
        values.push({
          labels: { ...h.labels, le: goFloat(le) },
          value: h.buckets[i],
          metricName: `${this.name}_bucket`,
        })
      );
      values.push({ labels: { ...h.labels, le: "+Inf" }, value: h.n, metricName: `${this.name}_bucket` });
      values.push({ labels: h.labels, value: h.sum, metricName: `${this.name}_sum` });
      values.push({ labels: h.labels, value: h.n, metricName: `${this.name}_count` });
    }
    return { values };
  }
}

/** A counter whose value is read from elsewhere (CPU time), not counted here. */
class ReadCounter extends Metric<never> {
  readonly type = "counter";
  set(value: number): void {
    this.entry(undefined).value = value;
  }
}

// deno-lint-ignore no-explicit-any
type AnyMetric = Metric<any>;

export class Registry {
  readonly contentType = "text/plain; version=0.0.4; charset=utf-8";
  readonly #metrics = new Map<string, AnyMetric>();
  readonly #collectors: (() => void)[] = [];

  register(metric: AnyMetric): void {
    if (this.#metrics.has(metric.name)) throw new Error(`metric ${metric.name} is registered twice`);
    this.#metrics.set(metric.name, metric);
  }

  /** Runs `collect` before each exposition (gauges read at scrape time). */
  onCollect(collect: () => void): void {
    this.#collectors.push(collect);
  }

  /** The samples of one metric (histograms: every series), for tests and the demo. */
  values(name: string): Sample[] {
    for (const c of this.#collectors) c();
    return this.#metrics.get(name)?.get().values ?? [];
  }

  /** The text exposition of every metric; HELP and TYPE are written even for a metric with no series yet. */
  metrics(): string {
    for (const c of this.#collectors) c();
    const lines: string[] = [];
    for (const m of this.#metrics.values()) {
      lines.push(`# HELP ${m.name} ${m.help.replaceAll("\\", "\\\\").replaceAll("\n", "\\n")}`);
      lines.push(`# TYPE ${m.name} ${m.type}`);
      for (const s of m.get().values) lines.push(`${s.metricName ?? m.name}${labelText(s.labels)} ${number(s.value)}`);
    }
    return lines.join("\n") + "\n";
  }
}

function labelText(labels: Record<string, string>): string {
  const parts = Object.entries(labels).map(([k, v]) =>
    `${k}="${v.replaceAll("\\", "\\\\").replaceAll('"', '\\"').replaceAll("\n", "\\n")}"`
  );
  return parts.length ? `{${parts.join(",")}}` : "";
}

/**
 * A number as client_golang writes it (`strconv.FormatFloat(v, 'g', -1, 64)`): the shortest digits that read back
 * as `v`, in exponent form when the exponent is below -4 or at least 6, with a sign and at least two exponent digits
 * (`1e-08`, `1.5e+06`). Bucket bounds are label values: `le="1e-8"` and `le="1e-08"` are different series to
 * Prometheus 2.x, so dashboards written against the Go espejo need Go's spelling.
 */
export function goFloat(v: number): string {
  if (Number.isNaN(v)) return "NaN";
  if (v === Infinity) return "+Inf";
  if (v === -Infinity) return "-Inf";
  if (v === 0) return Object.is(v, -0) ? "-0" : "0";
  const [mantissa, exponent] = v.toExponential().split("e"); // shortest round-trip digits, as Go's -1 precision
  const exp = Number(exponent);
  if (exp < -4 || exp >= 6) return `${mantissa}e${exp < 0 ? "-" : "+"}${String(Math.abs(exp)).padStart(2, "0")}`;
  return String(v); // JavaScript writes this range without an exponent, as Go's %f with the shortest digits does
}

const number = goFloat;

/** The usual process_* and nodejs_* gauges, read at each scrape (Linux /proc where needed). */
export function collectDefaultMetrics(registry: Registry): void {
  const registers = [registry];
  const gauge = (name: string, help: string) => new Gauge({ name, help, registers });
  const total = (name: string, help: string) => new ReadCounter({ name, help, registers });
  const cpuUser = total("process_cpu_user_seconds_total", "Total user CPU time spent in seconds");
  const cpuSystem = total("process_cpu_system_seconds_total", "Total system CPU time spent in seconds");
  const cpu = total("process_cpu_seconds_total", "Total user and system CPU time spent in seconds");
  const start = gauge("process_start_time_seconds", "Start time of the process since unix epoch in seconds");
  const rss = gauge("process_resident_memory_bytes", "Resident memory size in bytes");
  const virt = gauge("process_virtual_memory_bytes", "Virtual memory size in bytes");
  const fds = gauge("process_open_fds", "Number of open file descriptors");
  const maxFds = gauge("process_max_fds", "Maximum number of open file descriptors");
  const heapTotal = gauge("nodejs_heap_size_total_bytes", "Process heap size from the JavaScript engine, in bytes");
  const heapUsed = gauge("nodejs_heap_size_used_bytes", "Process heap size used from the JavaScript engine, in bytes");
  const external = gauge("nodejs_external_memory_bytes", "Engine external memory size in bytes");
  const startSeconds = Math.round((Date.now() - performance.now()) / 1000);
  registry.onCollect(() => {
    const usage = process.cpuUsage();
    cpuUser.set(usage.user / 1e6);
    cpuSystem.set(usage.system / 1e6);
    cpu.set((usage.user + usage.system) / 1e6);
    start.set(startSeconds);
    const mem = Deno.memoryUsage();
    rss.set(mem.rss);
    heapTotal.set(mem.heapTotal);
    heapUsed.set(mem.heapUsed);
    external.set(mem.external);
    try {
      const status = Deno.readTextFileSync("/proc/self/status");
      virt.set(Number(/^VmSize:\s+(\d+) kB/m.exec(status)?.[1] ?? 0) * 1024);
      let open = 0;
      for (const _ of Deno.readDirSync("/proc/self/fd")) open++;
      fds.set(open);
      // The soft limit, as client_golang's process collector reads it.
      const limits = Deno.readTextFileSync("/proc/self/limits");
      const soft = /^Max open files\s+(\d+|unlimited)/m.exec(limits)?.[1];
      if (soft) maxFds.set(soft === "unlimited" ? Infinity : Number(soft));
    } catch {
      // Not Linux, or no /proc: those two stay 0.
    }
  });
}
