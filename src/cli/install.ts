import { type InstallConfig, resolveInstallConfig } from '../config/commands.ts';
import type { FailureCode } from '../errors.ts';
import { createLogger } from '../log/logger.ts';
import type { CliIO } from './command.ts';

export const resolve = resolveInstallConfig;

export async function run({ dir, logLevel, logFormat }: InstallConfig, io: CliIO): Promise<number> {
  const logger = createLogger({ level: logLevel, format: logFormat, stream: io.stderr });
  // Loaded on use: the install code brings execa, whose evaluation would add to every command's start.
  const [{ install }, { InstallSourceError }] = await Promise.all([import('../install/install.ts'), import('../install/sources.ts')]);
  try {
    const result = await install(dir);
    logger.info('installed', {
      dir,
      files: result.files.map((f) => f.path),
      bytes: result.bytes,
      run: `${dir.replace(/\/+$/, '')}/drainguard`,
    });
    return 0;
  } catch (err) {
    if (err instanceof InstallSourceError) {
      logger.error('install failed', { code: err.code, error: err.message });
      return 1;
    }
    const e = err as NodeJS.ErrnoException;
    if (e.code && e.path) {
      const code: FailureCode = 'DG_INSTALL_WRITE';
      logger.error('install failed', { code, error: `${e.code} on ${e.path}`, dir });
      return 1;
    }
    throw err;
  }
}
