/** LogTape setup: readable text by default, JSON lines with `--log-format json`, debug with `-v`. */
import { configure, getConsoleSink, getTextFormatter, type LogRecord } from "@logtape/logtape";

/** The message with its placeholders filled in; strings appear without quotes. */
export function renderMessage(record: LogRecord): string {
  return record.message.map((part, i) => (i % 2 === 0 ? String(part) : stringify(part))).join("");
}

function stringify(v: unknown): string {
  if (typeof v === "string") return v;
  if (v instanceof Error) return v.message;
  return typeof v === "object" && v !== null ? JSON.stringify(v) : String(v);
}

/** One JSON object per line: time, level, logger, message, then the record's properties as top-level fields. */
export function jsonLine(record: LogRecord): string {
  const props: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(record.properties)) {
    if (v !== undefined) props[k] = v instanceof Error ? v.message : v;
  }
  return JSON.stringify({
    time: new Date(record.timestamp).toISOString(),
    level: record.level,
    logger: record.category.join("."),
    message: renderMessage(record),
    ...props,
  }) + "\n";
}

export async function setupLogging(format: "text" | "json", verbose: boolean): Promise<void> {
  const formatter = format === "json" ? jsonLine : getTextFormatter({
    timestamp: "date-time-tz",
    value: (v) => stringify(v),
  });
  await configure({
    reset: true,
    sinks: { console: getConsoleSink({ formatter }) },
    loggers: [
      { category: ["espejo"], lowestLevel: verbose ? "debug" : "info", sinks: ["console"] },
      { category: ["logtape", "meta"], lowestLevel: "warning", sinks: ["console"] },
    ],
  });
}
