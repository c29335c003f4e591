// A drain told by a DrainServer alone, without the supervisor's Drain: for the
// tests of the socket, the clients' answers counted until none is left to give one.
import type { DrainServer } from '../../src/protocol/server.ts';

export interface Tally {
  readonly acknowledged: number;
  readonly disconnected: number;
}

/** Tells the server's clients to drain by `deadline`; `answered` resolves once every greeted client said drained or went away (at once when none is left). */
export function tellDrain(server: DrainServer, deadline: number): { readonly told: number; readonly answered: Promise<Tally> } {
  let acknowledged = 0;
  let disconnected = 0;
  let done!: (tally: Tally) => void;
  const answered = new Promise<Tally>((resolve) => (done = resolve));
  const told = server.tellDrain({
    deadline: () => deadline,
    onAnswer: (answer, _client, undrained) => {
      if (answer === 'drained') acknowledged++;
      else disconnected++;
      if (undrained === 0) done({ acknowledged, disconnected });
    },
  });
  if (server.undrained() === 0) done({ acknowledged, disconnected });
  return { told, answered };
}
