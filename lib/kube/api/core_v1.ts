// placeholder until generated
export interface Namespace {
  apiVersion?: string;
  kind?: string;
  metadata?: Record<string, unknown>;
  spec?: { finalizers?: string[] };
  status?: { phase?: string };
}
