/**
 * Pure parts of `deno task compare` (bench/compare.ts): the scenario (namespaces, pre-existing objects, SyncConfigs
 * and the mutations made during a run), the normalisation of snapshots, their diff, and the tables of the report.
 *
 * Every name a run creates starts with the run's prefix (`<prefix>-team-a`, `<prefix>-cfg`), so two runs differ
 * only by it; normalising maps it to `<P>`.
 */
import type { AuditEvent } from "../testenv/controlplane.ts";

export type Obj = Record<string, unknown>;

export const RUN_LABEL = "cmp.example/run";
export const SCALE_LABEL = "cmp.example/scale";
export const MARKER_LABEL = "sync.appuio.ch/managed-by";
export const OWNER_ANNOTATION = "sync.appuio.ch/owner";
export const HASH_ANNOTATION = "sync.appuio.ch/desired-hash";
export const CREATED_BY_ANNOTATION = "sync.appuio.ch/created-by";
export const PREFIX_TOKEN = "<P>";

const b64 = (s: string) => btoa(s);

// ---------------------------------------------------------------------------------------------------------------
// The semantic scenario

/** Target namespaces (suffixes) and their labels; `p` is the run prefix. */
export function scenarioNamespaces(p: string): { name: string; labels: Record<string, string> }[] {
  const tenant = (tier: string, extra: Record<string, string> = {}) => ({
    [RUN_LABEL]: p,
    tenant: "true",
    tier,
    ...extra,
  });
  return [
    { name: `${p}-team-a`, labels: tenant("gold") }, // label selector and matchNames
    { name: `${p}-team-b`, labels: tenant("bronze") }, // matchNames only (tier not In [gold, silver])
    { name: `${p}-team-sandbox`, labels: tenant("gold") }, // ignoreNames
    { name: `${p}-silver`, labels: tenant("silver") }, // label selector only
    { name: `${p}-frozen`, labels: tenant("gold", { frozen: "yes" }) }, // matchExpressions DoesNotExist excludes it
    { name: `${p}-alpha`, labels: { [RUN_LABEL]: p } }, // matched by "<p>-alpha|omega" anchored or not
    { name: `${p}-alphabet`, labels: { [RUN_LABEL]: p } }, // only by Go's ^<p>-alpha|omega$ (prefix match)
    { name: `${p}-omega`, labels: { [RUN_LABEL]: p } }, // only by Go's ^<p>-alpha|omega$ (suffix match)
    { name: `${p}-late`, labels: { [RUN_LABEL]: p } }, // relabelled during the run: becomes a tenant
    { name: `${p}-leaving`, labels: tenant("gold") }, // relabelled during the run: stops being a tenant
  ];
}

/** Objects that exist before the controller starts: to adopt, to recreate, to delete, to leave alone. */
export function preexistingObjects(p: string): Obj[] {
  const cm = (ns: string, name: string, extra: Obj = {}): Obj => ({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name, namespace: `${p}-${ns}`, ...(extra.metadata as Obj ?? {}) },
    data: (extra.data as Obj) ?? { purpose: "pre-existing" },
  });
  const secret = (ns: string, name: string, data: Record<string, string>, extra: Obj = {}): Obj => ({
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name, namespace: `${p}-${ns}` },
    type: "Opaque",
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])),
    ...extra,
  });
  const out: Obj[] = [
    // adopted: same name as an item, different content, extra label and annotation
    cm("team-a", "tenant-info", {
      metadata: { labels: { precreated: "yes" }, annotations: { note: "created by hand" } },
      data: { namespace: "wrong", extra: "left over" },
    }),
    // adopted: a Secret item written with stringData over a Secret with other keys
    secret("team-b", "tenant-credentials", { user: "someone", extra: "left over" }),
    // immutable with other data: the update is rejected as invalid, forceRecreate deletes and creates
    secret("team-b", "tenant-immutable", { token: "old" }, { immutable: true }),
    // not named by anything: must stay
    cm("alpha", "unrelated"),
  ];
  // "late" is selected only after its relabel: there the deletes follow a namespace event.
  for (const ns of ["team-a", "team-b", "silver", "late"]) {
    out.push(cm(ns, "retired-config")); // deleteItem with a literal name
    out.push(secret(ns, `retired-${p}-${ns}`, { old: "yes" })); // deleteItem "retired-${PROJECT_NAME}"
  }
  return out;
}

