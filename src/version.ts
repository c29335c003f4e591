// Set by the executable's build (sidecar/build/stamp.ts); from source: the package version, commit unknown.
declare const __DRAINGUARD_VERSION__: string | undefined;
declare const __DRAINGUARD_COMMIT__: string | undefined;

export const VERSION: string =
  typeof __DRAINGUARD_VERSION__ === 'string' ? __DRAINGUARD_VERSION__ : (process.env.npm_package_version ?? '0.0.0-dev');

/** The commit the executable was built from: 12 hex digits, "-dirty" when the tree had changes, or "unknown". */
export const COMMIT: string = typeof __DRAINGUARD_COMMIT__ === 'string' ? __DRAINGUARD_COMMIT__ : 'unknown';

/** The line of `drainguard --version`. */
export const versionLine = (node: string = process.version): string => `drainguard ${VERSION} commit ${COMMIT} (node ${node})`;
