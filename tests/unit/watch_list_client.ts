/** A fake API server for the caches' unit tests (deep_nesting_test, safe_decode_test) that streams one WatchList. */
import type { KubeClient, WatchEvent } from "../../lib/kube/client.ts";

/**
 * A client whose only stream is a WatchList: the first `initial` of `events`, the bookmark that ends the initial
 * events (at `resourceVersion`), the rest; then it stays open until aborted. It answers no request.
 */
export function watchListClient(events: WatchEvent[], initial: number, resourceVersion: string): KubeClient {
  return {
    request: () => Promise.reject(new Error("no request expected")),
    async *watch(_path, _query, signal) {
      for (const [i, ev] of events.entries()) {
        if (i === initial) {
          yield {
            type: "BOOKMARK",
            object: { metadata: { resourceVersion, annotations: { "k8s.io/initial-events-end": "true" } } },
          };
        }
        yield ev;
      }
      await new Promise((resolve) => signal.addEventListener("abort", resolve));
    },
  };
}
