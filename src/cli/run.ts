import { type SupervisorConfig, resolveSupervisorConfig } from '../config/supervisor.ts';
import type { CommandDef } from './command.ts';
import { supervise } from './supervise.ts';

export const runCommand: CommandDef<{ supervisor: SupervisorConfig; command: readonly string[] }> = {
  name: 'run',
  summary: 'start COMMAND as a child and supervise it (local wrapper, or the container entrypoint)',
  usage: 'drainguard run [OPTIONS] -- COMMAND [ARGS...]',
  description: `Starts COMMAND with DRAINGUARD_SOCKET in its environment and passes signals on to it.
On the first SIGTERM or SIGINT it tells connected clients to drain, and passes the stop
signal on once they all said drained, the operator exited, or the drain timeout passed;
a second SIGTERM or SIGINT passes it on at once. SIGKILL follows after the stop timeout.`,
  stopAtPositional: true,
  resolve: (args) => ({ supervisor: resolveSupervisorConfig(args), command: args.positionals }),
  run: ({ supervisor: config, command }, io) => supervise(config, io, command),
};
