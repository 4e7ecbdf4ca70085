/**
 * Typed errors for Kubernetes API replies. A `v1.Status` body becomes an {@link ApiError} carrying the HTTP code and
 * the Status `reason`, so callers classify failures by code, never by parsing messages.
 */

/** A non-2xx reply from the API server. */
export class ApiError extends Error {
  constructor(
    /** HTTP status code (404, 409, 422, ...). */
    readonly code: number,
    /** `v1.Status` reason (`NotFound`, `AlreadyExists`, `Conflict`, `Invalid`, `Forbidden`, ...) or `Unknown`. */
    readonly reason: string,
    message: string,
    /** Seconds from a `Retry-After` header or `details.retryAfterSeconds`, when the server sent one. */
    readonly retryAfterSeconds?: number,
    /** `details.causes` of a 422: which fields the server refused, and why (at most {@link MAX_CAUSES}). */
    readonly causes: readonly StatusCause[] = [],
  ) {
    super(message);
    this.name = "ApiError";
  }
}

/** One entry of a `v1.Status`'s `details.causes`. */
export interface StatusCause {
  reason?: string;
  message?: string;
  field?: string;
}

const MAX_CAUSES = 20;

export const isNotFound = (e: unknown): boolean => e instanceof ApiError && e.code === 404;
export const isAlreadyExists = (e: unknown): boolean =>
  e instanceof ApiError && e.code === 409 && e.reason === "AlreadyExists";
export const isConflict = (e: unknown): boolean => e instanceof ApiError && e.code === 409 && e.reason === "Conflict";
export const isInvalid = (e: unknown): boolean => e instanceof ApiError && e.code === 422;
export const isGone = (e: unknown): boolean => e instanceof ApiError && e.code === 410;
export const isForbidden = (e: unknown): boolean => e instanceof ApiError && e.code === 403;

/**
 * Whether a 422 refused a change of a field that cannot change once set: the API server's wording for immutable
 * fields ("field is immutable", also ConfigMap and Secret `immutable: true`) and for a binding's roleRef ("cannot
 * change roleRef"). Only an object created anew can have the other value: a replace, not a retry.
 */
export function isImmutableField(e: unknown): boolean {
  if (!(e instanceof ApiError) || e.code !== 422) return false;
  const says = (text: string | undefined) => !!text && /field is immutable|cannot change roleRef/.test(text);
  return e.causes.length ? e.causes.some((c) => says(c.message)) : says(e.message);
}

/**
 * Whether retrying the same request later can succeed: throttling, server errors, conflicts and network
 * failures are transient; validation, permission and not-found errors need a change first.
 */
export function isRetriable(e: unknown): boolean {
  if (e instanceof ApiError) return e.code === 409 || e.code === 429 || e.code >= 500;
  return !(e instanceof DOMException && e.name === "AbortError");
}

/** Decodes a failed reply (usually a `v1.Status`) into an {@link ApiError}. */
export function apiErrorFrom(code: number, bodyText: string, retryAfterHeader: string | null): ApiError {
  let reason = "Unknown";
  let message = bodyText.trim().slice(0, 500) || `HTTP ${code}`;
  let retryAfter = parseRetryAfter(retryAfterHeader);
  const causes: StatusCause[] = [];
  try {
    const status = JSON.parse(bodyText);
    if (status && typeof status === "object" && status.kind === "Status") {
      if (typeof status.reason === "string" && status.reason) reason = status.reason;
      if (typeof status.message === "string" && status.message) message = status.message;
      const seconds = status.details?.retryAfterSeconds;
      if (typeof seconds === "number" && retryAfter === undefined) retryAfter = seconds;
      const listed = status.details?.causes;
      for (const c of Array.isArray(listed) ? listed.slice(0, MAX_CAUSES) : []) {
        if (!c || typeof c !== "object") continue;
        const text = (v: unknown) => typeof v === "string" ? v.slice(0, 500) : undefined;
        causes.push({ reason: text(c.reason), message: text(c.message), field: text(c.field) });
      }
    }
  } catch {
    // Not JSON: keep the raw text as the message.
  }
  return new ApiError(code, reason, message, Number.isFinite(retryAfter) ? retryAfter : undefined, causes);
}

/** `Retry-After` is either delay-seconds or an HTTP date (RFC 9110); anything else is ignored. */
export function parseRetryAfter(header: string | null, now = Date.now()): number | undefined {
  if (!header) return undefined;
  const trimmed = header.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  const at = Date.parse(trimmed);
  // A date already past says nothing useful; let details.retryAfterSeconds or the backoff decide.
  return Number.isNaN(at) || at <= now ? undefined : Math.ceil((at - now) / 1000);
}
