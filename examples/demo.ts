// The quick start: runs the demo operator under dist/drainguard, stops it with
// SIGTERM after a few seconds, and shows drainguard draining it first.
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';

const seconds = Number(process.argv[2] ?? 4);
const exe = resolve('dist/drainguard');
const command = [
  exe,
  'run',
  '--log-format',
  'text',
  '--',
  process.execPath,
  resolve('examples/demo-operator.ts'),
  '--workers',
  '3',
  '--min',
  '500ms',
  '--max',
  '3s',
];
process.stdout.write(`$ ${command.join(' ')}\n`);
const child = spawn(command[0]!, command.slice(1), { stdio: 'inherit' });
setTimeout(() => {
  process.stdout.write(`\n--- ${seconds}s later: kill -TERM ${child.pid} (a rolling update, an eviction, helm uninstall...)\n\n`);
  child.kill('SIGTERM');
}, seconds * 1000);
child.on('exit', (code, signal) => {
  process.stdout.write(
    `\n--- drainguard exited with ${code ?? signal}: every reconcile in flight finished before the operator was stopped\n`,
  );
  process.exitCode = code ?? 1;
});
