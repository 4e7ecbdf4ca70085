/**
 * Kubernetes Events on objects of one kind (the controller's: SyncConfigs), aggregated the way client-go's correlator
 * does it: an event that repeats (same object, type, reason and message) is not created again; its `count` and
 * `lastTimestamp` are patched. Writes go through client-go's spam filter, a token bucket per involved object (25 at
 * once, then one every 5 minutes): a permanently failing item costs a handful of writes an hour, not one per pass.
 * Where client-go drops a repeat the bucket refuses, this recorder keeps its count and writes it when the next token
 * comes, so that `count` and `lastTimestamp` are current within seconds while writes are allowed and never lost.
 * What it remembers is bounded per involved object ({@link MAX_REMEMBERED_PER_OBJECT}) and goes with it ({@link
 * EventRecorder.forget}): a SyncConfig's events take no memory after it.
 */
import { getLogger } from "@logtape/logtape";
import type { KubeClient } from "./client.ts";
import { createEvent, patchEvent } from "./api/core_v1_client.ts";
import { isForbidden } from "./errors.ts";

const log = getLogger(["espejo", "events"]);

export interface EventTarget {
  namespace: string;
  name: string;
  uid: string;
}

interface Recorded {
  target: EventTarget;
  eventName: string;
  count: number;
  /** The count and time last written; a repeat not yet written waits for a token. */
  writtenCount: number;
  lastTimestamp: string;
  timer?: ReturnType<typeof setTimeout>;
}

/** Events of longer messages are cut; the API server rejects messages over 1 KiB in events.k8s.io anyway. */
const MAX_MESSAGE = 1000;
const MAX_REMEMBERED = 5000;
/**
 * Distinct events remembered per involved object (its oldest goes first): a SyncConfig's messages change with its
 * counts and, in delegated mode, with what its team writes, so that one object cannot take the whole
 * {@link MAX_REMEMBERED} (about 2 KiB each) for itself.
 */
export const MAX_REMEMBERED_PER_OBJECT = 64;

/** client-go's spam filter (`EventSourceObjectSpamFilter`): burst 25, then one token every 5 minutes. */
export const SPAM_BURST = 25;
export const SPAM_REFILL_MS = 5 * 60_000;

export interface EventClock {
  now(): number;
  /** Runs `fn` after `ms` without keeping the process alive for it. */
  later(fn: () => void, ms: number): ReturnType<typeof setTimeout>;
}

const realClock: EventClock = {
  now: Date.now,
  later: (fn, ms) => {
    const t = setTimeout(fn, ms);
    Deno.unrefTimer(t as unknown as number);
    return t;
  },
};

export class EventRecorder {
  readonly #seen = new Map<string, Recorded>();
  /** By involved object (`namespace/name`): its keys in {@link #seen}, the oldest first. */
  readonly #byObject = new Map<string, Set<string>>();
  /** Tokens per involved object (uid) and when the last was added; `object` is its `namespace/name`. */
  readonly #buckets = new Map<string, { tokens: number; refilledAt: number; object: string }>();
  /** Namespaces where writing Events was refused (403), said once each. */
  readonly #refusedIn = new Set<string>();

  constructor(
    private readonly client: KubeClient,
    /** The kind of every involved object. */
    private readonly involved: { apiVersion: string; kind: string },
    private readonly clock: EventClock = realClock,
  ) {}

