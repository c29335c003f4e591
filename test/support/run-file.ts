// Runs one uvu test file in this process (the runner gives each file its own).
const file = process.argv[2]!;
(globalThis as any).UVU_DEFER = 1;
const uvu = await import('uvu');
(globalThis as any).UVU_INDEX = 0;
(globalThis as any).UVU_QUEUE.push([file]);
await import(new URL(file, `file://${process.cwd()}/`).href);
await uvu.exec(false);
// A test that left a process or socket behind must not hang the suite.
process.exit();
