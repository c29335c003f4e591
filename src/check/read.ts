// Reading manifests for `drainguard check`: a file, a directory (every .yaml,
// .yml and .json below it, in name order) or `-` for standard input, each
// multi-document YAML; `kind: List` is unpacked. Bad input is a ConfigError
// (exit 2), naming the file and, for YAML, the line; so is input with no object.

import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { ConfigError } from '../errors.ts';
import type { Manifest } from './finding.ts';

const MANIFEST = /\.(ya?ml|json)$/i;

function files(path: string): string[] {
  let stat;
  try {
    stat = statSync(path);
  } catch (err) {
    throw new ConfigError('DG_CHECK_INPUT', `${path}: cannot read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  if (!stat.isDirectory()) return [path];
  return readdirSync(path, { withFileTypes: true })
    .sort((a, b) => a.name.localeCompare(b.name))
    .flatMap((e) => (e.isDirectory() ? files(join(path, e.name)) : MANIFEST.test(e.name) ? [join(path, e.name)] : []));
}

/** The objects in TEXT (from SOURCE, for messages). */
export function parseManifests(text: string, source: string): Manifest[] {
  const out: Manifest[] = [];
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length > 0) {
      const e = doc.errors[0]!;
      throw new ConfigError('DG_CHECK_INPUT', `${source}:${e.linePos?.[0]?.line ?? '?'}: not YAML: ${e.message.split('\n')[0]}`);
    }
    const value = doc.toJS() as unknown;
    if (value === null || value === undefined) continue;
    const items = isObject(value) && value.kind === 'List' && Array.isArray(value.items) ? (value.items as unknown[]) : [value];
    for (const item of items) {
      if (
        !isObject(item) ||
        typeof item.kind !== 'string' ||
        typeof item.apiVersion !== 'string' ||
        !isObject(item.metadata) ||
        typeof item.metadata.name !== 'string'
      ) {
        throw new ConfigError(
          'DG_CHECK_INPUT',
          `${source}: a document is not a Kubernetes object (apiVersion, kind and metadata.name): ${JSON.stringify(item).slice(0, 80)}`,
        );
      }
      out.push(item as unknown as Manifest);
    }
  }
  return out;
}

/** Every object in PATHS; `-` reads STDIN. */
export function readManifests(paths: readonly string[], stdin: () => string): Manifest[] {
  if (paths.length === 0)
    throw new ConfigError(
      'DG_CONFIG_ARGUMENTS',
      'name the manifests to check: a file, a directory, or - for standard input, as arguments or with -f',
    );
  const objects = paths.flatMap((p) =>
    p === '-' ? parseManifests(stdin(), '<stdin>') : files(p).flatMap((f) => parseManifests(readFileSync(f, 'utf8'), f)),
  );
  // A pipe whose render failed gives check nothing: that is no success to report.
  if (objects.length === 0) {
    throw new ConfigError(
      'DG_CHECK_INPUT',
      `${paths.map((p) => (p === '-' ? '<stdin>' : p)).join(', ')}: no Kubernetes object in the input; ` +
        'a helm template or kubectl kustomize that fails in a pipe prints nothing: run it alone to see its error',
    );
  }
  return objects;
}

const isObject = (v: unknown): v is Record<string, any> => typeof v === 'object' && v !== null && !Array.isArray(v);
