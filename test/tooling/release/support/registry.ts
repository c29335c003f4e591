// A real OCI registry on loopback for the tests: Debian's docker-registry
// (the CNCF distribution registry), plain HTTP on a free port of 127.0.0.1,
// storage in a temp dir. The registry cannot report the port 0 became (it
// logs the address it was given), so the port is picked by binding first.

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../../../support/free-port.ts';
import { Proc, tempDir } from '../../../support/proc.ts';

export interface Registry {
  /** 127.0.0.1:PORT */
  readonly host: string;
  readonly proc: Proc;
  stop(): Promise<void>;
}

export async function startRegistry(): Promise<Registry> {
  const dir = tempDir();
  const port = await freePort();
  const host = `127.0.0.1:${port}`;
  writeFileSync(
    join(dir, 'config.yml'),
    [
      'version: 0.1',
      'log:',
      '  level: info',
      '  accesslog:',
      '    disabled: true',
      'storage:',
      '  filesystem:',
      `    rootdirectory: ${join(dir, 'data')}`,
      'http:',
      `  addr: ${host}`,
      '',
    ].join('\n'),
  );
  const proc = new Proc('docker-registry', ['serve', join(dir, 'config.yml')], { REGISTRY_HTTP_SECRET: 'drainguard-test' });
  await proc.stderrLine(new RegExp(`msg="listening on ${host.replaceAll('.', '\\.')}"`), 20_000);
  return {
    host,
    proc,
    async stop() {
      proc.kill('SIGTERM');
      await proc.exit(15_000);
    },
  };
}