const widget = (name: string) => ({ apiVersion: "example.com/v1", kind: "Widget", metadata: { name } });

/** The SyncConfigs of a run; stage 2 is after the mid-run edits. */
export function scenarioSyncConfigs(p: string, stage: 1 | 2): Obj[] {
  const sc = (name: string, spec: Obj): Obj => ({
    apiVersion: "sync.appuio.ch/v1alpha1",
    kind: "SyncConfig",
    metadata: { name, namespace: `${p}-cfg` },
    spec,
  });
  return [
    sc("tenant-defaults", {
      forceRecreate: true,
      namespaceSelector: {
        labelSelector: {
          matchLabels: { [RUN_LABEL]: p, tenant: "true" },
          matchExpressions: [
            { key: "tier", operator: "In", values: ["gold", "silver"] },
            { key: "frozen", operator: "DoesNotExist" },
          ],
        },
        matchNames: [`${p}-team-.*`],
        ignoreNames: [`${p}-team-sandbox`],
      },
      syncItems: [
        {
          apiVersion: "v1",
          kind: "ConfigMap",
          metadata: {
            name: "tenant-info",
            // Label values cannot hold "${PROJECT_NAME}": the CRD's embedded-resource validation rejects them.
            labels: { app: "espejo-compare" },
            annotations: { description: "defaults for ${PROJECT_NAME}" },
          },
          data: { namespace: "${PROJECT_NAME}", greeting: "hello ${PROJECT_NAME}" },
        },
        { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "info-${PROJECT_NAME}" }, data: { named: "yes" } },
        {
          apiVersion: "v1",
          kind: "Secret",
          metadata: { name: "tenant-credentials" },
          type: "Opaque",
          stringData: { user: "${PROJECT_NAME}-user", password: "s3cret" },
        },
        {
          apiVersion: "v1",
          kind: "Secret",
          metadata: { name: "tenant-immutable" },
          type: "Opaque",
          immutable: true,
          data: { token: b64(stage === 1 ? "v1" : "v2") },
        },
        {
          apiVersion: "rbac.authorization.k8s.io/v1",
          kind: "Role",
          metadata: { name: "tenant-reader" },
          rules: [{ apiGroups: [""], resources: ["configmaps"], verbs: ["get", "list", "watch"] }],
        },
        {
          apiVersion: "rbac.authorization.k8s.io/v1",
          kind: "RoleBinding",
          metadata: { name: "tenant-reader" },
          roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "tenant-reader" },
          subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "Group", name: "${PROJECT_NAME}-members" }],
        },
        {
          apiVersion: "networking.k8s.io/v1",
          kind: "NetworkPolicy",
          metadata: { name: "allow-same-namespace" },
          spec: { podSelector: {}, ingress: [{ from: [{ podSelector: {} }] }] },
        },
        {
          apiVersion: "v1",
          kind: "Service",
          metadata: { name: "tenant-dns" },
          spec: {
            clusterIP: "None",
            selector: { app: "dns-${PROJECT_NAME}" },
            ports: [{ name: "dns", port: 53, protocol: "UDP" }],
          },
        },
        {
          apiVersion: "v1",
          kind: "LimitRange",
          metadata: { name: "tenant-limits" },
          spec: {
            limits: [{
              type: "Container",
              default: { cpu: "0.5", memory: "256Mi" },
              defaultRequest: { cpu: "100m", memory: "128Mi" },
            }],
          },
        },
      ],
      deleteItems: [
        { apiVersion: "v1", kind: "ConfigMap", name: "retired-config" },
        { apiVersion: "v1", kind: "Secret", name: "retired-${PROJECT_NAME}" },
        { apiVersion: "v1", kind: "ConfigMap", name: "never-existed" },
      ],
    }),
    sc("alternation", {
      namespaceSelector: { matchNames: [`${p}-alpha|omega`] },
      syncItems: [{
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "alternation-marker" },
        data: { matched: "${PROJECT_NAME}" },
      }],
    }),
    sc("invalid-regex", {
      namespaceSelector: { matchNames: [stage === 1 ? `${p}-(unclosed` : `${p}-team-b`] },
      syncItems: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "regex-fixed" }, data: { a: "b" } }],
    }),
    sc("no-selector", {
      namespaceSelector: { ignoreNames: [`${p}-nothing`] },
      syncItems: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "never" }, data: { a: "b" } }],
    }),
    sc("unknown-kind", {
      namespaceSelector: { matchNames: [`${p}-team-a`] },
      syncItems: [widget("w1")],
    }),
    sc("partial-failure", {
      namespaceSelector: { matchNames: [`${p}-team-a`, `${p}-team-b`] },
      syncItems: [
        { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "partial-ok" }, data: { ok: "${PROJECT_NAME}" } },
        widget("w2"),
      ],
      deleteItems: [{ apiVersion: "example.com/v1", kind: "Widget", name: "gone" }],
    }),
    sc("recovering", {
      namespaceSelector: { matchNames: [`${p}-team-a`] },
      syncItems: stage === 1
        ? [widget("w3")]
        : [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "recovered" }, data: { ok: "yes" } }],
    }),
    sc("cluster-scoped", {
      namespaceSelector: { matchNames: [`${p}-team-a`] },
      syncItems: [{
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRole",
        metadata: { name: "${PROJECT_NAME}-viewer" },
        rules: [{ apiGroups: [""], resources: ["configmaps"], verbs: ["get"] }],
      }],
    }),
  ];
}

