// docs/architecture.md against the code: its drawing of which area imports which
// is the imports of src/ (static and lazy), there is no import cycle, and its list
// of the code that reads the wall clock is the code that does.
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';

const SRC = resolve('src');
const DOC = readFileSync('docs/architecture.md', 'utf8');

const sources = (readdirSync(SRC, { recursive: true, encoding: 'utf8' }) as string[])
  .filter((f) => f.endsWith('.ts'))
  .map((f) => join(SRC, f))
  .concat(resolve('sidecar/main.ts'));
const text = new Map(sources.map((f) => [f, readFileSync(f, 'utf8')]));

/** The area of a file: `cli/` for src/cli/*, `errors.ts` for src/errors.ts, the path for what is outside src/. */
function areaOf(file: string): string {
  const path = relative(SRC, file);
  if (path.startsWith('..')) return relative('.', file);
  const [first, ...rest] = path.split('/');
  return rest.length > 0 ? `${first}/` : first!;
}

/** The files of src/ (and sidecar/main.ts) that `file` imports, statically or with import(). */
function importsOf(file: string): string[] {
  const found = text
    .get(file)!
    .matchAll(/(?:^|\n)\s*(?:import|export)\b[^;'"]*?\bfrom\s+'(\.[^']+)'|(?:^|\n)\s*import\s+'(\.[^']+)'|\bimport\(\s*'(\.[^']+)'\s*\)/g);
  return [...found].map((m) => resolve(dirname(file), (m[1] ?? m[2] ?? m[3])!));
}

const fileImports = new Map(sources.map((f) => [f, importsOf(f)]));
const areaImports = new Map<string, Set<string>>();
for (const [file, targets] of fileImports) {
  const from = areaOf(file);
  if (!areaImports.has(from)) areaImports.set(from, new Set());
  for (const target of targets) if (areaOf(target) !== from) areaImports.get(from)!.add(areaOf(target));
}

/** A cycle through `edges`, as the list of its nodes, or undefined. */
function cycleIn(edges: Map<string, Iterable<string>>): string[] | undefined {
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (node: string): string[] | undefined => {
    if (state.get(node) === 'done') return undefined;
    if (state.get(node) === 'open') return [...path.slice(path.indexOf(node)), node];
    state.set(node, 'open');
    path.push(node);
    for (const next of edges.get(node) ?? []) {
      const cycle = visit(next);
      if (cycle) return cycle;
    }
    path.pop();
    state.set(node, 'done');
    return undefined;
  };
  for (const node of edges.keys()) {
    const cycle = visit(node);
    if (cycle) return cycle;
  }
  return undefined;
}

/** The drawing's arrows: each `AREA ─▶ A · B (why) · C` line of the first code block after "## The modules". */
function drawnImports(): Map<string, Set<string>> {
  const section = DOC.slice(DOC.indexOf('## The modules'));
  const block = section.slice(section.indexOf('```') + 3, section.indexOf('```', section.indexOf('```') + 3));
  const drawn = new Map<string, Set<string>>();
  for (const line of block.split('\n')) {
    const m = /^\s*(\S+)\s+─▶\s+(.*)$/.exec(line);
    if (!m) continue;
    const targets = m[2]!
      .replace(/\([^)]*\)/g, '')
      .split('·')
      .map((t) => t.trim())
      .filter(Boolean);
    drawn.set(m[1]!, new Set(targets));
  }
  return drawn;
}

test('no import cycle between files', () => {
  const cycle = cycleIn(fileImports);
  assert.equal(
    cycle?.map((f) => relative('.', f)),
    undefined,
    'a cycle of imports',
  );
});

test('no import cycle between areas', () => {
  assert.equal(cycleIn(areaImports), undefined, 'a cycle between areas');
});

test('errors.ts and clock.ts import nothing of drainguard, log/ only those two', () => {
  assert.equal([...(areaImports.get('errors.ts') ?? [])], []);
  assert.equal([...(areaImports.get('clock.ts') ?? [])], []);
  assert.equal([...(areaImports.get('log/') ?? [])].sort(), ['clock.ts', 'errors.ts']);
});

test("docs/architecture.md draws each area's imports, errors.ts, clock.ts and log/ left out", () => {
  const drawn = drawnImports();
  const left = new Set(['errors.ts', 'clock.ts', 'log/']);
  for (const [area, targets] of areaImports) {
    if (left.has(area)) continue;
    const actual = [...targets].filter((t) => !left.has(t)).sort();
    assert.ok(drawn.has(area), `${area} is not drawn (it imports ${actual.join(', ') || 'nothing'})`);
    assert.equal([...drawn.get(area)!].filter((t) => t !== 'nothing').sort(), actual, `the arrow of ${area}`);
  }
  for (const area of drawn.keys()) assert.ok(areaImports.has(area), `${area} is drawn but is no area of src/`);
});

/** Files that read the wall clock or set a timer themselves, rather than through a clock or a deadline they are given. */
function wallClockReaders(): string[] {
  const reads = /\bDate\.now\b|\bperformance\.now\(|\bnew Date\(\)|\bset(?:Timeout|Interval)\(|\bsystemClock\b/;
  const code = (source: string) => source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:])\/\/.*$/gm, '$1');
  return sources
    .filter((f) => reads.test(code(text.get(f)!)))
    .map((f) => relative('.', f))
    .sort();
}

test('docs/architecture.md names every file that reads the wall clock', () => {
  const section = DOC.slice(DOC.indexOf('## Who reads the clock'));
  assert.ok(section.length > 0, 'the section "Who reads the clock"');
  const named = [
    ...section
      .slice(0, section.indexOf('\n## ', 1) > 0 ? section.indexOf('\n## ', 1) : undefined)
      .matchAll(/`((?:src|sidecar)\/[^`]+\.ts)`/g),
  ].map((m) => m[1]!);
  assert.equal([...new Set(named)].sort(), wallClockReaders());
});

test.run();
