// The executable's help and version: every command lists every option it takes,
// with its variable and default, straight from the options table.
import { readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { COMMANDS } from '../../src/cli/commands.ts';
import { optionsFor } from '../../src/config/load.ts';
import { envName } from '../../src/config/options.ts';
import { drainguard } from '../support/proc.ts';

test("--version prints drainguard's version, the commit it was built from and the embedded Node.js", async () => {
  const p = drainguard(['--version']);
  assert.equal((await p.exit()).code, 0);
  const { version } = JSON.parse(readFileSync('package.json', 'utf8'));
  assert.match(
    p.stdout[0]!,
    new RegExp(`^drainguard ${version.replaceAll('.', '\\.')} commit ([0-9a-f]{12}(-dirty)?|unknown) \\(node v24\\.\\d+\\.\\d+\\)$`),
  );
});

test('--help lists every command; no command is a usage error', async () => {
  const p = drainguard(['--help']);
  assert.equal((await p.exit()).code, 0);
  for (const c of COMMANDS)
    assert.ok(
      p.stdout.some((l) => l.startsWith(`  ${c.name} `)),
      c.name,
    );
  const none = drainguard([]);
  assert.equal((await none.exit()).code, 2);
});

for (const c of COMMANDS) {
  test(`drainguard ${c.name} --help lists each option with its variable and default`, async () => {
    const p = drainguard([c.name, '--help']);
    assert.equal((await p.exit()).code, 0);
    const help = p.stdout.join('\n');
    assert.ok(help.startsWith(`Usage: ${c.usage}`));
    for (const spec of optionsFor(c.name, c.extra)) {
      assert.ok(help.includes(`--${spec.flag}`), `--${spec.flag}`);
      if (!spec.flagOnly) assert.ok(help.includes(`env ${envName(spec)}; default: `), envName(spec));
    }
  });
}

test('an unknown option names itself and the command', async () => {
  const p = drainguard(['run', '--frobnicate', '--', 'true']);
  assert.equal((await p.exit()).code, 2);
  assert.match(p.stderr.join('\n'), /unknown option --frobnicate for 'drainguard run'/);
});

test.run();