/** What the run changes once converged: relabels, hand edits (drift), SyncConfig edits. */
export function scenarioMutations(p: string): { path: string; body: Obj; what: string }[] {
  const ns = (n: string) => `/api/v1/namespaces/${p}-${n}`;
  return [
    { path: ns("late"), body: { metadata: { labels: { tenant: "true", tier: "silver" } } }, what: "late: tenant" },
    { path: ns("leaving"), body: { metadata: { labels: { tenant: null } } }, what: "leaving: no tenant" },
    {
      path: `${ns("team-a")}/configmaps/tenant-info`,
      body: { metadata: { labels: { tampered: "yes" } }, data: { greeting: "tampered" } },
      what: "team-a tenant-info edited by hand",
    },
    {
      path: `/apis/networking.k8s.io/v1/namespaces/${p}-silver/networkpolicies/allow-same-namespace`,
      body: { spec: { podSelector: { matchLabels: { app: "tampered" } } } },
      what: "silver allow-same-namespace edited by hand",
    },
  ];
}

/** Kinds the scenario writes: what the convergence check watches for changes. */
export const SCENARIO_RESOURCES = [
  "/api/v1/configmaps",
  "/api/v1/secrets",
  "/api/v1/services",
  "/api/v1/limitranges",
  "/apis/rbac.authorization.k8s.io/v1/roles",
  "/apis/rbac.authorization.k8s.io/v1/rolebindings",
  "/apis/networking.k8s.io/v1/networkpolicies",
  "/apis/rbac.authorization.k8s.io/v1/clusterroles",
];

// ---------------------------------------------------------------------------------------------------------------
// The scale scenario

