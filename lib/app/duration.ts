/**
 * Go's `time.ParseDuration` syntax ("10s", "1m30s", "1.5h", "300ms"), so `--reconcile-interval` accepts exactly
 * what the Go espejo accepted: no spaces, integer nanoseconds (exact decimal fractions), at most 2^63-1 ns.
 */
const UNIT_NS: Record<string, bigint> = {
  ns: 1n,
  us: 1_000n,
  "µs": 1_000n,
  "μs": 1_000n,
  ms: 1_000_000n,
  s: 1_000_000_000n,
  m: 60_000_000_000n,
  h: 3_600_000_000_000n,
};
const MAX_NS = (1n << 63n) - 1n;

/** Parses a Go duration into milliseconds; throws with a one-line reason on bad input. */
export function parseGoDuration(text: string): number {
  const invalid = (why = "expected a number and a unit (ns, us, ms, s, m, h), e.g. 10s or 1m30s") =>
    new Error(`invalid duration "${text}": ${why}`);
  let rest = text;
  let sign = 1n;
  if (rest.startsWith("-") || rest.startsWith("+")) {
    sign = rest.startsWith("-") ? -1n : 1n;
    rest = rest.slice(1);
  }
  if (rest === "0") return 0;
  if (rest === "") throw invalid();
  let totalNs = 0n;
  const part = /^(\d*)(?:\.(\d*))?(ns|us|µs|μs|ms|s|m|h)/;
  while (rest) {
    const m = part.exec(rest);
    if (!m || (m[1] === "" && !m[2])) throw invalid();
    const unit = UNIT_NS[m[3]];
    const whole = BigInt(m[1] || "0") * unit;
    // Fraction in exact integer arithmetic, truncated to whole nanoseconds as Go does.
    const fraction = m[2] ? (BigInt(m[2]) * unit) / 10n ** BigInt(m[2].length) : 0n;
    totalNs += whole + fraction;
    if (totalNs > MAX_NS) throw invalid("out of range (more than about 2562047h)");
    rest = rest.slice(m[0].length);
  }
  return Number(sign * totalNs) / 1e6;
}

/** Formats milliseconds the way Go prints durations, for logs ("1m30s", "500ms", "0s"). */
export function formatDuration(ms: number): string {
  if (ms === 0) return "0s";
  if (ms < 1000) return `${ms}ms`;
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const s = (ms % 60_000) / 1000;
  return `${h ? `${h}h` : ""}${h || m ? `${m}m` : ""}${s}s`;
}
