/** Reads values out of the Prometheus text format that /metrics serves. */
export type Samples = Map<string, number>;

/** Parses `name{a="b"} 1` lines into a map keyed by `name{a="b"}` (labels as written). */
export function parsePrometheusText(text: string): Samples {
  const out: Samples = new Map();
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const space = line.lastIndexOf(" ");
    out.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  return out;
}

/** Sum of every sample of `name` whose labels include all of `labels` (with `prefix`, label values starting so). */
export function sumOf(samples: Samples, name: string, labels: Record<string, string> = {}, prefix = false): number {
  let total = 0;
  for (const [key, value] of samples) {
    const brace = key.indexOf("{");
    const metric = brace < 0 ? key : key.slice(0, brace);
    if (metric !== name) continue;
    const labelText = brace < 0 ? "" : key.slice(brace);
    if (Object.entries(labels).every(([k, v]) => labelText.includes(prefix ? `${k}="${v}` : `${k}="${v}"`))) {
      total += value;
    }
  }
  return total;
}
