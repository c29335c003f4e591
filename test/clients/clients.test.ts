// The Go and the TypeScript client, the same end-to-end cases under the built
// executable: both examples print the same lines, so both face the same asserts.
import { execFileSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { NODE, Proc, drainguard, tempDir } from '../support/proc.ts';

const GO_DIR = resolve('clients/go');
const goExample = join(tempDir(), 'go-example');
execFileSync('go', ['build', '-o', goExample, './example'], {
  cwd: GO_DIR,
  stdio: 'inherit',
  env: { ...process.env, GOFLAGS: '-mod=mod' },
});

const CLIENTS: Record<string, (flags: string[]) => string[]> = {
  go: (flags) => [goExample, ...flags.flatMap((f) => f.replace(/^--/, '-').split('='))],
  typescript: (flags) => [NODE, resolve('examples/demo-operator.ts'), ...flags.flatMap((f) => f.split('='))],
};

const ids = (p: Proc, what: string) => p.stdout.filter((l) => l.startsWith(`reconcile ${what} `)).map((l) => l.split(' ')[2]);

test('go test: the Go package and its example', () => {
  const out = execFileSync('go', ['test', './...'], { cwd: GO_DIR, encoding: 'utf8' });
  assert.match(out, /^ok\s+github\.com\/drainguard\/drainguard\/clients\/go\s/m);
  assert.match(out, /^ok\s+github\.com\/drainguard\/drainguard\/clients\/go\/example\s/m);
});

for (const [name, command] of Object.entries(CLIENTS)) {
  test(`${name}: acknowledged drain, every reconcile in flight finishes before the stop signal`, async () => {
    const p = drainguard(['run', '--', ...command(['--workers=3', '--min=300ms', '--max=900ms'])]);
    await p.line('ready');
    await p.line(/^reconcile start 3$/);
    p.kill('SIGTERM');
    assert.equal((await p.exit()).code, 0);
    const started = ids(p, 'start');
    assert.equal(ids(p, 'done').sort(), started.sort(), 'every started reconcile finished');
    assert.equal(ids(p, 'interrupted'), []);
    const at = (line: string) => p.stdout.indexOf(line);
    assert.ok(at('drain received') >= 0 && at('drain received') < at('exit'));
    // "drained sent" may lose the race with the stop signal in the example's own output;
    // drainguard's log below is the proof that drained came before the stop signal.
    if (at('drained sent') >= 0) assert.ok(at('drain received') < at('drained sent') && at('drained sent') < at('exit'));
    const logs = p.logs().map((l) => l.msg);
    assert.ok(logs.indexOf('client drained') >= 0 && logs.indexOf('client drained') < logs.indexOf('stop signal sent'));
    assert.equal(p.logs().find((l) => l.msg === 'drain ended')!.outcome, 'drained');
  });

  test(`${name}: reconciles longer than the drain are abandoned at the deadline`, async () => {
    const p = drainguard(['run', '--drain-timeout', '500ms', '--', ...command(['--workers=2', '--min=20s', '--max=20s'])]);
    await p.line(/^reconcile start 2$/);
    p.kill('SIGTERM');
    assert.equal((await p.exit()).code, 0);
    assert.equal(ids(p, 'interrupted').sort(), ['1', '2']);
    assert.equal(ids(p, 'done'), []);
    const ended = p.logs().find((l) => l.msg === 'drain ended')!;
    assert.ok((ended.durationMs as number) >= 490 && (ended.durationMs as number) < 5000, `drain lasted ${ended.durationMs} ms`);
  });

  test(`${name}: without drainguard the client is a no-op and SIGTERM interrupts`, async () => {
    const [file, ...args] = command(['--workers=2', '--min=20s', '--max=20s']);
    const p = new Proc(file!, args);
    await p.line(/^reconcile start 2$/);
    p.kill('SIGTERM');
    assert.equal((await p.exit()).code, 0);
    assert.equal(ids(p, 'interrupted').sort(), ['1', '2']);
    assert.not.ok(p.stdout.includes('drain received'));
  });
}

test.run();
