/**
 * What a replica that does not hold the Lease holds back (lib/controller/standby.ts), the client that refuses its
 * writes (lib/controller/standby_client.ts), and its caches judging watch events as they arrive
 * (lib/sync/resource_caches.ts, `judgeEvents`).
 */
import assert from "node:assert/strict";
import type { KubeClient, KubeRequest, WatchEvent } from "../../lib/kube/client.ts";
import type { ResourceInfo } from "../../lib/kube/discovery.ts";
import type { EventTarget } from "../../lib/kube/events.ts";
import { Standby } from "../../lib/controller/standby.ts";
import { NotLeadingError, writesWhenLeading } from "../../lib/controller/standby_client.ts";
import { ResourceCaches } from "../../lib/sync/resource_caches.ts";
import { MANAGED_LABEL, MANAGED_LABEL_VALUE } from "../../lib/model/markers.ts";
import { watchListClient } from "./watch_list_client.ts";

const target: EventTarget = { name: "a", namespace: "espejo", uid: "u1" };

Deno.test("Standby: a compile's Events wait until it leads, then go out in order", async () => {
  const sent: string[] = [];
  const standby = new Standby({ emit: (_t, _type, reason) => (sent.push(reason), Promise.resolve()) });
  await standby.events.emit(target, "Warning", "First", "m");
  await standby.events.emit(target, "Warning", "Second", "m");
  assert.deepEqual(sent, []);
  standby.lead();
  assert.deepEqual(sent, ["First", "Second"]);
  await standby.events.emit(target, "Warning", "Third", "m");
  assert.deepEqual(sent, ["First", "Second", "Third"]);
});

Deno.test("Standby: namespaces changed after the caches synced are held, then handed out latest first", () => {
  const standby = new Standby({ emit: () => Promise.resolve() });
  assert.equal(standby.held("listed"), true, "a change of the first list is held back too");
  standby.watch();
  for (const ns of ["a", "b", "a", "c"]) assert.equal(standby.held(ns), true);
  assert.equal(standby.leading, false);
  assert.deepEqual(standby.lead(), ["c", "a", "b"], "the latest change first, each namespace once");
  assert.equal(standby.leading, true);
  assert.equal(standby.held("d"), false, "a leader queues at once");
  assert.deepEqual(standby.lead(), []);
});

/** A client that records what reaches it and answers `{}`. */
function recording(): { client: KubeClient; asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    client: {
      request: <T>(req: KubeRequest) => (asked.push(`${req.method} ${req.path}`), Promise.resolve({} as T)),
      listPage: (req) => (asked.push(`LIST ${req.path}`), Promise.resolve({})),
      watch: (path) => {
        asked.push(`WATCH ${path}`);
        return (async function* () {})();
      },
    },
  };
}

Deno.test("writesWhenLeading: a standby's reads and watches pass, its writes are refused unsent", async () => {
  const { client, asked } = recording();
  let leading = false;
  const guarded = writesWhenLeading(client, () => leading);
  await guarded.request({ method: "GET", path: "/api/v1" });
  await guarded.listPage!({ method: "GET", path: "/api/v1/configmaps" }, () => {});
  for await (const _ of guarded.watch("/api/v1/configmaps", {}, new AbortController().signal)) { /* none */ }
  for (const method of ["POST", "PUT", "PATCH", "DELETE"] as const) {
    await assert.rejects(guarded.request({ method, path: "/api/v1/namespaces/a/configmaps/x" }), NotLeadingError);
  }
  assert.deepEqual(asked, ["GET /api/v1", "LIST /api/v1/configmaps", "WATCH /api/v1/configmaps"]);
  leading = true;
  await guarded.request({ method: "PATCH", path: "/api/v1/namespaces/a/configmaps/x" });
  assert.equal(asked.at(-1), "PATCH /api/v1/namespaces/a/configmaps/x");
});

Deno.test("writesWhenLeading: a client without listPage stays without it (lists are read by request)", () => {
  const { client } = recording();
  delete client.listPage;
  assert.equal(writesWhenLeading(client, () => false).listPage, undefined);
});

const CONFIGMAPS: ResourceInfo = {
  resource: "configmaps",
  namespaced: true,
  group: "",
  version: "v1",
  kind: "ConfigMap",
  verbs: ["list", "watch"],
};
const configMap = (rv: string, data: string) => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: {
    name: "cm",
    namespace: "ns",
    uid: "u-cm",
    resourceVersion: rv,
    labels: { [MANAGED_LABEL]: MANAGED_LABEL_VALUE },
  },
  data: { a: data },
});

for (const standby of [true, false]) {
  Deno.test(
    `ResourceCaches: a watch event after the initial state is ${
      standby ? "judged as it arrives on a standby" : "left to the unit on a leader"
    }`,
    async () => {
      const events: WatchEvent[] = [
        { type: "ADDED", object: configMap("10", "first") },
        { type: "MODIFIED", object: configMap("11", "tenant") },
      ];
      const judged: string[] = [];
      const stop = new AbortController();
      const caches = new ResourceCaches(watchListClient(events, 1, "10"), stop.signal, {
        judge: (_r, entry, _ns, _name, content) => {
          judged.push(entry.resourceVersion);
          entry.inSync = (content as { data?: { a?: string } }).data?.a === "first" ? true : undefined;
          return true;
        },
        judgeEvents: () => standby,
      });
      try {
        const cache = caches.managed(CONFIGMAPS);
        await cache.synced;
        for (let i = 0; cache.get("ns/cm")?.resourceVersion !== "11"; i++) {
          assert.ok(i < 1000, "the watch event is stored");
          await new Promise((r) => setTimeout(r, 1));
        }
        const entry = cache.get("ns/cm")!;
        if (standby) {
          assert.deepEqual(judged, ["10", "11"]);
          assert.equal(entry.json, undefined, "judged: no content kept");
        } else {
          assert.deepEqual(judged, ["10"]);
          assert.ok(entry.json?.includes("tenant"), "kept for the unit");
        }
      } finally {
        stop.abort();
      }
    },
  );
}
