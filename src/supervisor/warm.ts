// The way from a termination signal to the clients (and to the stop signal)
// is code that runs once, at the end. V8 compiles a function on its first call
// (the executable's code cache holds only what ran when the cache was made)
// and flushes the bytecode of functions left unused across several full
// collections, so the supervisors rehearse that way on throwaway objects: not
// at start, which the operator would wait for, but just after, and again now
// and then for a supervisor that runs for days.
//
// After a rehearsal the young generation is collected, while nothing waits for
// drainguard, if it is more than half full: a collection that fell into the
// stop (1–1.5 ms) would sit between `drained` and the stop signal, and V8
// starts one at 80 %. Below half, what a stop allocates cannot get it there,
// and the collection (which fills what is left) would only make the pages of
// the unused half resident. Start-up leaves it a little under half full.

const FIRST_MS = 10;
const EVERY_MS = 60_000;
/** Small enough for the young generation (larger objects go straight to the old one). */
const FILLER_BYTES = 16 * 1024;

/** Runs `rehearse` shortly after start and every minute; the timers never keep drainguard alive. Returns the stop. */
export function keepWarm(rehearse: () => void): () => void {
  const warm = () => {
    rehearse();
    collectYoungGeneration();
  };
  const first = setTimeout(warm, FIRST_MS).unref();
  const again = setInterval(warm, EVERY_MS).unref();
  return () => {
    clearTimeout(first);
    clearInterval(again);
  };
}

/**
 * Without --expose-gc (a V8 flag that would change V8's flag hash, so reject every code cache):
 * short-lived arrays just past what the young generation has left make V8 collect it.
 */
function collectYoungGeneration(): void {
  // Loaded here, not at start: node:v8 costs the start half a millisecond.
  const young = process.getBuiltinModule('node:v8').getHeapSpaceStatistics().find((s) => s.space_name === 'new_space');
  if (!young || young.space_used_size < young.space_available_size) return;
  let filler: unknown[] | undefined;
  for (let left = young.space_available_size + FILLER_BYTES; left > 0; left -= FILLER_BYTES) filler = new Array((FILLER_BYTES - 16) / 8);
  void filler;
}
