// The cheap check of a kubeconfig made before the operator starts: a current
// context, in YAML or in JSON (kubectl reads both).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { precheckApiConfig } from '../../src/kube/locate.ts';
import { tempDir } from '../support/proc.ts';

const located = (text: string) => {
  const file = join(tempDir(), 'kubeconfig');
  writeFileSync(file, text);
  return { kind: 'kubeconfig' as const, files: [file], source: `KUBECONFIG=${file}` };
};
const config = { apiVersion: 'v1', kind: 'Config', clusters: [], users: [], contexts: [] };

test('YAML and JSON with a current context pass; without one, the error names the file', () => {
  precheckApiConfig(located('apiVersion: v1\nkind: Config\ncurrent-context: pod\n'));
  precheckApiConfig(located(JSON.stringify({ ...config, 'current-context': 'pod' })));
  precheckApiConfig(located(JSON.stringify({ ...config, 'current-context': 'pod' }, null, 2)));
  for (const text of [
    'apiVersion: v1\nkind: Config\ncurrent-context: ""\n',
    JSON.stringify(config),
    JSON.stringify({ ...config, 'current-context': '' }),
  ]) {
    assert.throws(() => precheckApiConfig(located(text)), /KUBECONFIG=.*kubeconfig: no current context with a cluster/, text);
  }
});

test.run();
