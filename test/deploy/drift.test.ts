// Every generated file in the repository is what scripts/generate.ts makes
// now: the launcher's bytes from launcher.S, the table of variables from the
// options, the error codes from src/errors.ts, the rendered examples from the kustomizations,
// the library chart's defaults from the options, its grace rule from src/config/grace-rule.ts,
// its admission rules from the component's.

import { readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ROOT, generateAll } from '../../scripts/generate.ts';

const generated = generateAll();

test("the generator makes the launcher, the table of variables, the table of error codes, each rendered example, the chart's defaults, grace rule, admission rules and settings table", () => {
  assert.equal(generated.map((g) => g.path).sort(), [
    'README.md',
    'deploy/helm/drainguard/templates/_admission-rules.tpl',
    'deploy/helm/drainguard/templates/_defaults.tpl',
    'deploy/helm/drainguard/templates/_grace-rule.tpl',
    'deploy/rendered/hold.yaml',
    'deploy/rendered/native-sidecar.yaml',
    'deploy/rendered/sidecar.yaml',
    'deploy/rendered/wrap.yaml',
    'docs/errors.md',
    'docs/helm.md',
    'src/install/launcher-image.ts',
  ]);
});

for (const { path, content } of generated) {
  test(`${path} is up to date (npm run generate)`, () => {
    // A diff of lines, so a failure shows what changed.
    assert.fixture(readFileSync(`${ROOT}/${path}`, 'utf8'), content);
  });
}

test("the README's table of layers is check's: a layer's coverage changed in src/check/layers.ts changes it", async () => {
  const { WAYS, layersMarkdown } = await import('../../src/check/layers.ts');
  const doc = generated.find((g) => g.path === 'README.md')!.content;
  assert.ok(doc.includes(layersMarkdown()));
  const argo = WAYS.find((w) => w.way === 'Argo CD prune')!;
  assert.not.ok(doc.includes(layersMarkdown(WAYS.map((w) => (w === argo ? { ...w, covers: { ...w.covers, hold: true } } : w)))));
});

test("the chart's grace rule is graceNeeded's: a changed coefficient changes it, a rule it cannot compute fails the generation", async () => {
  const { graceRuleTemplate } = await import('../../scripts/generate/grace-rule.ts');
  const { defaultDrainTimeout } = await import('../../src/config/grace-rule.ts');
  const stopTwice = (drainMs: number, stopMs: number) => drainMs + 2 * stopMs + 2000;
  assert.ok(graceRuleTemplate({ graceNeeded: stopTwice, defaultDrainTimeout: (g, s) => Math.max(0, g - stopTwice(0, s)) }).includes('add (int .drain) (mul 2 (int .stop)) 2'));
  assert.throws(() => graceRuleTemplate({ graceNeeded: (d, s) => Math.max(d, s) + 2000, defaultDrainTimeout }), /graceNeeded\(1s, 1s\) is not drain × 1 \+ stop × 1 \+ 2s/);
  assert.throws(() => graceRuleTemplate({ graceNeeded: (d, s) => d + s + 1500, defaultDrainTimeout }), /not a whole number of seconds/);
  assert.throws(() => graceRuleTemplate({ graceNeeded: (d, s) => d + s + 2000, defaultDrainTimeout: (g, s) => g - s - 2000 }), /defaultDrainTimeout\(0s, 0s\) is not grace − graceNeeded\(0, stop\), at least 0/);
});

test("the README's table lists every option of every command by its variable", async () => {
  const { envName } = await import('../../src/config/options.ts');
  const { COMMANDS } = await import('../../src/cli/commands.ts');
  const { optionsFor } = await import('../../src/config/load.ts');
  const doc = generated.find((g) => g.path === 'README.md')!.content;
  for (const c of COMMANDS) for (const spec of optionsFor(c.name, c.extra)) assert.ok(doc.includes(spec.flagOnly ? `--${spec.flag}` : `\`${envName(spec)}\``), `${c.name} --${spec.flag}`);
});

test.run();
