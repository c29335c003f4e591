// Every wait in a test has a deadline (uvu has none of its own), and is told
// to the runner while it lasts (progress.ts), so a file killed past its time
// limit is reported with what it was waiting for.

import { waitStarted } from './progress.ts';

export async function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const done = waitStarted(what, ms);
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
    done();
  }
}

/**
 * Resolves with the first defined value of `predicate`, checked now and after
 * every event `subscribe` reports; rejects when it throws or after `ms`.
 */
export function until<T>(
  subscribe: (check: () => void) => () => void,
  predicate: () => T | undefined,
  ms: number,
  what: string,
): Promise<T> {
  let unsubscribe = (): void => {};
  const found = new Promise<T>((resolve, reject) => {
    const check = () => {
      try {
        const value = predicate();
        if (value !== undefined) {
          unsubscribe();
          resolve(value);
        }
      } catch (err) {
        unsubscribe();
        reject(err);
      }
    };
    unsubscribe = subscribe(check);
    check();
  });
  return within(ms, what, found).finally(() => unsubscribe());
}
