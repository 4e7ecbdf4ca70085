/**
 * Why a request never reached the API server, in the words kubectl and client-go use. Deno's fetch reports every
 * such failure as `TypeError: fetch failed` with the reason in its `cause` (rustls and hyper wording), and
 * node:https (the transport for `insecure-skip-tls-verify` and `tls-server-name`) as an error with an OpenSSL or
 * libuv code. A person reading the log, `/readyz` or `espejo plan` needs the cause and the server, not "fetch
 * failed": {@link ConnectionError} carries both.
 */

/** What kind of failure it was, for anything that must tell them apart (metrics, retries). */
export type ConnectionFailure = "tls" | "refused" | "dns" | "timeout" | "reset" | "other";

/** A request that did not get a reply: its server, what kind of failure, and the cause in client-go's words. */
export class ConnectionError extends Error {
  constructor(
    /** Scheme, host and port of the API server. */
    readonly server: string,
    readonly failure: ConnectionFailure,
    /** The cause in client-go's words, e.g. `x509: certificate signed by unknown authority`. */
    readonly reason: string,
  ) {
    super(`cannot reach the API server at ${server}: ${reason}`);
    this.name = "ConnectionError";
  }
}

/**
 * The {@link ConnectionError} for a transport failure of a request to `url`. An abort (shutdown, or a caller's own
 * signal) is returned as it is: it is not a connection problem.
 */
export function asConnectionError(url: URL, e: unknown): unknown {
  if (e instanceof ConnectionError) return e;
  if (e instanceof DOMException && e.name === "AbortError") return e;
  const server = url.origin;
  if (e instanceof DOMException && e.name === "TimeoutError") {
    return new ConnectionError(server, "timeout", `${e.message} (Client.Timeout exceeded while awaiting headers)`);
  }
  const { failure, reason } = explain(url, e);
  return new ConnectionError(server, failure, reason);
}

/** The failure and its reason from a fetch cause's text or a Node error's code. */
export function explain(url: URL, e: unknown): { failure: ConnectionFailure; reason: string } {
  const code = (e as { code?: unknown })?.code;
  const text = messagesOf(e);
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const dial = `dial tcp ${url.host}`;
  const verify = "tls: failed to verify certificate: x509: ";
  if (
    /UnknownIssuer|UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT|UNABLE_TO_GET_ISSUER_CERT/.test(`${code} ${text}`)
  ) {
    return { failure: "tls", reason: `${verify}certificate signed by unknown authority` };
  }
  // A CA of the issuer's name whose key did not sign the certificate (another CA under the same name).
  if (/BadSignature|InvalidSignatureForPublicKey|CERT_SIGNATURE_FAILURE/.test(`${code} ${text}`)) {
    return {
      failure: "tls",
      reason: `${verify}certificate signed by unknown authority (the trusted CA of the issuer's name did not sign it)`,
    };
  }
  const names = validNames(text);
  if (names || code === "ERR_TLS_CERT_ALTNAME_INVALID" || /NotValidForName/.test(text)) {
    const forName = /not valid for name "([^"]+)"/.exec(text)?.[1] ?? /Host: ([^ ]+?)\.? is not/.exec(text)?.[1];
    return {
      failure: "tls",
      reason: `${verify}certificate is valid for ${names ?? "other names"}, not ${forName ?? host}`,
    };
  }
  if (/Expired|NotValidYet|CERT_HAS_EXPIRED|CERT_NOT_YET_VALID/.test(`${code} ${text}`)) {
    return { failure: "tls", reason: `${verify}certificate has expired or is not yet valid` };
  }
  if (code === "ECONNREFUSED" || /Connection refused/i.test(text)) {
    return { failure: "refused", reason: `${dial}: connect: connection refused` };
  }
  if (code === "ENOTFOUND" || code === "EAI_AGAIN" || /dns error|failed to lookup address/i.test(text)) {
    return { failure: "dns", reason: `dial tcp: lookup ${host}: no such host` };
  }
  if (code === "ETIMEDOUT" || /timed out/i.test(text)) return { failure: "timeout", reason: `${dial}: i/o timeout` };
  if (code === "ECONNRESET" || /connection reset|connection closed/i.test(text)) {
    return { failure: "reset", reason: `read tcp ${url.host}: connection reset by peer` };
  }
  if (/certificate|tls|handshake/i.test(text)) return { failure: "tls", reason: `tls: ${innermost(text)}` };
  return { failure: "other", reason: innermost(text) || "no reply (the connection failed)" };
}

/** The names a certificate holds, from rustls' `DnsName("a") or IpAddress(10.0.0.1)` or Node's altnames list. */
function validNames(text: string): string | undefined {
  const rustls = /certificate is only valid for (.+)$/m.exec(text)?.[1];
  if (rustls) {
    const names = [...rustls.matchAll(/(?:DnsName|IpAddress)\(\"?([^")]+)\"?\)/g)].map((m) => m[1]);
    if (names.length) return names.join(", ");
  }
  const node = /cert's altnames: (.+)$/m.exec(text)?.[1];
  if (node) return node.split(/,\s*/).map((n) => n.replace(/^(DNS|IP Address):/, "")).join(", ");
  return undefined;
}

/** Every message down the chain of causes, one per line (fetch keeps the useful one in `cause`). */
function messagesOf(e: unknown): string {
  const out: string[] = [];
  for (let c: unknown = e, depth = 0; c !== undefined && c !== null && depth < 5; depth++) {
    out.push(c instanceof Error ? c.message : String(c));
    c = c instanceof Error ? c.cause : undefined;
  }
  return out.join("\n");
}

/** The most specific part of a cause: hyper's `error sending request for url (...): client error (Connect): X` is X. */
function innermost(text: string): string {
  const last = text.split("\n").filter((l) => l && l !== "fetch failed").pop() ?? "";
  return last.replace(/^error sending request for url \([^)]*\):\s*/, "").replace(/^client error \(\w+\):\s*/, "");
}
