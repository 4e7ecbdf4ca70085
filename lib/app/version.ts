/**
 * The release version: `espejo --version`, the User-Agent, the image tag that deploy/kustomization.yaml pins
 * (`v` + this), the README's install line and the release workflow's tag check all read this one string
 * (tests/unit/version_test.ts holds them together). A release is tagged `v<VERSION>` after this line changed.
 */
export const VERSION = "0.1.0";
