// Set by the executable's build; the package version when run from source.
declare const __DRAINGUARD_VERSION__: string | undefined;

export const VERSION: string =
  typeof __DRAINGUARD_VERSION__ === 'string' ? __DRAINGUARD_VERSION__ : (process.env.npm_package_version ?? '0.0.0-dev');