const SCALE_KINDS: ((i: number, p: string) => Obj)[] = [
  (i) => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: `s${i}-config` }, data: { ns: "${PROJECT_NAME}" } }),
  (i) => ({
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: `s${i}-secret` },
    type: "Opaque",
    stringData: { user: "${PROJECT_NAME}", password: "x" },
  }),
  (i) => ({
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "Role",
    metadata: { name: `s${i}-role` },
    rules: [{ apiGroups: [""], resources: ["configmaps"], verbs: ["get", "list"] }],
  }),
  (i) => ({
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "RoleBinding",
    metadata: { name: `s${i}-binding` },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: `s${i - 1}-role` },
    subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "Group", name: "${PROJECT_NAME}-members" }],
  }),
  (i) => ({
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    metadata: { name: `s${i}-netpol` },
    spec: { podSelector: {}, ingress: [{ from: [{ podSelector: {} }] }] },
  }),
  (i) => ({ apiVersion: "v1", kind: "ServiceAccount", metadata: { name: `s${i}-sa` } }),
  (i) => ({
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: `s${i}-svc` },
    spec: { clusterIP: "None", selector: { app: "x" }, ports: [{ name: "http", port: 80, protocol: "TCP" }] },
  }),
  (i) => ({
    apiVersion: "v1",
    kind: "LimitRange",
    metadata: { name: `s${i}-limits` },
    spec: { limits: [{ type: "Container", default: { cpu: "500m", memory: "256Mi" } }] },
  }),
  (i) => ({
    apiVersion: "v1",
    kind: "ResourceQuota",
    metadata: { name: `s${i}-quota` },
    spec: { hard: { pods: "50", "requests.cpu": "10" } },
  }),
];

export const SCALE_RESOURCES = [
  "/api/v1/configmaps",
  "/api/v1/secrets",
  "/apis/rbac.authorization.k8s.io/v1/roles",
  "/apis/rbac.authorization.k8s.io/v1/rolebindings",
  "/apis/networking.k8s.io/v1/networkpolicies",
  "/api/v1/serviceaccounts",
  "/api/v1/services",
  "/api/v1/limitranges",
  "/api/v1/resourcequotas",
];

export const ITEMS_PER_SCALE_CONFIG = 4;

/** `items` items in SyncConfigs of 4, cycling through 9 kinds, all selecting the run's scale namespaces. */
export function scaleSyncConfigs(p: string, items: number): Obj[] {
  const all = Array.from({ length: items }, (_, i) => {
    const item = SCALE_KINDS[i % SCALE_KINDS.length](i, p);
    const md = item.metadata as Obj;
    md.labels = { [SCALE_LABEL]: p };
    return item;
  });
  const configs: Obj[] = [];
  for (let c = 0; c * ITEMS_PER_SCALE_CONFIG < items; c++) {
    configs.push({
      apiVersion: "sync.appuio.ch/v1alpha1",
      kind: "SyncConfig",
      metadata: { name: `scale-${c}`, namespace: `${p}-cfg` },
      spec: {
        namespaceSelector: { labelSelector: { matchLabels: { [RUN_LABEL]: p } } },
        syncItems: all.slice(c * ITEMS_PER_SCALE_CONFIG, (c + 1) * ITEMS_PER_SCALE_CONFIG),
        deleteItems: [{ apiVersion: "v1", kind: "ConfigMap", name: `retired-${c}` }],
      },
    });
  }
  return configs;
}

// ---------------------------------------------------------------------------------------------------------------
// Normalisation and diff

export interface MarkerTally {
  /** Objects in target namespaces (the config namespace excluded). */
  objects: number;
  label: number;
  owner: number;
  hash: number;
  createdBy: number;
  ownerValues: Record<string, number>;
}

export const emptyTally = (): MarkerTally => ({
  objects: 0,
  label: 0,
  owner: 0,
  hash: 0,
  createdBy: 0,
  ownerValues: {},
});

const TIMESTAMP_KEYS = new Set(["lastTransitionTime", "lastUpdateTime", "lastHeartbeatTime", "lastProbeTime"]);

/** Replaces every occurrence of the prefix in strings and keys. */
export function mapPrefix<T>(value: T, prefix: string): T {
  return JSON.parse(JSON.stringify(value).replaceAll(prefix, PREFIX_TOKEN)) as T;
}

function walk(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(walk);
  if (!v || typeof v !== "object") return v;
  const out: Obj = {};
  for (const [k, x] of Object.entries(v as Obj)) {
    if (TIMESTAMP_KEYS.has(k)) continue;
    if (k === "conditions" && Array.isArray(x) && x.every((c) => c && typeof (c as Obj).type === "string")) {
      // Keyed by type, so that a missing condition is one difference, not a shift of every later index.
      out[k] = Object.fromEntries((x as Obj[]).map((c) => [c.type as string, walk(c)]));
      continue;
    }
    out[k] = walk(x);
  }
  return out;
}

