// The Pod's deletion, read at the termination and again while the stop goes
// on: a second, shorter delete moves the kubelet's SIGKILL with no signal of
// its own, and the drain, the stop and the release must end in time for it.
// Deadlines adopts what a read finds; this only reads, one read at a time.

import { type Clock, within } from '../clock.ts';
import type { PodDeletion } from '../kube/pod.ts';
import { DELETION_POLL_MS, DELETION_READ_MS, type DeletionReading } from './shutdown.ts';

export interface DeletionReaderOptions {
  /** The Pod's deletion, within `timeoutMs`; undefined: nothing to read (outside a pod). */
  readonly read?: (timeoutMs: number) => Promise<PodDeletion>;
  readonly clock: Clock;
  /** Takes a reading (Deadlines.adoptDeletion); returns whether the kubelet's SIGKILL moved. */
  readonly adopt: (reading: DeletionReading) => boolean;
  /** Called when a reading moved the SIGKILL (the drain reads its deadline again). */
  readonly onMoved: () => void;
}

export class DeletionReader {
  readonly #o: DeletionReaderOptions;
  /** The read under way. */
  #reading?: Promise<void>;

  constructor(options: DeletionReaderOptions) {
    this.#o = options;
  }

  /**
   * Reads the Pod's deletion (joining a read under way), within DELETION_READ_MS
   * on the clock. Without an answer in time, the deadlines stay as they are.
   */
  read(): Promise<void> {
    const { read, clock, adopt, onMoved } = this.#o;
    if (!read) return Promise.resolve();
    return (this.#reading ??= (async () => {
      let reading: DeletionReading = { state: 'unknown', error: `no answer within ${DELETION_READ_MS} ms` };
      const answer = read(DELETION_READ_MS).then(
        (r) => void (reading = r),
        (error: unknown) => void (reading = { state: 'unknown', error }),
      );
      await within(clock, answer, DELETION_READ_MS);
      if (adopt(reading)) onMoved();
    })().finally(() => (this.#reading = undefined)));
  }

  /** A read, waited for at most `ms` (it goes on, and a later read joins it). */
  async readWithin(ms: number): Promise<void> {
    await within(this.#o.clock, this.read(), ms);
  }

  /** Reads again every DELETION_POLL_MS (while the drain runs); returns what ends the reads. */
  poll(): () => void {
    if (!this.#o.read) return () => {};
    let polling = true;
    let cancel = (): void => {};
    const next = (): void => {
      if (polling) cancel = this.#o.clock.after(DELETION_POLL_MS, () => void this.read().then(next));
    };
    next();
    return () => {
      polling = false;
      cancel();
    };
  }
}
