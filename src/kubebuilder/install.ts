// Where kubebuilder v4 finds an external plugin, and what is put there: the
// executable PLUGINS/drainguard.dev/v1-alpha/drainguard.dev (kubebuilder takes
// the file named as the plugin's folder), a script that runs this drainguard
// as `drainguard kubebuilder-plugin`. kubebuilder runs it with no argument.

import { chmodSync, mkdirSync, realpathSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { isSea } from 'node:sea';
import { DrainguardError } from '../errors.ts';
import { launcherPath } from '../install/layout.ts';
import { PLUGIN_NAME, PLUGIN_VERSION } from './plugin.ts';

/** kubebuilder's plugins root on Linux and macOS: EXTERNAL_PLUGINS_PATH, else XDG_CONFIG_HOME's or the home's config folder. */
export function pluginsRoot(env: NodeJS.ProcessEnv, platform: NodeJS.Platform = process.platform): string {
  if (env.EXTERNAL_PLUGINS_PATH) return resolve(env.EXTERNAL_PLUGINS_PATH);
  if (env.XDG_CONFIG_HOME) return join(env.XDG_CONFIG_HOME, 'kubebuilder', 'plugins');
  const home = env.HOME || homedir();
  return platform === 'darwin'
    ? join(home, 'Library', 'Application Support', 'kubebuilder', 'plugins')
    : join(home, '.config', 'kubebuilder', 'plugins');
}

const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

/** The plugin's script under ROOT, naming EXECUTABLE (this drainguard, as started). Returns its path. */
export function installPlugin(root: string, executable = thisExecutable()): string {
  const dir = join(root, PLUGIN_NAME, PLUGIN_VERSION);
  const file = join(dir, PLUGIN_NAME);
  const script =
    '#!/bin/sh\n' +
    `# kubebuilder's external plugin ${PLUGIN_NAME}/${PLUGIN_VERSION}: written by drainguard kubebuilder-plugin install.\n` +
    `exec ${quote(executable)} kubebuilder-plugin "$@"\n`;
  try {
    mkdirSync(dir, { recursive: true });
    writeFileSync(`${file}.tmp`, script, { mode: 0o755 });
    chmodSync(`${file}.tmp`, 0o755);
    renameSync(`${file}.tmp`, file);
  } catch (err) {
    throw new DrainguardError('DG_KUBEBUILDER_INSTALL', `${file}: ${(err as Error).message}`, { cause: err });
  }
  return file;
}

function thisExecutable(): string {
  const launcher = launcherPath();
  if (launcher) return launcher;
  if (!isSea())
    throw new DrainguardError(
      'DG_KUBEBUILDER_INSTALL',
      'the plugin runs the drainguard executable, and this is not it (run dist/drainguard kubebuilder-plugin install, not the sources)',
    );
  return realpathSync(process.execPath);
}
