// Preparing the drain socket's path: refuse what is not ours, clear what is stale.

import { lstatSync, mkdtempSync, rmSync, unlinkSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ConfigError } from '../errors.ts';

/** A fresh directory only this user can enter, holding the socket; removed by the returned cleanup. */
export function privateSocketPath(): { path: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'drainguard-'));
  return { path: join(dir, 'drain.sock'), cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * Makes `path` free to listen on. A socket nobody answers on is a leftover
 * of a drainguard that died and is removed; anything else there is an error.
 */
export async function claimSocketPath(path: string, source: string): Promise<void> {
  const dir = dirname(path);
  let dirStat;
  try {
    dirStat = lstatSync(dir);
  } catch {
    throw new ConfigError(
      'DG_SOCKET_PATH',
      `${source}: the directory ${dir} of the socket ${path} does not exist; create it or choose another path`,
    );
  }
  if (!dirStat.isDirectory())
    throw new ConfigError('DG_SOCKET_PATH', `${source}: ${dir} is not a directory, so the socket ${path} cannot be made there`);
  let stat;
  try {
    stat = lstatSync(path);
  } catch {
    return;
  }
  if (!stat.isSocket())
    throw new ConfigError('DG_SOCKET_PATH', `${source}: ${path} exists and is not a socket; remove it or choose another path`);
  if (await answers(path))
    throw new ConfigError('DG_SOCKET_IN_USE', `${source}: ${path} is in use by another process; choose another path`);
  unlinkSync(path);
}

function answers(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = connect(path);
    probe.once('connect', () => {
      probe.destroy();
      resolve(true);
    });
    probe.once('error', () => resolve(false));
  });
}
