/**
 * A tenant nests what it writes into a synced object as deep as the API server stores it (lib/kube/json_depth.ts):
 * a custom resource whose schema preserves unknown fields, its `.spec` replaced by the tenant, with its own token,
 * with a value 5,000, 8,000 and API_SERVER_MAX_DEPTH levels deep. espejo restores the item within two reconcile
 * intervals each time, its caches stay synced, and so after a restart with such an object present. The API server's
 * limit is checked too: one level more is refused.
 */
import assert from "node:assert/strict";
import type { HttpKubeClient } from "../../lib/kube/client.ts";
import { canonicalJson, jsonText } from "../../lib/kube/canonical_json.ts";
import { API_SERVER_MAX_DEPTH, deeperThan } from "../../lib/kube/json_depth.ts";
import { applyYaml } from "../../testenv/apply.ts";
import { clientFor, eventually, type TestCluster, testCluster, uniqueName } from "../../testenv/shared.ts";
import {
  createNamespace,
  createSyncConfig,
  getObject,
  type RunningController,
  startController,
  statusOf,
  type TestObject,
} from "../../testenv/harness.ts";
import { createTenant } from "../../testenv/tenant.ts";
import { widgetKindYaml } from "../../testenv/widgets.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };
/** The reconcile interval of every controller in this file. */
const INTERVAL_MS = 3000;
/**
 * How long a tenant's deep object may survive: two reconcile intervals, plus 20 s of slack for a busy 2-core machine
 * (a control plane, other test files, and each 10,000-level object parsed, stored and sent several times by the API
 * server and parsed and hashed by espejo). A watch event should make it much faster.
 */
const RESTORE_MS = 2 * INTERVAL_MS + 20_000;

const DEPTHS = [5_000, 8_000, API_SERVER_MAX_DEPTH];
const WANT = { size: 3, tier: "gold" };

interface Setup {
  admin: HttpKubeClient;
  tenant: HttpKubeClient;
  /** Sends `body` as the tenant, written as JSON by jsonText: the engine's JSON.stringify may recurse at this depth. */
  tenantSends(method: "POST" | "PUT", path: string, body: unknown): Promise<TestObject>;
  cfgNs: string;
  ns: string;
  /** The Widget's path. */
  path: string;
  close(): void;
}

/**
 * A CRD of its own (every field preserved), the right for espejo to sync it (aggregated into its ClusterRole as an
 * admin opts in a kind), a namespace and its tenant: a ServiceAccount bound to a Role there that may write Widgets.
 */