  /**
   * Records an event; never throws. An event that cannot be written is dropped and logged at debug level, or at
   * warning level once per namespace when a right is missing (403).
   */
  async emit(target: EventTarget, type: "Normal" | "Warning", reason: string, message: string): Promise<void> {
    const text = message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE - 3)}...` : message;
    const key = `${target.uid}\u0000${type}\u0000${reason}\u0000${text}`;
    const nowMs = this.clock.now();
    const seen = this.#seen.get(key);
    if (seen) {
      seen.count++;
      seen.lastTimestamp = isoSeconds(nowMs);
      await this.#writeRepeat(key, seen);
      return;
    }
    // A new event that the bucket refuses is dropped, as client-go drops it: there is nothing to add a count to.
    if (!this.#take(target)) return;
    const eventName = `${target.name}.${nowMs.toString(16)}${Math.floor(Math.random() * 0xffff).toString(16)}`;
    const at = isoSeconds(nowMs);
    try {
      await createEvent(this.client, { namespace: target.namespace }, {
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
        firstTimestamp: at,
        lastTimestamp: at,
        count: 1,
      }, { urgent: true });
      if (this.#seen.size >= MAX_REMEMBERED) this.#forget(this.#seen.keys().next().value!);
      this.#seen.set(key, { target, eventName, count: 1, writtenCount: 1, lastTimestamp: at });
      const object = objectOf(target);
      const keys = this.#byObject.get(object) ?? new Set<string>();
      this.#byObject.set(object, keys.add(key));
      if (keys.size > MAX_REMEMBERED_PER_OBJECT) this.#forget(keys.values().next().value!);
    } catch (e) {
      this.#failed(key, reason, target, e);
    }
  }

  /** How many distinct events are remembered (for tests). */
  get size(): number {
    return this.#seen.size;
  }

  /** How many involved objects have a token bucket (for tests). */
  get buckets(): number {
    return this.#buckets.size;
  }

  /**
   * The involved object `namespace/name` went: its events are not remembered (a repeat is created anew) and its
   * token buckets go. A deleted SyncConfig's uid never comes back.
   */
  forget(object: string): void {
    for (const key of [...this.#byObject.get(object) ?? []]) this.#forget(key);
    for (const [uid, b] of this.#buckets) if (b.object === object) this.#buckets.delete(uid);
  }

  /** Writes the count of a repeat now if a token allows, else when the next token comes (one timer per event). */
  async #writeRepeat(key: string, seen: Recorded): Promise<void> {
    if (seen.timer !== undefined) return; // already waiting for a token: that write takes this count too
    if (!this.#take(seen.target)) {
      seen.timer = this.clock.later(() => {
        seen.timer = undefined;
        if (this.#seen.get(key) === seen && seen.count > seen.writtenCount) void this.#writeRepeat(key, seen);
      }, this.#untilTokenMs(seen.target.uid));
      return;
    }
    const count = seen.count;
    try {
      await patchEvent(
        this.client,
        { namespace: seen.target.namespace, name: seen.eventName },
        { count, lastTimestamp: seen.lastTimestamp },
        { urgent: true, contentType: "application/merge-patch+json" },
      );
      seen.writtenCount = Math.max(seen.writtenCount, count);
    } catch (e) {
      this.#failed(key, "repeat", seen.target, e);
    }
  }

  #take(target: EventTarget): boolean {
    const { uid } = target;
    const now = this.clock.now();
    const b = this.#buckets.get(uid) ?? { tokens: SPAM_BURST, refilledAt: now, object: objectOf(target) };
    const earned = Math.floor((now - b.refilledAt) / SPAM_REFILL_MS);
    if (earned > 0) {
      b.tokens = Math.min(SPAM_BURST, b.tokens + earned);
      b.refilledAt = b.tokens === SPAM_BURST ? now : b.refilledAt + earned * SPAM_REFILL_MS;
    }
    if (this.#buckets.size >= MAX_REMEMBERED && !this.#buckets.has(uid)) {
      this.#buckets.delete(this.#buckets.keys().next().value!);
    }
    this.#buckets.set(uid, b);
    if (b.tokens <= 0) return false;
    if (b.tokens === SPAM_BURST) b.refilledAt = now; // a full bucket earns nothing while it is full
    b.tokens--;
    return true;
  }

  #untilTokenMs(uid: string): number {
    const b = this.#buckets.get(uid);
    return b ? Math.max(0, b.refilledAt + SPAM_REFILL_MS - this.clock.now()) : 0;
  }

  /** The event may have expired (1 h TTL by default): forget it so that the next repeat creates a new one. */
  #failed(key: string, reason: string, target: EventTarget, e: unknown): void {
    this.#forget(key);
    if (isForbidden(e) && !this.#refusedIn.has(target.namespace)) {
      // A missing right stays missing: said once per namespace, where the cluster admin looks.
      if (this.#refusedIn.size < MAX_REMEMBERED) this.#refusedIn.add(target.namespace);
      log.warn(
        "Cannot record Events in namespace {namespace}: {error}; deploy/ grants Events only in espejo's own " +
          "namespace: with WATCH_NAMESPACE empty, kubectl apply -k deploy/opt-in/events-in-every-namespace " +
          "(docs/reference.md#events)",
        { namespace: target.namespace, error: String(e) },
      );
      return;
    }
    log.debug("Could not record event {reason} on SyncConfig {namespace}/{name}: {error}", {
      reason,
      namespace: target.namespace,
      name: target.name,
      error: String(e),
    });
  }

  #forget(key: string): void {
    const seen = this.#seen.get(key);
    if (!seen) return;
    clearTimeout(seen.timer);
    this.#seen.delete(key);
    const object = objectOf(seen.target);
    const keys = this.#byObject.get(object);
    keys?.delete(key);
    if (keys?.size === 0) this.#byObject.delete(object);
  }
}

const objectOf = (target: EventTarget) => `${target.namespace}/${target.name}`;

const isoSeconds = (ms: number) => new Date(ms).toISOString().replace(/\.\d+Z$/, "Z");

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
