import { type InstallConfig, resolveInstallConfig } from '../config/commands.ts';
import type { FailureCode } from '../errors.ts';
import { createLogger } from '../log/logger.ts';
import type { CommandDef } from './command.ts';

export const installCommand: CommandDef<InstallConfig> = {
  name: 'install',
  summary: 'copy drainguard and what it needs to start into DIR (for an init container)',
  usage: 'drainguard install [OPTIONS] DIR',
  description: `Writes DIR/drainguard, a static launcher, and DIR/lib/: the executable, glibc's dynamic
loader and the shared libraries it needs. DIR/drainguard then runs in any x86-64 Linux
image, also one with no libc and no shell (distroless/static, scratch), for example as
DIR/drainguard run -- /manager or DIR/drainguard prestop. Files are replaced one by one
and the launcher is written last. DIR is created when missing.`,
  resolve: resolveInstallConfig,
  async run({ dir, logLevel, logFormat }, io) {
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
  },
};
