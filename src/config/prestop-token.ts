// The token of the httpGet preStop route (telemetry/prestop-route.ts): from a
// file (a mounted Secret), read again whenever the file changes, as the
// kubelet rotates a Secret volume's files; or, deprecated, as a value.

import { readFileSync, statSync } from 'node:fs';
import { ConfigError } from '../errors.ts';

/** Short tokens can be guessed; 16 characters of a random string are enough. */
export const MIN_TOKEN_LENGTH = 16;

export interface PrestopToken {
  /** The token in force, and why the file's latest content was not taken (it then stays the one before). */
  current(): { readonly token: string; readonly problem?: string };
  /** Set when the token was given as a value: what to tell the user, once. */
  readonly deprecation?: string;
}

/**
 * The token from DRAINGUARD_PRESTOP_TOKEN_FILE (or, deprecated, DRAINGUARD_PRESTOP_TOKEN); undefined when
 * neither is set. Throws ConfigError naming the variable or flag each came from (`sources`, config/load.ts's sourceOf).
 */
export function resolvePrestopToken(
  values: { prestopToken?: string; prestopTokenFile?: string },
  sources: { readonly token: string; readonly file: string },
): PrestopToken | undefined {
  const { token: tokenSource, file: fileSource } = sources;
  if (values.prestopToken !== undefined && values.prestopTokenFile !== undefined) {
    throw new ConfigError('DG_CONFIG_PRESTOP_TOKEN', `${tokenSource} and ${fileSource} are both set; give the preStop token one way only`);
  }
  if (values.prestopTokenFile !== undefined) return fileToken(values.prestopTokenFile, fileSource);
  if (values.prestopToken === undefined) return undefined;
  const token = checked(values.prestopToken, tokenSource);
  return {
    current: () => ({ token }),
    deprecation:
      `${tokenSource} is deprecated: a value in the pod spec can be read by anyone with the view role, ` +
      "and the process's environment by its container; " +
      `mount the token from a Secret and name the file in ${fileSource}`,
  };
}

function fileToken(file: string, fileSource: string): PrestopToken {
  const source = `${fileSource} (${file})`;
  const read = (): { token: string; stamp: string } => {
    try {
      // Stat, then read: a change in between is seen at the next call. A Secret's file ends with a newline that is not the token's.
      const stamp = stampOf(file);
      return { stamp, token: checked(readFileSync(file, 'utf8').trim(), source) };
    } catch (err) {
      if (err instanceof ConfigError) throw err;
      throw new ConfigError(
        'DG_CONFIG_PRESTOP_TOKEN',
        `${fileSource}: cannot read the token file ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      );
    }
  };
  let last = read();
  return {
    current() {
      let stamp: string;
      try {
        stamp = stampOf(file);
      } catch (err) {
        return {
          token: last.token,
          problem:
            `${fileSource}: cannot read the token file ${file}: ${(err as NodeJS.ErrnoException).code}; ` +
            'the token read before stays in force',
        };
      }
      if (stamp === last.stamp) return { token: last.token };
      try {
        last = read();
        return { token: last.token };
      } catch (err) {
        return { token: last.token, problem: `${(err as Error).message}; the token read before stays in force` };
      }
    },
  };
}

/** Changes when the file is replaced (the kubelet swaps a Secret volume's ..data link) or written. */
function stampOf(file: string): string {
  const { dev, ino, size, mtimeMs } = statSync(file);
  return `${dev}:${ino}:${size}:${mtimeMs}`;
}

function checked(token: string, source: string): string {
  if (token.length < MIN_TOKEN_LENGTH || /\s/.test(token)) {
    throw new ConfigError(
      'DG_CONFIG_PRESTOP_TOKEN',
      `${source}: expected a token of at least ${MIN_TOKEN_LENGTH} characters without spaces (a random string), ` +
        `got one of ${token.length} characters`,
    );
  }
  return token;
}