const IP = /^[0-9a-f.:]+$/i;

/**
 * An object as compared: server-set identity and bookkeeping dropped (uid, resourceVersion, creationTimestamp,
 * managedFields, generation, condition timestamps), espejo (Deno)'s markers (the label, the owner, desired-hash and
 * created-by annotations; docs/reference.md lists them) dropped and tallied, Secret data decoded (base64 of a
 * templated value would differ by the prefix), allocated cluster IPs masked, prefix mapped.
 */
export function normalizeObject(raw: Obj, prefix: string, tally: MarkerTally | undefined): Obj {
  const o = structuredClone(raw);
  const md = (o.metadata ?? {}) as Obj;
  for (const k of ["uid", "resourceVersion", "creationTimestamp", "managedFields", "generation", "selfLink"]) {
    delete md[k];
  }
  if (md.deletionTimestamp) md.deletionTimestamp = "<set>";
  if (Array.isArray(md.ownerReferences)) { for (const r of md.ownerReferences as Obj[]) delete r.uid; }
  const labels = md.labels as Record<string, string> | undefined;
  const annotations = md.annotations as Record<string, string> | undefined;
  if (tally) {
    tally.objects++;
    if (labels?.[MARKER_LABEL] !== undefined) tally.label++;
    if (annotations?.[HASH_ANNOTATION] !== undefined) tally.hash++;
    if (annotations?.[CREATED_BY_ANNOTATION] !== undefined) tally.createdBy++;
    const owner = annotations?.[OWNER_ANNOTATION];
    if (owner !== undefined) {
      tally.owner++;
      const key = owner.replaceAll(prefix, PREFIX_TOKEN);
      tally.ownerValues[key] = (tally.ownerValues[key] ?? 0) + 1;
    }
  }
  if (labels) {
    delete labels[MARKER_LABEL];
    if (Object.keys(labels).length === 0) delete md.labels;
  }
  if (annotations) {
    delete annotations[OWNER_ANNOTATION];
    delete annotations[HASH_ANNOTATION];
    delete annotations[CREATED_BY_ANNOTATION];
    if (Object.keys(annotations).length === 0) delete md.annotations;
  }
  if (o.kind === "Secret" && o.data && typeof o.data === "object") {
    const decoded: Obj = {};
    for (const [k, v] of Object.entries(o.data as Record<string, string>)) {
      try {
        decoded[k] = `(decoded) ${new TextDecoder().decode(Uint8Array.from(atob(v), (c) => c.charCodeAt(0)))}`;
      } catch {
        decoded[k] = v;
      }
    }
    o.data = decoded;
  }
  if (o.kind === "Service" && o.spec && typeof o.spec === "object") {
    const spec = o.spec as Obj;
    if (typeof spec.clusterIP === "string" && IP.test(spec.clusterIP)) spec.clusterIP = "<allocated>";
    if (Array.isArray(spec.clusterIPs)) {
      spec.clusterIPs = (spec.clusterIPs as string[]).map((ip) => IP.test(ip) ? "<allocated>" : ip);
    }
  }
  return mapPrefix(walk(o) as Obj, prefix);
}

/** Leaf paths of a JSON value: `metadata.labels["a/b"]`, `spec.ports[0].port`; empty containers are leaves. */
export function flatten(v: unknown, path = "", out = new Map<string, string>()): Map<string, string> {
  if (Array.isArray(v)) {
    if (v.length === 0) out.set(path, "[]");
    v.forEach((x, i) => flatten(x, `${path}[${i}]`, out));
  } else if (v && typeof v === "object") {
    const keys = Object.keys(v as Obj).sort();
    if (keys.length === 0) out.set(path, "{}");
    for (const k of keys) {
      const seg = /^[A-Za-z_][A-Za-z0-9_]*$/.test(k) ? (path ? `.${k}` : k) : `[${JSON.stringify(k)}]`;
      flatten((v as Obj)[k], path + seg, out);
    }
  } else {
    out.set(path, JSON.stringify(v));
  }
  return out;
}

