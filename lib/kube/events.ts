/**
 * Kubernetes Events on objects of one kind (the controller's: SyncConfigs), aggregated the way client-go's correlator does it: an event that repeats (same
 * object, type, reason and message) is not created again; its count grows in memory and is written back at most
 * every `updateEveryMs`, so a permanently failing item costs the API server one event, not one per pass.
 */
import { getLogger } from "@logtape/logtape";
import type { KubeClient } from "./client.ts";
import { createEvent, patchEvent } from "./api/core_v1_client.ts";

const log = getLogger(["espejo", "events"]);

export interface EventTarget {
  namespace: string;
  name: string;
  uid: string;
}

interface Recorded {
  eventName: string;
  count: number;
  firstTimestamp: string;
  lastWritten: number;
  pendingSince?: string;
}

/** Events of longer messages are cut; the API server rejects messages over 1 KiB in events.k8s.io anyway. */
const MAX_MESSAGE = 1000;
const MAX_REMEMBERED = 5000;

export class EventRecorder {
  readonly #seen = new Map<string, Recorded>();

  constructor(
    private readonly client: KubeClient,
    /** The kind of every involved object. */
    private readonly involved: { apiVersion: string; kind: string },
    private readonly updateEveryMs = 10 * 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** Records an event; never throws (an event that cannot be written is logged at debug level and dropped). */
  async emit(target: EventTarget, type: "Normal" | "Warning", reason: string, message: string): Promise<void> {
    const text = message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE - 3)}...` : message;
    const key = `${target.uid}\u0000${type}\u0000${reason}\u0000${text}`;
    const nowMs = this.now();
    const nowIso = new Date(nowMs).toISOString().replace(/\.\d+Z$/, "Z");
    const seen = this.#seen.get(key);
    try {
      if (!seen) {
        const eventName = `${target.name}.${nowMs.toString(16)}${Math.floor(Math.random() * 0xffff).toString(16)}`;
        const event = {
          apiVersion: "v1",
          kind: "Event",
          metadata: { name: eventName, namespace: target.namespace },
          involvedObject: { ...this.involved, namespace: target.namespace, name: target.name, uid: target.uid },
          type,
          reason,
          message: text,
          source: { component: "espejo" },
          reportingComponent: "espejo",
          reportingInstance: Deno.hostname(),
          firstTimestamp: nowIso,
          lastTimestamp: nowIso,
          count: 1,
        };
        await createEvent(this.client, { namespace: target.namespace }, event, { urgent: true });
        if (this.#seen.size >= MAX_REMEMBERED) this.#seen.delete(this.#seen.keys().next().value!);
        this.#seen.set(key, { eventName, count: 1, firstTimestamp: nowIso, lastWritten: nowMs });
        return;
      }
      seen.count++;
      if (nowMs - seen.lastWritten < this.updateEveryMs) return;
      seen.lastWritten = nowMs;
      await patchEvent(
        this.client,
        { namespace: target.namespace, name: seen.eventName },
        { count: seen.count, lastTimestamp: nowIso },
        { urgent: true, contentType: "application/merge-patch+json" },
      );
    } catch (e) {
      // The event may have expired (1 h TTL by default): forget it so that the next repeat creates a new one.
      this.#seen.delete(key);
      log.debug("Could not record event {reason} on SyncConfig {namespace}/{name}: {error}", {
        reason,
        namespace: target.namespace,
        name: target.name,
        error: String(e),
      });
    }
  }

  /** How many distinct events are remembered (for tests). */
  get size(): number {
    return this.#seen.size;
  }
}

/**
 * Groups item failures of one SyncConfig across namespaces: the namespace is taken out of each message, so one bad
 * item failing in 500 namespaces becomes one event. The message names no namespace and no count, so that it stays
 * the same (and aggregated) while namespaces come and go; the status counts them.
 */
export function groupFailures(errors: string[]): string[] {
  const groups = new Set<string>();
  for (const e of errors) groups.add(e.replace(/ in namespace \S+?:/, ":"));
  return [...groups];
}