async function setup(c: TestCluster): Promise<Setup> {
  const admin = clientFor(c);
  const cfgNs = uniqueName("cfg");
  const ns = uniqueName("deep");
  const group = `${ns}.example.com`;
  await applyYaml(admin, widgetKindYaml(group, `espejo-widgets-${ns}`));
  await eventually(
    async () => {
      const role = await admin.request<{ rules?: { apiGroups?: string[] }[] }>({
        method: "GET",
        path: "/apis/rbac.authorization.k8s.io/v1/clusterroles/espejo-manager",
      });
      return role.rules?.some((r) => r.apiGroups?.includes(group));
    },
    60_000,
    `ClusterRole espejo-manager to aggregate the right to sync widgets.${group}`,
  );
  await createNamespace(admin, ns);
  await eventually(() => admin.request({ method: "GET", path: `/apis/${group}/v1/widgets` }), 30_000, "the CRD");
  const { client: tenant, identity: { token } } = await createTenant(c, admin, ns, {
    rules: [{ apiGroups: [group], resources: ["widgets"] }],
    verbs: ["get", "list", "watch", "create", "update"],
  });
  const http = Deno.createHttpClient({ caCerts: [c.caPem] });
  const tenantSends = async (method: "POST" | "PUT", path: string, body: unknown) => {
    const res = await fetch(c.server + path, {
      method,
      client: http,
      body: jsonText(body),
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
    return JSON.parse(text) as TestObject;
  };
  const close = () => {
    tenant.close();
    http.close();
    admin.close();
  };
  return { admin, tenant, tenantSends, close, cfgNs, ns, path: `/apis/${group}/v1/namespaces/${ns}/widgets/w` };
}

/**
 * `levels` levels around a string, objects `{ a: ... }` and one-element lists alternately: the server takes a path
 * through lists at any depth up to its limit (one through objects only is refused at 9,996 to 9,999 levels, where its
 * managedFields record would nest past the limit; see API_SERVER_MAX_DEPTH).
 */
function nested(levels: number): unknown {
  let v: unknown = "tenant";
  for (let i = 0; i < levels; i++) v = i % 2 ? [v] : { a: v };
  return v;
}

/**
 * The tenant replaces the Widget (PUT) with `.spec.<field>` nested so that the object is `depth` levels deep (the
 * object itself the first, `.spec` the second); checks that the server stored that.
 */
async function tenantNests(s: Setup, depth: number, field: "size" | "extra"): Promise<void> {
  const live = await s.tenant.request<TestObject>({ method: "GET", path: s.path });
  const spec = { ...WANT, [field]: nested(depth - 2) };
  let stored: TestObject;
  try {
    stored = await s.tenantSends("PUT", s.path, { ...live, spec });
  } catch (e) {
    throw new Error(
      `the tenant's PUT of a Widget ${depth} levels deep was refused, so the attack was never made: ${e}`,
    );
  }
  assert.ok(deeperThan(stored, depth - 1) && !deeperThan(stored, depth), `the server stored ${depth} levels`);
}

/** Polls the Widget until its spec is the item's again; on timeout says what was last seen and the status. */
async function restored(s: Setup, what: string): Promise<void> {
  let last = "nothing read yet";
  try {
    await eventually(
      async () => {
        const o = await getObject(s.admin, s.path);
        const ok = o !== undefined && canonicalJson(o.spec) === canonicalJson(WANT);
        last = !o ? "no Widget" : ok ? "" : `a spec ${deeperThan(o.spec, 100) ? "more than 100 levels deep" : "other"}`;
        return ok;
      },
      RESTORE_MS,
      what,
    );
  } catch {
    const status = await statusOf(s.admin, s.cfgNs, "widgets").catch((e) => String(e));
    throw new Error(
      `Timed out after ${RESTORE_MS} ms waiting for ${what}; last seen: ${last}; SyncConfig status: ${
        JSON.stringify(status)
      }`,
    );
  }
}

/** The SyncConfig reports its one item synchronized, none failed: its cache of Widgets is synced. */
async function reportsSynced(s: Setup): Promise<void> {
  await eventually(
    async () => {
      const st = await statusOf(s.admin, s.cfgNs, "widgets");
      return st.synchronizedItemCount === 1 && st.failedItemCount === 0;
    },
    RESTORE_MS,
    `SyncConfig ${s.cfgNs}/widgets to report its item synchronized`,
  );
}

async function syncWidget(s: Setup): Promise<void> {
  const group = s.path.split("/")[2];
  await createSyncConfig(s.admin, s.cfgNs, "widgets", {
    namespaceSelector: { matchNames: [s.ns] },
    syncItems: [{ apiVersion: `${group}/v1`, kind: "Widget", metadata: { name: "w" }, spec: WANT }],
  });
  await restored(s, "the Widget to be synced");
  await reportsSynced(s);
}

Deno.test(
  "A tenant's object nested 5,000, 8,000 and API_SERVER_MAX_DEPTH levels deep is restored within two intervals",
  opts,
  async (t) => {
    const c = await testCluster();
    const s = await setup(c);
    const ctl = await startController(c, { watchNamespace: s.cfgNs, reconcileIntervalMs: INTERVAL_MS });
    try {
      await syncWidget(s);
      for (const depth of DEPTHS) {
        for (const field of ["size", "extra"] as const) {
          await t.step(`.spec.${field} nested so that the object is ${depth} levels deep`, async () => {
            await tenantNests(s, depth, field);
            await restored(s, `the Widget ${depth} levels deep (.spec.${field}) to be restored`);
          });
        }
      }
      assert.ok(ctl.controller.ready, "the controller's caches are synced");
      await reportsSynced(s);
    } finally {
      await ctl.stop();
      s.close();
    }
  },
);

Deno.test("The API server refuses an object one level deeper than API_SERVER_MAX_DEPTH", opts, async () => {
  const c = await testCluster();
  const s = await setup(c);
  try {
    const group = s.path.split("/")[2];
    const body = (name: string, depth: number) => ({
      apiVersion: `${group}/v1`,
      kind: "Widget",
      metadata: { name },
      spec: nested(depth - 1),
    });
    const collection = `/apis/${group}/v1/namespaces/${s.ns}/widgets`;
    await s.tenantSends("POST", collection, body("deepest", API_SERVER_MAX_DEPTH));
    await assert.rejects(
      s.tenantSends("POST", collection, body("deeper", API_SERVER_MAX_DEPTH + 1)),
      /exceeded max depth/,
    );
    await s.admin.request({ method: "GET", path: collection }); // the deepest object does not break the list
  } finally {
    s.close();
  }
});

Deno.test("A deep object present when espejo starts is restored, and the cache syncs", opts, async () => {
  const c = await testCluster();
  const s = await setup(c);
  let ctl: RunningController | undefined = await startController(c, {
    watchNamespace: s.cfgNs,
    reconcileIntervalMs: INTERVAL_MS,
  });
  try {
    await syncWidget(s);
    await ctl.stop();
    ctl = undefined;
    await tenantNests(s, API_SERVER_MAX_DEPTH, "size");
    ctl = await startController(c, { watchNamespace: s.cfgNs, reconcileIntervalMs: INTERVAL_MS });
    await restored(s, "the Widget that was deep at the start to be restored");
    assert.ok(ctl.controller.ready, "the controller's caches are synced");
    await reportsSynced(s);
  } finally {
    await ctl?.stop();
    s.close();
  }
});
