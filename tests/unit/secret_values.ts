/**
 * A Secret's values for the property tests that a plan never shows one (plan_render_test, plan_secret_test): the
 * generated values, the pieces of them that must not be shown, and stand-ins that are no value.
 */
import fc from "fast-check";
import { encodeBase64 } from "../../lib/kube/objects.ts";

const secretValue = fc.oneof(
  fc.string({ minLength: 8, maxLength: 40 }),
  fc.string({ unit: "binary", minLength: 8, maxLength: 40 }),
  fc.base64String({ minLength: 8, maxLength: 40 }),
);

/** Two values for each of `keys`, all different: the first `keys.length` for one side, the rest for the other. */
export const secretValues = (keys: readonly string[]) =>
  fc.array(secretValue, { minLength: 2 * keys.length, maxLength: 2 * keys.length })
    .filter((vs) => new Set(vs).size === vs.length);

/** Eight-character pieces of the values and of their base64: none of them may be shown. */
export const pieces = (vs: string[]) =>
  vs.flatMap((v) => [v, encodeBase64(v)]).flatMap((s) =>
    Array.from({ length: s.length - 7 }, (_, i) => s.slice(i, i + 8))
  );

/** A stand-in for the value of each of `keys`, named by `prefix`. */
export const placeholders = (keys: readonly string[], prefix: string) =>
  keys.map((_, i) => `${prefix}-placeholder-${i}`);
