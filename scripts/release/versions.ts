// Every place outside package.json that names drainguard's version, so that
// one command sets them all (scripts/set-version.ts) and one test
// (test/tooling/release/versions.unit.test.ts) fails when one disagrees: the image tag in
// the manifests and the docs, the chart's version, appVersion and image tag,
// the charts that depend on it, the kustomize ?ref=, the Go modules' tags and
// the ctrl module's requirement, package-lock's copy of the version.

import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const V = String.raw`(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?)`;

interface Rule {
  /** Which files (relative, slash-separated). */
  readonly files: (path: string) => boolean;
  /** Its first group is the version. Global. */
  readonly pattern: RegExp;
  readonly what: string;
}

const md = (p: string) => p.endsWith('.md') && p !== 'CHANGELOG.md';
const manifests = (p: string) => p.startsWith('deploy/') && p.endsWith('.yaml');
const dependents = (p: string) =>
  p === 'deploy/helm/example-operator/Chart.yaml' || (p.startsWith('test/helm/fixtures/') && p.endsWith('/Chart.yaml'));

export const RULES: readonly Rule[] = [
  { files: (p) => md(p) || manifests(p), pattern: new RegExp(String.raw`ghcr\.io/drainguard/drainguard:${V}`, 'g'), what: 'image tag' },
  { files: md, pattern: new RegExp(String.raw`\`ghcr\.io/drainguard/drainguard\`, \`${V}\``, 'g'), what: 'image tag (chart values table)' },
  { files: md, pattern: new RegExp(String.raw`deploy/components/[a-z-]+\?ref=v${V}`, 'g'), what: 'kustomize ?ref=' },
  { files: md, pattern: new RegExp(String.raw`github\.com/drainguard/drainguard/clients/go(?:/ctrl)?@v${V}`, 'g'), what: 'go get' },
  { files: md, pattern: new RegExp(String.raw`^\s*newTag: ${V}$`, 'gm'), what: 'kustomize newTag' },
  { files: md, pattern: new RegExp(String.raw`^(?:.*# )?drainguard ${V} commit `, 'gm'), what: '--version' },
  { files: md, pattern: new RegExp(String.raw`releases/download/v${V}/`, 'g'), what: 'release download' },
  { files: md, pattern: new RegExp(String.raw`drainguard-${V}-(?:linux|image|kustomize)`, 'g'), what: 'release file' },
  { files: md, pattern: new RegExp(String.raw`npm install @drainguard/client@${V}`, 'g'), what: 'npm install' },
  { files: md, pattern: new RegExp(String.raw`oci://ghcr\.io/drainguard/charts/drainguard --version ${V}`, 'g'), what: 'helm pull' },
  {
    files: (p) => md(p) || dependents(p),
    pattern: new RegExp(String.raw`- name: drainguard\n\s+version: ${V}`, 'g'),
    what: 'chart dependency',
  },
  {
    files: (p) => p === 'deploy/helm/drainguard/Chart.yaml',
    pattern: new RegExp(String.raw`^(?:version|appVersion): ${V}$`, 'gm'),
    what: 'chart version',
  },
  {
    files: (p) => p === 'deploy/helm/drainguard/values.yaml',
    pattern: new RegExp(String.raw`^  tag: ${V}$`, 'gm'),
    what: 'chart image tag',
  },
  {
    files: (p) => p === 'clients/go/ctrl/go.mod',
    pattern: new RegExp(String.raw`^\s+github\.com/drainguard/drainguard/clients/go v${V}$`, 'gm'),
    what: 'ctrl requires the client',
  },
  {
    files: (p) => p === 'package-lock.json',
    pattern: new RegExp(String.raw`^  "name": "drainguard",\n  "version": "${V}"`, 'gm'),
    what: 'package-lock',
  },
  {
    files: (p) => p === 'package-lock.json',
    pattern: new RegExp(String.raw`^    "": \{\n      "name": "drainguard",\n      "version": "${V}"`, 'gm'),
    what: 'package-lock',
  },
];

const SKIP = new Set(['node_modules', 'dist', '.git', '.cache', 'coverage']);

/** The files the rules look at: the repository's, without what is built or installed; of test/, only the chart fixtures. */
export function candidateFiles(root: string, dir = root): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    const rel = relative(root, path).split('\\').join('/');
    if (e.isDirectory()) return SKIP.has(e.name) || e.name.startsWith('.build-') ? [] : candidateFiles(root, path);
    if (!e.isFile()) return [];
    if (rel.startsWith('test/') && !dependents(rel)) return [];
    return RULES.some((r) => r.files(rel)) ? [rel] : [];
  });
}

export interface Mention {
  readonly file: string;
  readonly line: number;
  readonly what: string;
  readonly version: string;
}

export function versionMentions(root: string): Mention[] {
  const found: Mention[] = [];
  for (const file of candidateFiles(root).sort()) {
    const text = readFileSync(join(root, file), 'utf8');
    for (const rule of RULES.filter((r) => r.files(file))) {
      for (const m of text.matchAll(rule.pattern)) {
        found.push({ file, line: text.slice(0, m.index).split('\n').length, what: rule.what, version: m[1]! });
      }
    }
  }
  return found;
}

/** Rewrites package.json's version and every mention to VERSION; returns the files changed. */
export function setVersion(root: string, version: string): string[] {
  if (!new RegExp(`^${V}$`).test(version)) throw new Error(`not a semantic version: ${JSON.stringify(version)}`);
  const changed: string[] = [];
  const pkgPath = join(root, 'package.json');
  const pkg = readFileSync(pkgPath, 'utf8');
  const newPkg = pkg.replace(/^( {2}"version": ")[^"]+(")/m, `$1${version}$2`);
  if (newPkg !== pkg) {
    writeFileSync(pkgPath, newPkg);
    changed.push('package.json');
  }
  for (const file of candidateFiles(root).sort()) {
    const text = readFileSync(join(root, file), 'utf8');
    let updated = text;
    for (const rule of RULES.filter((r) => r.files(file))) {
      updated = updated.replace(rule.pattern, (whole: string, old: string) => whole.replace(old, version));
    }
    if (updated !== text) {
      writeFileSync(join(root, file), updated);
      changed.push(file);
    }
  }
  return changed;
}
