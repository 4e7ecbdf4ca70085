/**
 * What `espejo plan` reads of the cluster, with lists only (no watch is left running, nothing is written): the
 * namespaces, the SyncConfigs (those of the files given replacing the ones with the same namespace/name, as an
 * edit would), and every object of each kind their items name, in full. Kinds named by the cluster's version of an
 * edited SyncConfig are listed too, so that what an edit stops syncing shows up as a prune.
 */
import type { KubeClient } from "../kube/client.ts";
import { decodeNamespace } from "../kube/api/decode.ts";
import { listNamespacesPath } from "../kube/api/core_v1_client.ts";
import { collectionPath, Discovery, type ResourceInfo, resourceKey } from "../kube/discovery.ts";
import { listAll } from "../kube/list.ts";
import type { KubeObject } from "../kube/objects.ts";
import { canonicalApiVersion, keyOf, type SyncConfig } from "../model/syncconfig.ts";
import { decodeSyncConfig, syncConfigsPath } from "../sync/syncconfig_api.ts";
import type { NamespaceInfo } from "../model/namespace_info.ts";

export interface SnapshotOptions {
  /** WATCH_NAMESPACE: where SyncConfigs are read from (empty: everywhere). */
  watchNamespace: string;
  /** SyncConfigs from files, each with its source for the report. */
  files: { syncConfig: SyncConfig; source: string }[];
  /** Only these namespaces are planned (empty: all). */
  namespaces: string[];
  progress: (line: string) => void;
}

/** A SyncConfig read, and where from: the cluster, or a file of `-f` (replacing the cluster's of its key). */
export interface SnapshotConfig {
  syncConfig: SyncConfig;
  /** `cluster`, or the file's name with `(new)` or `(edit of generation N)`. */
  source: string;
  fromFile: boolean;
}

export interface Snapshot {
  namespaces: NamespaceInfo[];
  /** Every SyncConfig read, by key; which of them are planned is ./selection.ts's decision. */
  syncConfigs: SnapshotConfig[];
  /** By `apiVersion|kind`: the resource, or why it cannot be synced. */
  resources: Map<string, ResourceInfo | Error>;
  /** By resource key (`group/version/resource`), then `namespace/name`. */
  objects: Map<string, Map<string, KubeObject>>;
}

/** One key for one resource however the item spells its apiVersion (`/v1` is `v1`: canonicalApiVersion). */
export const kindKey = (apiVersion: string, kind: string) => `${canonicalApiVersion(apiVersion)}|${kind}`;

/** The apiVersion/kind pairs a SyncConfig's items name, read leniently (the compiler reports what is wrong). */
function kindsOf(sc: SyncConfig): [string, string][] {
  const items = [...(sc.spec?.syncItems ?? []), ...(sc.spec?.deleteItems ?? [])] as {
    apiVersion?: unknown;
    kind?: unknown;
  }[];
  return items.flatMap((i) =>
    typeof i?.apiVersion === "string" && typeof i.kind === "string"
      ? [[canonicalApiVersion(i.apiVersion), i.kind] as [string, string]]
      : []
  );
}

export async function takeSnapshot(client: KubeClient, o: SnapshotOptions): Promise<Snapshot> {
  o.progress("espejo plan: listing namespaces and SyncConfigs");
  const wanted = new Set(o.namespaces);
  const namespaces = (await listAll(client, listNamespacesPath())).flatMap((raw) => {
    const ns = decodeNamespace(raw);
    if (!ns || (wanted.size && !wanted.has(ns.metadata.name))) return [];
    return [{ name: ns.metadata.name, labels: ns.metadata.labels, phase: ns.status.phase }];
  });
  const inCluster = (await listAll(client, syncConfigsPath(o.watchNamespace))).flatMap((raw): SnapshotConfig[] => {
    const sc = decodeSyncConfig(raw);
    return sc ? [{ syncConfig: sc, source: "cluster", fromFile: false }] : [];
  });
  const byKey = new Map(inCluster.map((e) => [keyOf(e.syncConfig), e]));
  const kinds = new Map<string, [string, string]>();
  for (const { syncConfig } of inCluster) {
    for (const [v, k] of kindsOf(syncConfig)) kinds.set(kindKey(v, k), [v, k]);
  }
  for (const file of o.files) {
    const replaced = byKey.get(keyOf(file.syncConfig))?.syncConfig.metadata?.generation;
    byKey.set(keyOf(file.syncConfig), {
      syncConfig: file.syncConfig,
      fromFile: true,
      source: replaced === undefined ? `${file.source} (new)` : `${file.source} (edit of generation ${replaced})`,
    });
    for (const [v, k] of kindsOf(file.syncConfig)) kinds.set(kindKey(v, k), [v, k]);
  }
  const discovery = new Discovery(client);
  const resources = new Map<string, ResourceInfo | Error>();
  const objects = new Map<string, Map<string, KubeObject>>();
  let n = 0;
  for (const [key, [apiVersion, kind]] of kinds) {
    let r: ResourceInfo;
    try {
      r = await discovery.resolve(apiVersion, kind);
      resources.set(key, r);
    } catch (e) {
      resources.set(key, e instanceof Error ? e : new Error(String(e)));
      continue;
    }
    if (!r.namespaced || objects.has(resourceKey(r))) continue;
    o.progress(`espejo plan: listing ${r.resource} (${++n} of ${kinds.size} kinds)`);
    const found = new Map<string, KubeObject>();
    // Listed objects carry no apiVersion or kind: they are what was listed, as the resolver names it (not as the
    // item that first named the resource spelled it); what the server did send stands.
    const listed = { apiVersion: r.group ? `${r.group}/${r.version}` : r.version, kind: r.kind };
    const paths = wanted.size ? [...wanted].map((ns) => collectionPath(r, ns)) : [collectionPath(r)];
    for (const path of paths) {
      for (const obj of await listAll(client, path)) {
        found.set(`${obj.metadata?.namespace}/${obj.metadata?.name}`, { ...listed, ...obj });
      }
    }
    objects.set(resourceKey(r), found);
  }
  const syncConfigs = [...byKey.values()].sort((a, b) => keyOf(a.syncConfig).localeCompare(keyOf(b.syncConfig)));
  return { namespaces, syncConfigs, resources, objects };
}
