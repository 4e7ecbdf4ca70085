/**
 * Go's `time.ParseDuration` syntax ("10s", "1m30s", "1.5h", "300ms"), so `--reconcile-interval` accepts exactly
 * what the Go espejo accepted.
 */
const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  "µs": 1e-3,
  "μs": 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/** Parses a Go duration into milliseconds; throws with a one-line reason on bad input. */
export function parseGoDuration(text: string): number {
  const input = text.trim();
  let rest = input;
  let sign = 1;
  if (rest.startsWith("-") || rest.startsWith("+")) {
    sign = rest.startsWith("-") ? -1 : 1;
    rest = rest.slice(1);
  }
  if (rest === "0") return 0;
  if (rest === "") throw new Error(`invalid duration "${text}"`);
  let total = 0;
  const part = /^(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)/;
  while (rest) {
    const m = part.exec(rest);
    if (!m) {
      throw new Error(
        `invalid duration "${text}": expected a number and a unit (ns, us, ms, s, m, h), e.g. 10s or 1m30s`,
      );
    }
    total += Number(m[1]) * UNIT_MS[m[2]];
    rest = rest.slice(m[0].length);
  }
  return sign * total;
}

/** Formats milliseconds the way Go prints durations, for logs ("1m30s", "500ms"). */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms}ms`;
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const s = (ms % 60_000) / 1000;
  return `${h ? `${h}h` : ""}${h || m ? `${m}m` : ""}${s}s`;
}
