// Work a test file's support code must do after the file's last test, whether
// it passed or not (test/support/run-file.ts runs it before the process exits).

type Hook = () => Promise<void>;
const hooks: Hook[] = [];

/** Runs `hook` at the end of this test file; later hooks first. */
export function onFileEnd(hook: Hook): void {
  hooks.unshift(hook);
}

/** Runs every hook, each to its end; the errors, in order. */
export async function runFileEndHooks(): Promise<unknown[]> {
  const errors: unknown[] = [];
  for (const hook of hooks.splice(0)) await hook().catch((err) => errors.push(err));
  return errors;
}
