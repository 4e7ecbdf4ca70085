/** A cache's decoder that throws on one object skips it; the cache syncs and reads on (lib/kube/safe_decode.ts). */
import assert from "node:assert/strict";
import type { WatchEvent } from "../../lib/kube/client.ts";
import type { KubeObject } from "../../lib/kube/objects.ts";
import { Reflector } from "../../lib/kube/reflector.ts";
import { decodingSafely } from "../../lib/kube/safe_decode.ts";
import { watchListClient } from "./watch_list_client.ts";

const object = (name: string, rv: string): KubeObject => ({
  metadata: { namespace: "ns", name, uid: `uid-${name}`, resourceVersion: rv },
});

Deno.test("decodingSafely: a decoder's exception skips the object instead of leaving the caller's throw", () => {
  const decode = decodingSafely((raw: KubeObject) => {
    if (raw.metadata?.name === "bad") throw new RangeError("Maximum call stack size exceeded");
    return raw.metadata?.name;
  }, "/api/v1/configmaps");
  assert.equal(decode(object("good", "1")), "good");
  assert.equal(decode(object("bad", "1")), undefined);
});

Deno.test("Reflector: an object its decoder throws on is left out; the cache syncs and takes later events", async () => {
  const events: WatchEvent[] = [
    { type: "ADDED", object: object("a", "1") },
    { type: "ADDED", object: object("bad", "2") },
    { type: "ADDED", object: object("b", "3") },
    { type: "MODIFIED", object: object("bad", "10") },
    { type: "ADDED", object: object("c", "11") },
  ];
  const stop = new AbortController();
  const cache = new Reflector<string>(watchListClient(events, 3, "9"), {
    path: "/api/v1/configmaps",
    decode: (raw) => {
      if (raw.metadata?.name === "bad") throw new RangeError("Maximum call stack size exceeded");
      return raw.metadata?.name;
    },
  });
  try {
    cache.run(stop.signal);
    // Without the guard the initial state fails at every retry: fail then, rather than wait for ever.
    let timer: ReturnType<typeof setTimeout> | undefined;
    const stuck = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`the cache did not sync: ${cache.lastError}`)), 10_000);
    });
    await Promise.race([cache.synced, stuck]).finally(() => clearTimeout(timer));
    for (let i = 0; cache.get("ns/c") === undefined; i++) {
      assert.ok(i < 1000, "the watch event after the bad one is stored");
      await new Promise((r) => setTimeout(r, 1));
    }
    assert.deepEqual([...cache.values()].sort(), ["a", "b", "c"]);
    assert.equal(cache.lastError, undefined);
  } finally {
    stop.abort();
  }
});