export interface DiffRow {
  type: "object" | "field" | "status";
  object: string;
  field: string;
  a: string;
  b: string;
}

const ABSENT = "(absent)";

/** Differences between two normalised snapshots (keyed by object), `a` the Go espejo's, `b` espejo (Deno)'s. */
export function diffSnapshots(a: Map<string, Obj>, b: Map<string, Obj>): DiffRow[] {
  const rows: DiffRow[] = [];
  const keys = [...new Set([...a.keys(), ...b.keys()])].sort();
  for (const key of keys) {
    const x = a.get(key);
    const y = b.get(key);
    if (!x || !y) {
      rows.push({
        type: "object",
        object: key,
        field: "(object)",
        a: x ? "present" : ABSENT,
        b: y ? "present" : ABSENT,
      });
      continue;
    }
    const fx = flatten(x);
    const fy = flatten(y);
    for (const path of [...new Set([...fx.keys(), ...fy.keys()])].sort()) {
      const vx = fx.get(path) ?? ABSENT;
      const vy = fy.get(path) ?? ABSENT;
      if (vx === vy) continue;
      const isStatus = key.includes("/SyncConfig.") && path.startsWith("status");
      rows.push({ type: isStatus ? "status" : "field", object: key, field: path, a: vx, b: vy });
    }
  }
  return rows;
}

/**
 * The bullets of the "Different, on purpose" list of docs/migration.md, each as one line with its whitespace
 * collapsed; empty if the list is not found.
 */
export function onPurposeBullets(markdown: string): string[] {
  const lines = markdown.split("\n");
  const start = lines.findIndex((l) => l.trim() === "Different, on purpose:");
  if (start < 0) return [];
  const bullets: string[] = [];
  for (const line of lines.slice(start + 1)) {
    if (line.startsWith("#")) break;
    if (line.startsWith("- ")) bullets.push(line.slice(2).trim());
    else if (/^\s+\S/.test(line) && bullets.length) bullets[bullets.length - 1] += ` ${line.trim()}`;
    else if (line.trim() && bullets.length) break; // the first paragraph after the list
  }
  return bullets.map((b) => b.replace(/\s+/g, " "));
}

const num = (v: string) => Number(v);
const str = (v: string) => v.startsWith('"') ? JSON.parse(v) as string : v;
const statusOf = (row: DiffRow, cfg: string) =>
  row.type === "status" && row.object.endsWith(`/SyncConfig.sync.appuio.ch/${cfg}`);

/**
 * How a difference is recognised as one of docs/migration.md's "Different, on purpose" bullets: the bullet is found by a phrase
 * it contains (so a bullet that is removed or reworded shows as NOT LISTED here), the difference by what the
 * scenario's SyncConfig is there to show and the values each controller has.
 */
