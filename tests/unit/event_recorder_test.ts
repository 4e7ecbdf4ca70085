import assert from "node:assert/strict";
import { configure, type LogRecord, reset } from "@logtape/logtape";
import { ApiError } from "../../lib/kube/errors.ts";
import type { KubeClient, KubeRequest } from "../../lib/kube/client.ts";
import {
  type EventClock,
  EventRecorder,
  MAX_REMEMBERED_PER_OBJECT,
  SPAM_BURST,
  SPAM_REFILL_MS,
} from "../../lib/kube/events.ts";

/** A client that records every request and answers it at once, and a clock the test moves by hand. */
function setup() {
  const sent: KubeRequest[] = [];
  const client: KubeClient = {
    request: <T>(req: KubeRequest) => (sent.push(req), Promise.resolve({} as T)),
    watch: () => (async function* () {})(),
  };
  let now = Date.parse("2026-12-04T10:00:00Z");
  const timers: { at: number; fn: () => void }[] = [];
  const clock: EventClock = {
    now: () => now,
    later: (fn, ms) => (timers.push({ at: now + ms, fn }), timers.length as unknown as ReturnType<typeof setTimeout>),
  };
  const advance = async (ms: number) => {
    now += ms;
    const due = timers.filter((t) => t.at <= now);
    timers.splice(0, timers.length, ...timers.filter((t) => t.at > now));
    for (const t of due) t.fn();
    await new Promise((r) => setTimeout(r, 0)); // lets the writes the timers started reach the client
  };
  const recorder = new EventRecorder(client, { apiVersion: "sync.appuio.ch/v1alpha1", kind: "SyncConfig" }, clock);
  const target = { namespace: "espejo", name: "cfg", uid: "u1" };
  const patches = () => sent.filter((r) => r.method === "PATCH").map((r) => r.body as { count: number });
  return { sent, recorder, target, advance, patches, timers };
}

Deno.test("EventRecorder writes a repeat's count and time at once, as client-go's correlator does", async () => {
  const { sent, recorder, target, advance, patches } = setup();
  await recorder.emit(target, "Warning", "SyncFailed", "item 1 failed");
  await advance(3_000);
  await recorder.emit(target, "Warning", "SyncFailed", "item 1 failed");
  await advance(3_000);
  await recorder.emit(target, "Warning", "SyncFailed", "item 1 failed");
  assert.deepEqual(sent.map((r) => r.method), ["POST", "PATCH", "PATCH"]);
  assert.deepEqual(patches(), [
    { count: 2, lastTimestamp: "2026-12-04T10:00:03Z" },
    { count: 3, lastTimestamp: "2026-12-04T10:00:06Z" },
  ]);
});

Deno.test("EventRecorder spends client-go's spam budget (25, then one per 5 minutes) and writes the count it held back", async () => {
  const { sent, recorder, target, advance, patches } = setup();
  for (let i = 0; i < 100; i++) {
    await recorder.emit(target, "Warning", "SyncFailed", "always failing");
    await advance(1_000);
  }
  assert.equal(sent.length, SPAM_BURST, "one create and 24 patches, then the bucket is empty");
  assert.equal(patches().at(-1)!.count, SPAM_BURST);
  // The next token comes 5 minutes after the bucket started to drain; the count held back is written then, whole.
  await advance(SPAM_REFILL_MS);
  assert.equal(sent.length, SPAM_BURST + 1);
  assert.equal(patches().at(-1)!.count, 100, "the write that the token allows carries every repeat so far");
});

Deno.test("EventRecorder never drops a held-back count, and sets one timer per event however often it repeats", async () => {
  const { recorder, target, advance, patches, timers } = setup();
  for (let i = 0; i < SPAM_BURST + 10; i++) await recorder.emit(target, "Warning", "SyncFailed", "again");
  assert.equal(timers.length, 1, "repeats while a write waits for a token share that write");
  await advance(SPAM_REFILL_MS);
  assert.equal(patches().at(-1)!.count, SPAM_BURST + 10);
});

Deno.test("EventRecorder says once per namespace, at warning, that a right to write Events is missing", async () => {
  const records: LogRecord[] = [];
  await configure({
    reset: true,
    sinks: { records: (r) => records.push(r) },
    loggers: [{ category: ["espejo", "events"], lowestLevel: "debug", sinks: ["records"] }],
  });
  try {
    const refused = new ApiError(403, "Forbidden", 'events is forbidden: User "x" cannot create resource "events"');
    const client: KubeClient = { request: () => Promise.reject(refused), watch: () => (async function* () {})() };
    const recorder = new EventRecorder(client, { apiVersion: "sync.appuio.ch/v1alpha1", kind: "SyncConfig" });
    for (const namespace of ["team-a", "team-a", "team-b"]) {
      await recorder.emit({ namespace, name: "cfg", uid: `u-${namespace}` }, "Warning", "SyncFailed", "failed");
    }
    const warnings = records.filter((r) => r.level === "warning");
    assert.deepEqual(warnings.map((r) => r.properties.namespace), ["team-a", "team-b"]);
    assert.match(String(warnings[0].message.join("")), /deploy\/opt-in\/events-in-every-namespace/);
    assert.equal(records.filter((r) => r.level === "debug").length, 1, "the repeat in team-a at debug level");
  } finally {
    await reset();
  }
});

Deno.test("EventRecorder remembers at most MAX_REMEMBERED_PER_OBJECT distinct events of one object, the newest", async () => {
  const { sent, recorder, advance } = setup();
  // A new uid each time (a SyncConfig deleted and created again) brings a full bucket: 25 events each.
  const created = MAX_REMEMBERED_PER_OBJECT + 36;
  for (let i = 0; i < created; i++) {
    await recorder.emit(
      { namespace: "team", name: "own", uid: `u${Math.floor(i / SPAM_BURST)}` },
      "Warning",
      "X",
      `m${i}`,
    );
  }
  await recorder.emit({ namespace: "espejo", name: "other", uid: "o" }, "Warning", "X", "kept");
  assert.equal(sent.length, created + 1);
  assert.equal(recorder.size, MAX_REMEMBERED_PER_OBJECT + 1, "its oldest went, the other object's stays");
  await advance(SPAM_REFILL_MS); // a token for the last uid
  await recorder.emit({ namespace: "team", name: "own", uid: "u3" }, "Warning", "X", `m${created - 1}`);
  assert.equal(sent.at(-1)!.method, "PATCH", "the newest is still aggregated");
});

Deno.test("EventRecorder.forget: an object that went takes its events and buckets with it", async () => {
  const { sent, recorder, target, timers } = setup();
  const other = { namespace: "espejo", name: "other", uid: "u2" };
  for (let i = 0; i < SPAM_BURST + 2; i++) await recorder.emit(target, "Warning", "X", "repeat");
  assert.equal(timers.length, 1, "a repeat waits for a token");
  await recorder.emit(other, "Normal", "Y", "kept");
  assert.equal(recorder.size, 2);
  assert.equal(recorder.buckets, 2);
  recorder.forget("espejo/cfg");
  assert.equal(recorder.size, 1);
  assert.equal(recorder.buckets, 1);
  const before = sent.length;
  await recorder.emit(other, "Normal", "Y", "kept");
  assert.equal(sent.length, before + 1);
  assert.equal(sent.at(-1)!.method, "PATCH", "the other object's event is still aggregated");
});
