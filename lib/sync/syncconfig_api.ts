/** Where SyncConfigs live in the API, and how one read from it is checked before the controller sees it. */
import { decodeObjectMeta } from "../kube/api/decode.ts";
import { isObject } from "../kube/objects.ts";
import type { SyncConfig } from "../model/syncconfig.ts";
import { listAllSyncConfigsPath, listSyncConfigsPath } from "./syncconfig_client.ts";

/** The SyncConfigs of `namespace`, or of every namespace when it is empty (WATCH_NAMESPACE unset). */
export function syncConfigsPath(namespace: string): string {
  return namespace ? listSyncConfigsPath({ namespace }) : listAllSyncConfigsPath();
}

/** One SyncConfig, by its key `namespace/name` (what the generated client has no read for: a GET after a conflict). */
export function syncConfigPath(key: string): string {
  const [namespace, name] = key.split("/");
  return `${listSyncConfigsPath({ namespace })}/${encodeURIComponent(name)}`;
}

/** Metadata checked, managedFields dropped; the spec is checked by compileSyncConfig, which reports what is wrong. */
export function decodeSyncConfig(raw: unknown): SyncConfig | undefined {
  if (!isObject(raw)) return undefined;
  const metadata = decodeObjectMeta(raw.metadata);
  if (!metadata?.name) return undefined;
  return { ...raw, metadata };
}
