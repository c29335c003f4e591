// Node's NODE_* variables are the operator's, not drainguard's (the built
// executable): NODE_OPTIONS that would break drainguard's own runtime is
// ignored by it and reaches the operator untouched, and
// NODE_TLS_REJECT_UNAUTHORIZED=0 does not turn drainguard's certificate checks off.

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { notFoundApi } from '../support/not-found-api.ts';
import { drainguard, tempDir } from '../support/proc.ts';

/** The operator: not Node (it would take NODE_OPTIONS itself), it prints its environment. */
const PRINT_ENV = ['/usr/bin/env'];

async function operatorEnvironment(env: NodeJS.ProcessEnv): Promise<{ code: number | null; seen: string[]; stderr: string[] }> {
  const p = drainguard(['run', '--', ...PRINT_ENV], env);
  const exit = await p.exit();
  return { code: exit.code, seen: p.stdout, stderr: p.stderr };
}

for (const [what, script] of [
  ['a missing file', undefined],
  ['a file that throws', 'throw new Error("tracing failed to start");\n'],
] as const) {
  test(`NODE_OPTIONS=--require of ${what}: drainguard runs, the operator sees it unchanged`, async () => {
    const dir = tempDir();
    const file = join(dir, 'tracing.js');
    if (script !== undefined) writeFileSync(file, script);
    const value = `--require ${file} --max-old-space-size=64`;
    const { code, seen, stderr } = await operatorEnvironment({ NODE_OPTIONS: value, NODE_DEBUG_X: 'kept', NODE_PATH: '/nowhere' });
    assert.equal(code, 0, `drainguard exited ${code}:\n${stderr.join('\n')}`);
    assert.ok(seen.includes(`NODE_OPTIONS=${value}`), `the operator saw:\n${seen.join('\n')}`);
    assert.ok(seen.includes('NODE_DEBUG_X=kept') && seen.includes('NODE_PATH=/nowhere'));
    assert.not.ok(
      stderr.some((l) => l.includes('tracing')),
      stderr.join('\n'),
    );
  });
}

test('NODE_TLS_REJECT_UNAUTHORIZED reaches the operator as given', async () => {
  const { code, seen } = await operatorEnvironment({ NODE_TLS_REJECT_UNAUTHORIZED: '0' });
  assert.equal(code, 0);
  assert.ok(seen.includes('NODE_TLS_REJECT_UNAUTHORIZED=0'), seen.join('\n'));
});

function kubeconfig(server: string, ca?: string): string {
  const file = join(tempDir(), 'kubeconfig');
  const caLine = ca ? `, certificate-authority-data: ${Buffer.from(ca).toString('base64')}` : '';
  writeFileSync(
    file,
    `apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "${server}"${caLine}}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n`,
  );
  return file;
}

test("NODE_TLS_REJECT_UNAUTHORIZED=0 leaves drainguard's certificate checks on", async () => {
  const api = await notFoundApi(true);
  try {
    // Control: with the server's certificate as the CA, requests get through.
    const trusted = drainguard(['status', '--guard', 'clusterrole/x'], {
      KUBECONFIG: kubeconfig(api.url, api.ca),
      NODE_TLS_REJECT_UNAUTHORIZED: '0',
    });
    await trusted.exit(30_000);
    assert.ok(api.requests() > 0, `no request with the CA given:\n${trusted.stderr.join('\n')}`);
    const before = api.requests();
    const untrusted = drainguard(['status', '--guard', 'clusterrole/x'], {
      KUBECONFIG: kubeconfig(api.url),
      NODE_TLS_REJECT_UNAUTHORIZED: '0',
    });
    const exit = await untrusted.exit(30_000);
    const stderr = untrusted.stderr.join('\n');
    assert.not.equal(exit.code, 0, stderr);
    assert.equal(api.requests(), before, 'a request got through TLS without the CA');
    assert.match(stderr, /SELF_SIGNED_CERT/, stderr);
    assert.not.match(stderr, /NODE_TLS_REJECT_UNAUTHORIZED/, "Node's warning that checks are off, which they are not");
  } finally {
    api.close();
  }
});

test.run();
