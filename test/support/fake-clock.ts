// A clock the test moves itself, for the timing rules of the stop, the guard
// and the hold: nothing waits on real time, and a rule about seconds is
// checked in microseconds.

import { type Clock, sleepOn } from '../../src/clock.ts';

interface Timer {
  readonly at: number;
  readonly seq: number;
  readonly fn: () => void;
}

/** Lets promise callbacks run (those the code under test chained) before the clock moves on. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise(setImmediate);
}

export class FakeClock implements Clock {
  #now: number;
  #seq = 0;
  #timers: Timer[] = [];

  constructor(start = Date.UTC(2026, 0, 1)) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  after(ms: number, fn: () => void): () => void {
    const timer = { at: this.#now + Math.max(0, ms), seq: this.#seq++, fn };
    this.#timers.push(timer);
    return () => {
      this.#timers = this.#timers.filter((t) => t !== timer);
    };
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return sleepOn(this, ms, signal);
  }

  /** When the next timer falls due, if any. */
  get nextAt(): number | undefined {
    return this.#timers.reduce<number | undefined>((min, t) => (min === undefined || t.at < min ? t.at : min), undefined);
  }

  /** Moves time on to the next timer due, `times` times over: a backoff's sleeps end one by one. */
  async step(times: number): Promise<void> {
    for (let i = 0; i < times; i++) {
      const at = this.nextAt;
      if (at === undefined) throw new Error(`step ${i + 1} of ${times}: no timer is set`);
      await this.advance(at - this.#now);
    }
  }

  /** Moves time on by `ms`, running each timer that falls due in order, and what it set off, before the next. */
  async advance(ms: number): Promise<void> {
    const until = this.#now + ms;
    await settle();
    for (;;) {
      const due = this.#timers.filter((t) => t.at <= until).sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
      if (!due) break;
      this.#timers = this.#timers.filter((t) => t !== due);
      this.#now = due.at;
      due.fn();
      await settle();
    }
    this.#now = until;
    await settle();
  }
}
