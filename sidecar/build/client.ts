// The TypeScript client, src/protocol/client.ts, as a library: one bundle and
// its declarations, made the same way for dist/ (this package's ./client
// export, sidecar/build.ts) and for the npm package @drainguard/client
// (scripts/release/ts-client.ts).

import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { build } from 'esbuild';

/** Bundles the client into `outfile` (ESM, Node.js 20 or later), with `banner` as its first line when given. */
export async function bundleClient(root: string, outfile: string, banner?: string): Promise<void> {
  await build({
    entryPoints: [join(root, 'src/protocol/client.ts')],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    ...(banner !== undefined && { legalComments: 'none', banner: { js: banner } }),
    logLevel: 'warning',
  });
}

/** Emits the client's declarations into `outDir` (tsconfig.client.json); protocol/client.d.ts is the client's. */
export function emitClientTypes(root: string, outDir: string): void {
  execFileSync(
    process.execPath,
    [createRequire(import.meta.url).resolve('typescript/bin/tsc'), '-p', join(root, 'tsconfig.client.json'), '--outDir', outDir],
    {
      stdio: 'inherit',
      // Node's compile cache would be left in TMPDIR by tsc's run.
      env: { ...process.env, NODE_DISABLE_COMPILE_CACHE: '1' },
    },
  );
}
