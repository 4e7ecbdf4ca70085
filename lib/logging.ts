/** LogTape setup: readable text by default, JSON lines with `--log-format json`, debug with `-v`. */
import { configure, getConsoleSink, getJsonLinesFormatter, getTextFormatter } from "@logtape/logtape";

export async function setupLogging(format: "text" | "json", verbose: boolean): Promise<void> {
  const formatter = format === "json" ? getJsonLinesFormatter({ properties: "flatten" }) : getTextFormatter({
    timestamp: "date-time-tz",
    value: (v) => (typeof v === "string" ? v : Deno.inspect(v, { colors: false, compact: true })),
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
