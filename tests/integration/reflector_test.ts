/**
 * The reflector's store against the real API server: it fills from a WatchList (from pages read item by item where
 * the server refuses one), and the reply of a write that arrives after the watch has moved on (deleted, or replaced
 * by a new object of the same name) must not bring back what is gone.
 */
import assert from "node:assert/strict";
import { Reflector } from "../../lib/kube/reflector.ts";
import type { KubeObject } from "../../lib/kube/objects.ts";
import type { HttpKubeClient, KubeClient, KubeRequest, ListRest, WatchEvent } from "../../lib/kube/client.ts";
import { ApiError } from "../../lib/kube/errors.ts";
import { clientFor, eventually, testCluster, uniqueName } from "../../testenv/shared.ts";
import { createNamespace } from "../../testenv/harness.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

async function withReflector(
  fn: (r: Reflector<KubeObject>, ns: string, admin: ReturnType<typeof clientFor>) => Promise<void>,
): Promise<void> {
  const admin = clientFor(await testCluster());
  const ns = uniqueName("reflector");
  await createNamespace(admin, ns);
  const stop = new AbortController();
  const reflector = new Reflector<KubeObject>(admin, {
    path: `/api/v1/namespaces/${ns}/configmaps`,
    decode: (raw) => raw,
  });
  reflector.run(stop.signal);
  try {
    await reflector.synced;
    await fn(reflector, ns, admin);
  } finally {
    stop.abort();
    admin.close();
  }
}

const configMap = (name: string) => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name } });

Deno.test("Reflector.upsert of a late reply does not bring back a deleted object", opts, async () => {
  await withReflector(async (reflector, ns, admin) => {
    const path = `/api/v1/namespaces/${ns}/configmaps`;
    const reply = await admin.request<KubeObject>({ method: "POST", path, body: configMap("gone") });
    await eventually(() => reflector.get(`${ns}/gone`), 10_000, "the watch to deliver the create");
    await admin.request({ method: "DELETE", path: `${path}/gone` });
    await eventually(() => !reflector.get(`${ns}/gone`), 10_000, "the watch to deliver the delete");
    reflector.upsert(reply);
    assert.equal(reflector.get(`${ns}/gone`), undefined, "the deleted object stays gone");
  });
});

Deno.test("Reflector.upsert of a late reply does not replace a newer object of the same name", opts, async () => {
  await withReflector(async (reflector, ns, admin) => {
    const path = `/api/v1/namespaces/${ns}/configmaps`;
    const first = await admin.request<KubeObject>({ method: "POST", path, body: configMap("same") });
    await admin.request({ method: "DELETE", path: `${path}/same` });
    const second = await admin.request<KubeObject>({ method: "POST", path, body: configMap("same") });
    await eventually(
      () => reflector.get(`${ns}/same`)?.metadata?.uid === second.metadata?.uid,
      10_000,
      "the watch to deliver the new object",
    );
    reflector.upsert(first);
    assert.equal(reflector.get(`${ns}/same`)?.metadata?.uid, second.metadata?.uid, "the new object stays");
  });
});

Deno.test("Reflector.upsert of a fresh reply is stored before the watch delivers it", opts, async () => {
  await withReflector(async (reflector, ns, admin) => {
    const path = `/api/v1/namespaces/${ns}/configmaps`;
    await admin.request<KubeObject>({ method: "POST", path, body: configMap("fresh") });
    const current = await eventually(() => reflector.get(`${ns}/fresh`), 10_000, "the create");
    // A reply newer than anything the watch saw (its version ahead of the store's) is taken at once.
    const ahead = structuredClone(current);
    ahead.metadata!.resourceVersion = String(BigInt(current.metadata!.resourceVersion!) + 1_000_000n);
    ahead.metadata!.labels = { marker: "reply" };
    reflector.upsert(ahead);
    assert.equal(reflector.get(`${ns}/fresh`)?.metadata?.labels?.marker, "reply");
  });
});

