/** The controller's log records, collected in-process, for tests of what the log says. */
import { configure, getConfig, type LogRecord, reset } from "@logtape/logtape";

/**
 * Runs `fn` with the controller's log records (category `espejo`, every level) collected in the array it gets.
 * LogTape's configuration is global to a test file's worker, whose tests run one at a time; the previous one (the
 * harness's, with ESPEJO_TEST_LOG) is put back after.
 */
export async function withLogRecords<T>(fn: (records: LogRecord[]) => Promise<T>): Promise<T> {
  const previous = getConfig();
  const records: LogRecord[] = [];
  await configure({
    reset: true,
    sinks: { records: (r) => records.push(r) },
    loggers: [
      { category: ["espejo"], lowestLevel: "debug", sinks: ["records"] },
      { category: ["logtape", "meta"], lowestLevel: "warning", sinks: ["records"] },
    ],
  });
  try {
    return await fn(records);
  } finally {
    if (previous) await configure({ ...previous, reset: true });
    else await reset();
  }
}