const LISTED: { phrase: string; matches: (row: DiffRow) => boolean }[] = [
  {
    phrase: "Patterns are anchored as a whole",
    matches: (r) =>
      (r.type === "object" && /^<P>-(alphabet|omega)\/ConfigMap\/alternation-marker$/.test(r.object)) ||
      (statusOf(r, "alternation") && r.field === "status.synchronizedItemCount" && num(r.a) > num(r.b)),
  },
  {
    phrase: "deleteItems names are templated",
    matches: (r) =>
      r.type === "object" && /^<P>-[a-z-]+\/Secret\/retired-<P>-[a-z-]+$/.test(r.object) && r.b === "(absent)",
  },
  {
    phrase: "A cluster-scoped item",
    matches: (r) =>
      (r.type === "object" && r.object.startsWith("(cluster)/ClusterRole.") && r.b === "(absent)") ||
      (statusOf(r, "cluster-scoped") &&
        /^status\.(conditions\.(Ready|Errored)\.|synchronizedItemCount$|failedItemCount$)/.test(r.field)),
  },
  {
    phrase: "is set back to `False`",
    matches: (r) =>
      (/^status\.conditions\.(Errored|Invalid)\.status$/.test(r.field) && r.a === '"True"' && r.b === '"False"') ||
      (r.field === "status.conditions.Errored.reason" && r.b === '"SynchronizationSucceeded"') ||
      (r.field === "status.conditions.Errored.message" && r.b === '""') ||
      (r.field === "status.conditions.Invalid.reason" && r.b === '"ValidSyncConfigSpec"') ||
      (r.field === "status.conditions.Invalid.message" && r.b === '"The spec is valid"'),
  },
  {
    phrase: "Messages are specific",
    matches: (r) =>
      r.type === "status" && r.a !== "(absent)" && (
        (r.field === "status.conditions.Ready.message" && str(r.b).startsWith("Synchronization completed with ")) ||
        (r.field === "status.conditions.Errored.message" &&
          str(r.b).startsWith("Could not sync or delete any items: ")) ||
        (r.field === "status.conditions.Invalid.message" && str(r.b).startsWith("SyncConfig "))
      ),
  },
  {
    // partial-failure's deleteItem names a kind the API server does not serve
    phrase: "A deleteItem that fails",
    matches: (r) =>
      statusOf(r, "partial-failure") &&
      ((r.field === "status.deletedItemCount" && num(r.a) > num(r.b)) ||
        (r.field === "status.failedItemCount" && num(r.b) > num(r.a))),
  },
  {
    phrase: "`deletedItemCount` adds up",
    matches: (r) => statusOf(r, "tenant-defaults") && r.field === "status.deletedItemCount",
  },
];

/**
 * Whether a difference is one of docs/migration.md's "Different, on purpose" bullets (`bullets`, see {@link onPurposeBullets}):
 * "listed: <the phrase of its bullet>", or NOT LISTED. Only a hint: the report's reader judges.
 */
export function listedHint(row: DiffRow, bullets: string[]): string {
  const rule = LISTED.find((l) => l.matches(row));
  if (!rule) return "**NOT LISTED**";
  const phrase = rule.phrase.toLowerCase();
  if (!bullets.some((b) => b.toLowerCase().includes(phrase))) {
    return `**NOT LISTED** (docs/migration.md has no bullet with "${rule.phrase}")`;
  }
  return `listed: "${rule.phrase}"`;
}

export const isListed = (hint: string) => hint.startsWith("listed");

// ---------------------------------------------------------------------------------------------------------------
// Requests

/** One request per audit event: watches when they start, everything else when the reply is complete. */
export function requestsOf(events: AuditEvent[], username: string): AuditEvent[] {
  return events.filter((e) =>
    e.user.username === username &&
    (e.verb === "watch" ? e.stage === "ResponseStarted" : e.stage === "ResponseComplete" || e.stage === "Panic")
  );
}

export const resourceOf = (e: AuditEvent) => {
  const r = e.objectRef;
  if (!r?.resource) return e.requestURI.split("?")[0];
  return `${r.resource}${r.subresource ? `/${r.subresource}` : ""}`;
};

export function formatCounts(c: Record<string, number>): string {
  const entries = Object.entries(c).sort((x, y) => y[1] - x[1] || x[0].localeCompare(y[0]));
  return entries.length ? entries.map(([k, v]) => `${v} ${k}`).join(", ") : "none";
}

// ---------------------------------------------------------------------------------------------------------------
// Tables

const cell = (v: unknown, max = 240) => {
  let s = String(v ?? "").replaceAll("|", "\\|").replaceAll("\n", " ");
  if (s.length > max) s = `${s.slice(0, max - 1)}…`;
  return s;
};

export function mdTable(headers: string[], rows: unknown[][], max = 240): string {
  const lines = [`| ${headers.join(" | ")} |`, `| ${headers.map(() => "---").join(" | ")} |`];
  for (const r of rows) lines.push(`| ${r.map((v) => cell(v, max)).join(" | ")} |`);
  return lines.join("\n");
}

export const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
