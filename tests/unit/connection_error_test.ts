import assert from "node:assert/strict";
import { asConnectionError, ConnectionError } from "../../lib/kube/connection_error.ts";

const url = new URL("https://127.0.0.1:6443/api/v1/namespaces");
/** Deno's fetch: `TypeError: fetch failed` with the reason in `cause`, as it words them (seen on Deno 2.9). */
const fetchFailed = (cause: string) => new TypeError("fetch failed", { cause: new Error(cause) });
const sending = (what: string) => `error sending request for url (${url}): client error (Connect): ${what}`;
/** node:https (insecure-skip-tls-verify, tls-server-name): an Error with an OpenSSL or libuv code. */
const nodeError = (code: string, message: string) => Object.assign(new Error(message), { code });

const CASES: [name: string, error: unknown, failure: string, reason: string][] = [
  [
    "fetch, unknown CA",
    fetchFailed(sending("invalid peer certificate: UnknownIssuer")),
    "tls",
    "tls: failed to verify certificate: x509: certificate signed by unknown authority",
  ],
  [
    "fetch, host not in the certificate",
    fetchFailed(sending(
      'invalid peer certificate: certificate not valid for name "127.0.0.1"; certificate is only valid for ' +
        'DnsName("kube.example") or IpAddress(10.0.0.1)',
    )),
    "tls",
    "tls: failed to verify certificate: x509: certificate is valid for kube.example, 10.0.0.1, not 127.0.0.1",
  ],
  [
    "fetch, a CA of the issuer's name that did not sign it",
    fetchFailed(sending("invalid peer certificate: BadSignature")),
    "tls",
    "tls: failed to verify certificate: x509: certificate signed by unknown authority (the trusted CA of the " +
    "issuer's name did not sign it)",
  ],
  [
    "fetch, expired",
    fetchFailed(sending("invalid peer certificate: Expired")),
    "tls",
    "tls: failed to verify certificate: x509: certificate has expired or is not yet valid",
  ],
  [
    "fetch, refused",
    fetchFailed(sending("tcp connect error: Connection refused (os error 111)")),
    "refused",
    "dial tcp 127.0.0.1:6443: connect: connection refused",
  ],
  [
    "fetch, DNS",
    fetchFailed(sending("dns error: failed to lookup address information: Name or service not known")),
    "dns",
    "dial tcp: lookup 127.0.0.1: no such host",
  ],
  [
    "node, unknown CA",
    nodeError("UNABLE_TO_VERIFY_LEAF_SIGNATURE", "unable to verify the first certificate"),
    "tls",
    "tls: failed to verify certificate: x509: certificate signed by unknown authority",
  ],
  [
    "node, another name",
    nodeError(
      "ERR_TLS_CERT_ALTNAME_INVALID",
      "Hostname/IP does not match certificate's altnames: Host: other.example. is not in the cert's altnames: " +
        "DNS:kube.example, IP Address:10.0.0.1",
    ),
    "tls",
    "tls: failed to verify certificate: x509: certificate is valid for kube.example, 10.0.0.1, not other.example",
  ],
  [
    "node, refused",
    nodeError("ECONNREFUSED", "connect ECONNREFUSED 127.0.0.1:6443"),
    "refused",
    "dial tcp 127.0.0.1:6443: connect: connection refused",
  ],
  ["node, DNS", nodeError("ENOTFOUND", "getaddrinfo ENOTFOUND x"), "dns", "dial tcp: lookup 127.0.0.1: no such host"],
  [
    "our own timeout",
    new DOMException("no reply within 60000 ms", "TimeoutError"),
    "timeout",
    "no reply within 60000 ms (Client.Timeout exceeded while awaiting headers)",
  ],
  [
    "something unknown keeps its innermost words",
    fetchFailed(sending("something new")),
    "other",
    "something new",
  ],
];

for (const [name, error, failure, reason] of CASES) {
  Deno.test(`asConnectionError names the cause as client-go words it: ${name}`, () => {
    const e = asConnectionError(url, error);
    assert.ok(e instanceof ConnectionError, String(e));
    assert.equal(e.failure, failure);
    assert.equal(e.reason, reason);
    assert.equal(e.message, `cannot reach the API server at https://127.0.0.1:6443: ${reason}`);
    assert.doesNotMatch(e.message, /fetch failed/);
  });
}

Deno.test("asConnectionError leaves an abort as it is: shutting down is not a connection problem", () => {
  const abort = new DOMException("stopped", "AbortError");
  assert.equal(asConnectionError(url, abort), abort);
});
