// Runs one uvu test file in this process (the runner gives each file its own).
import { runFileEndHooks } from './file-end.ts';
import { BEFORE_HOOK_FAILED, testStarted } from './progress.ts';

const file = process.argv[2]!;
(globalThis as any).UVU_DEFER = 1;
const uvu = await import('uvu');
(globalThis as any).UVU_INDEX = 0;
// Each test of the file's default suite, as it starts (uvu sets __test__ before the before.each hooks).
uvu.test.before.each((state: { __test__?: string }) => testStarted(state.__test__ ?? ''));
// uvu loses the error of a failing before hook (its runner returns from a `finally`): the file
// would only show "(0 / N)". The error is printed here for the runner's summary, then rethrown.
let hookFailed = false;
const registerBefore = uvu.test.before;
uvu.test.before = Object.assign(
  (hook: Parameters<typeof registerBefore>[0]) =>
    registerBefore(async (state) => {
      try {
        await hook(state);
      } catch (err) {
        console.error(`${BEFORE_HOOK_FAILED} ${err instanceof Error ? err.stack : String(err)}`);
        hookFailed = true;
        throw err;
      }
    }),
  { each: registerBefore.each },
);
(globalThis as any).UVU_QUEUE.push([file]);
await import(new URL(file, `file://${process.cwd()}/`).href);
await uvu.exec(false);
// uvu's exit status does not count it either.
if (hookFailed) process.exitCode = 1;
// Cleanup the file's support code registered (namespaces, private control planes):
// a failure there fails the file.
const errors = await runFileEndHooks();
for (const err of errors) console.error(`file cleanup failed: ${err instanceof Error ? err.stack : err}`);
if (errors.length > 0) process.exitCode = 1;
// A test that left a process or socket behind must not hang the suite.
process.exit();
