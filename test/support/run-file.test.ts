// How a test file runs (test/support/run-file.ts): what uvu alone does not say
// reaches the runner's summary.

import { spawnSync } from 'node:child_process';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { BEFORE_HOOK_FAILED } from './progress.ts';

test('a failing before hook is named with its error, and fails the file', () => {
  const run = spawnSync(process.execPath, ['test/support/run-file.ts', 'test/support/fixtures/failing-before.test.ts'], {
    encoding: 'utf8',
  });
  // uvu alone shows only "(0 / 2)" and exits 0.
  assert.match(run.stdout, /Passed:\s+0/);
  assert.match(run.stderr, `${BEFORE_HOOK_FAILED} Error: no control plane for this file`);
  assert.is(run.status, 1);
});

test.run();
