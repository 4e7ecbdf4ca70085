/**
 * The README and docs/ link to each other by relative paths and `#anchors`; a page that moves or a heading that is
 * reworded breaks them silently on GitHub. Every relative link of README.md, ARCHITECTURE.md and docs/*.md must name a
 * file that exists, and its anchor a heading of that file, spelled as GitHub spells heading anchors.
 */
import assert from "node:assert/strict";
import { dirname, join, relative, resolve } from "node:path";
import { repoRoot } from "../../testenv/build.ts";

/**
 * GitHub's anchor of a heading (github-slugger): the rendered text in lower case, without punctuation other than `-`
 * and `_`, spaces turned into `-`. Markdown inside the heading counts by its text: a code span by its content, a link
 * by its text.
 */
export function githubSlug(heading: string): string {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/`/g, "")
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
    .replace(/ /g, "-");
}

/** Markdown outside fenced code blocks (links and headings there are text, not links). */
function prose(markdown: string): string[] {
  const out: string[] = [];
  let fenced = false;
  for (const line of markdown.split("\n")) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    else if (!fenced) out.push(line);
  }
  return out;
}

/** The anchors of a page's headings, repeated ones numbered as GitHub numbers them (`-1`, `-2`, ...). */
export function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const line of prose(markdown)) {
    const m = /^#{1,6}\s+(.+?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const slug = githubSlug(m[1]);
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    anchors.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return anchors;
}

/** The targets of inline links and images, without external ones (a scheme or `//`). Code spans are not links. */
export function relativeLinks(markdown: string): string[] {
  const targets: string[] = [];
  for (const line of prose(markdown)) {
    const text = line.replace(/`[^`]*`/g, "code");
    for (const m of text.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      if (!/^([a-z][a-z0-9+.-]*:|\/\/)/i.test(m[1])) targets.push(m[1]);
    }
  }
  return targets;
}

const pages = [
  "README.md",
  "ARCHITECTURE.md",
  ...[...Deno.readDirSync(join(repoRoot, "docs"))].filter((e) => e.isFile && e.name.endsWith(".md")).map((e) =>
    join("docs", e.name)
  ),
].sort();

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

Deno.test("githubSlug spells anchors as GitHub does", () => {
  for (
    const [heading, slug] of [
      ["Flags and environment", "flags-and-environment"],
      ["Inside the Go espejo's limits", "inside-the-go-espejos-limits"],
      ["`espejo plan`: see what would change before it changes", "espejo-plan-see-what-would-change-before-it-changes"],
      [
        "Why `WATCH_NAMESPACE` is set to the controller's namespace",
        "why-watch_namespace-is-set-to-the-controllers-namespace",
      ],
      ["Roles and RoleBindings: no `escalate`, no `bind`", "roles-and-rolebindings-no-escalate-no-bind"],
      ["One decision, three uses", "one-decision-three-uses"],
      ["EspejoNoLeader", "espejonoleader"],
      ["A [linked](x.md) heading", "a-linked-heading"],
    ]
  ) assert.equal(githubSlug(heading), slug, heading);
});

Deno.test("anchorsOf numbers repeated headings and ignores code blocks; relativeLinks skips URLs and code", () => {
  const page = "# A\n\n## B\n\n## B\n\n```sh\n# not a heading [x](gone.md)\n```\n\n" +
    "[a](#b-1) ![c](../c.svg) [d](https://example.com/x) `[e](f.md)` [g](<h.md>)\n";
  assert.deepEqual([...anchorsOf(page)], ["a", "b", "b-1"]);
  assert.deepEqual(relativeLinks(page), ["#b-1", "../c.svg", "h.md"]);
});

Deno.test("every relative link of README.md and docs/ names a file that exists, and its anchor a heading there", () => {
  const broken: string[] = [];
  let checked = 0;
  for (const page of pages) {
    const from = join(repoRoot, page);
    for (const link of relativeLinks(Deno.readTextFileSync(from))) {
      const [path, anchor] = link.split("#", 2);
      const target = path ? resolve(dirname(from), decodeURIComponent(path)) : from;
      checked++;
      if (!exists(target)) {
        broken.push(`${page}: ${link}: no file ${relative(repoRoot, target)}`);
        continue;
      }
      if (anchor === undefined) continue;
      if (!target.endsWith(".md")) {
        broken.push(`${page}: ${link}: an anchor into a file that is not Markdown`);
      } else if (!anchorsOf(Deno.readTextFileSync(target)).has(anchor)) {
        broken.push(`${page}: ${link}: ${relative(repoRoot, target)} has no heading with the anchor #${anchor}`);
      }
    }
  }
  assert.deepEqual(broken, []);
  assert.ok(checked >= 40, `links were found and checked (${checked})`);
});

Deno.test("every docs/<page>.md#<anchor> that lib/ and deploy/ name to users is a heading of that page", () => {
  const broken: string[] = [];
  let checked = 0;
  const walk = function* (dir: string): Generator<string> {
    for (const e of Deno.readDirSync(dir)) {
      const p = join(dir, e.name);
      if (e.isDirectory) yield* walk(p);
      else if (/\.(ts|ya?ml)$/.test(e.name)) yield p;
    }
  };
  for (const file of [...walk(join(repoRoot, "lib")), ...walk(join(repoRoot, "deploy"))]) {
    for (const [ref, page, anchor] of Deno.readTextFileSync(file).matchAll(/docs\/([\w-]+\.md)#([\w-]+)/g)) {
      checked++;
      const target = join(repoRoot, "docs", page);
      if (!exists(target) || !anchorsOf(Deno.readTextFileSync(target)).has(anchor)) {
        broken.push(`${relative(repoRoot, file)}: ${ref}`);
      }
    }
  }
  assert.deepEqual(broken, []);
  assert.ok(checked >= 4, `references were found and checked (${checked})`);
});

Deno.test("the README is the front door: at most 200 lines, linking every page of docs/", () => {
  const readme = Deno.readTextFileSync(join(repoRoot, "README.md"));
  assert.ok(readme.split("\n").length <= 201, `README.md has ${readme.split("\n").length - 1} lines`);
  const linked = new Set(relativeLinks(readme).map((l) => l.split("#")[0]));
  for (const page of pages.filter((p) => p.startsWith("docs/"))) {
    assert.ok(linked.has(page), `README links ${page}`);
  }
});
