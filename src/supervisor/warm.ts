// The way from a termination signal to the clients (and to the stop signal)
// is code that runs once, at the end. V8 compiles a function on its first call
// (the executable's code cache holds only what ran when the cache was made)
// and flushes the bytecode of functions left unused across several full
// collections, so the supervisors rehearse that way on throwaway objects: not
// at start, which the operator would wait for, but just after, and again now
// and then for a supervisor that runs for days.

const FIRST_MS = 10;
const EVERY_MS = 60_000;

/** Runs `rehearse` shortly after start and every minute; the timers never keep drainguard alive. Returns the stop. */
export function keepWarm(rehearse: () => void): () => void {
  const first = setTimeout(rehearse, FIRST_MS).unref();
  const again = setInterval(rehearse, EVERY_MS).unref();
  return () => {
    clearTimeout(first);
    clearInterval(again);
  };
}