/** The real client, recording what the reflector asks of it; `refuseWatchList` answers as a server before 1.27. */
class Recording implements KubeClient {
  readonly watches: Record<string, unknown>[] = [];
  readonly lists: Record<string, unknown>[] = [];
  constructor(readonly real: HttpKubeClient, readonly refuseWatchList = false) {}
  request<T>(req: KubeRequest): Promise<T> {
    if (req.method === "GET" && req.query?.limit !== undefined) this.lists.push({ ...req.query });
    return this.real.request<T>(req);
  }
  listPage(req: KubeRequest, onItem: (item: unknown) => void): Promise<ListRest> {
    this.lists.push({ ...req.query });
    return this.real.listPage(req, onItem);
  }
  watch(path: string, query: KubeRequest["query"], signal: AbortSignal, accept?: string): AsyncIterable<WatchEvent> {
    this.watches.push({ ...query });
    if (this.refuseWatchList && query?.sendInitialEvents) {
      const refused = new ApiError(
        422,
        "Invalid",
        "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch",
      );
      return (async function* () {
        yield* [] as WatchEvent[];
        throw refused;
      })();
    }
    return this.real.watch(path, query, signal, accept);
  }
}

async function filled(client: Recording, path: string, metadataOnly: boolean) {
  const changes: string[] = [];
  const stop = new AbortController();
  const reflector = new Reflector<string>(client, {
    path,
    metadataOnly,
    pageSize: 2,
    decode: (raw) => `${raw.kind}:${raw.metadata?.name}`,
    onChange: (type, _v, _o, key) => changes.push(`${type} ${key}`),
  });
  reflector.run(stop.signal);
  await reflector.synced;
  return { reflector, changes, stop };
}

for (const metadataOnly of [false, true]) {
  Deno.test(
    `Reflector fills its store from a WatchList${metadataOnly ? " of metadata" : ""}, no list`,
    opts,
    async () => {
      const admin = clientFor(await testCluster());
      const ns = uniqueName("watchlist");
      await createNamespace(admin, ns);
      const path = `/api/v1/namespaces/${ns}/configmaps`;
      for (const name of ["a", "b", "c"]) await admin.request({ method: "POST", path, body: configMap(name) });
      const client = new Recording(admin);
      const { reflector, changes, stop } = await filled(client, path, metadataOnly);
      try {
        const kind = metadataOnly ? "PartialObjectMetadata" : "ConfigMap";
        assert.deepEqual([...reflector.entries()].filter(([k]) => k !== `${ns}/kube-root-ca.crt`).sort(), [
          [`${ns}/a`, `${kind}:a`],
          [`${ns}/b`, `${kind}:b`],
          [`${ns}/c`, `${kind}:c`],
        ]);
        assert.equal(client.lists.length, 0, "no list request");
        assert.equal(client.watches[0].sendInitialEvents, true);
        assert.ok(changes.includes(`added ${ns}/a`), "the initial objects are reported as added");
        // The same stream goes on as the watch.
        await admin.request({ method: "DELETE", path: `${path}/b` });
        await admin.request({ method: "POST", path, body: configMap("d") });
        await eventually(() => reflector.get(`${ns}/d`) && !reflector.get(`${ns}/b`), 10_000, "the watch to go on");
        assert.equal(client.watches.length, 1, "one stream");
      } finally {
        stop.abort();
        admin.close();
      }
    },
  );
}

Deno.test(
  "Reflector lists page by page where the server refuses WatchList, then watches from the list",
  opts,
  async () => {
    const admin = clientFor(await testCluster());
    const ns = uniqueName("nowatchlist");
    await createNamespace(admin, ns);
    const path = `/api/v1/namespaces/${ns}/configmaps`;
    for (const name of ["a", "b", "c", "d", "e"]) await admin.request({ method: "POST", path, body: configMap(name) });
    const client = new Recording(admin, true);
    const { reflector, changes, stop } = await filled(client, path, true);
    try {
      assert.deepEqual(
        [...reflector.entries()].map(([k]) => k).filter((k) => k !== `${ns}/kube-root-ca.crt`).sort(),
        ["a", "b", "c", "d", "e"].map((n) => `${ns}/${n}`),
      );
      assert.ok(client.lists.length >= 3, `pages of 2: ${client.lists.length} requests`);
      assert.equal(client.watches.filter((w) => w.sendInitialEvents).length, 1, "WatchList is tried once");
      assert.ok(client.watches.at(-1)?.resourceVersion, "then it watches from the list's version");
      assert.ok(changes.includes(`added ${ns}/e`));
    } finally {
      stop.abort();
      admin.close();
    }
  },
);
