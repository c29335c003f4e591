// The executable's entry: the only place that exits the process.
import { main } from '../src/cli/main.ts';

main(process.argv.slice(2), { env: process.env, stdout: process.stdout, stderr: process.stderr }).then(
  (status) => process.exit(status),
  (err: unknown) => {
    process.stderr.write(`drainguard: ${(err as Error)?.stack ?? String(err)}\n`);
    process.exit(1);
  },
);
