// The executable's entry: the only place that exits the process.
//
// It exits with process.exit() once the event loop is empty ('beforeExit'),
// which skips tearing V8's heap down: 0.8 ms of CPU at every start. That call
// joins V8's helper thread while the isolate lives, and an optimizing compile
// waiting there for a garbage collection would wait for good
// (nodejs/node#54918: drainguard hung after its operator had exited); the
// executable compiles on the main thread alone (sidecar/build/sea.ts), so no
// helper waits. The bundle run by plain node, for profiling, has no such flag.
import { main } from '../src/cli/main.ts';
import { stderrWriter } from '../src/log/stderr.ts';

// The environment as given, which the operator gets untouched (wrap mode). Node's own NODE_*
// variables are the operator's: drainguard's runtime ignores NODE_OPTIONS (sidecar/build/sea.ts),
// and what Node reads after the start is taken out of drainguard's own: NODE_TLS_REJECT_UNAUTHORIZED
// would have Node call drainguard's certificate checks, which stay on, off (docs/sidecar.md).
const env = { ...process.env };
for (const name of Object.keys(process.env)) if (name.startsWith('NODE_')) delete process.env[name];

// process.stdout is made on first use: `run` never writes to it, and making it costs the start;
// process.stderr is not made at all (log/stderr.ts).
const io = {
  env,
  get stdout() {
    return process.stdout;
  },
  stderr: stderrWriter(),
};

// A bug of drainguard's own: one line that says so, not Node's dump of the bundle's source line
// (the whole bundle, one line, in the pod's log). Exiting ends the operator with it (supervisor/child.ts).
process.on('uncaughtException', (err) => {
  io.stderr.write(`drainguard: internal error, please report it: ${err?.stack ?? String(err)}\n`);
  process.exit(1);
});

/**
 * Whatever still holds the loop then (a request to an API that hangs, cut off by the release
 * deadline) is not waited for long: the release keeps only half a second before the kubelet's SIGKILL.
 */
const LINGER_MS = 100;

function leave(status: number): void {
  process.exitCode = status;
  process.once('beforeExit', () => process.exit(status));
  setTimeout(() => process.exit(status), LINGER_MS).unref();
}

main(process.argv.slice(2), io).then(leave, (err: unknown) => {
  io.stderr.write(`drainguard: ${(err as Error)?.stack ?? String(err)}\n`);
  leave(1);
});
