// The executable's entry: the only place that exits the process.
import { main } from '../src/cli/main.ts';

// process.stdout is made on first use: `run` never writes to it, and making it costs the start.
const io = {
  env: process.env,
  get stdout() {
    return process.stdout;
  },
  stderr: process.stderr,
};

main(process.argv.slice(2), io).then(
  (status) => process.exit(status),
  (err: unknown) => {
    process.stderr.write(`drainguard: ${(err as Error)?.stack ?? String(err)}\n`);
    process.exit(1);
  },
);
