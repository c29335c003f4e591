// Signals by name and number, and the one table of which signals drainguard
// catches and what it does with each: the supervisor acts on it, the options
// and `drainguard check` judge a stop signal by it.

import { constants } from 'node:os';

const BY_NUMBER = new Map<number, NodeJS.Signals>();
for (const [name, number] of Object.entries(constants.signals)) {
  // SIGIOT and SIGPOLL are aliases; keep the first, conventional name.
  if (!BY_NUMBER.has(number)) BY_NUMBER.set(number, name as NodeJS.Signals);
}

/** Accepts `SIGTERM`, `TERM`, `term` or `15`; returns undefined for anything else. */
export function parseSignal(text: string): NodeJS.Signals | undefined {
  const input = text.trim();
  if (/^\d+$/.test(input)) return BY_NUMBER.get(Number(input));
  const name = input.toUpperCase();
  const full = name.startsWith('SIG') ? name : `SIG${name}`;
  return full in constants.signals ? (full as NodeJS.Signals) : undefined;
}

export function signalNumber(signal: NodeJS.Signals): number {
  return constants.signals[signal];
}

/** The conventional name of a signal (SIGIOT is SIGABRT, SIGPOLL is SIGIO), as the lists below have it. */
export function canonicalSignal(signal: NodeJS.Signals): NodeJS.Signals {
  return BY_NUMBER.get(signalNumber(signal)) ?? signal;
}

/** Always drain signals: the first starts the drain, the second cuts it short (spec.md). */
export const TERMINATING: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT'];

/** Job control from a terminal: the child is stopped with SIGSTOP, then drainguard stops itself. */
export const JOB_CONTROL: readonly NodeJS.Signals[] = ['SIGTSTP', 'SIGTTIN', 'SIGTTOU'];

/**
 * Passed to the child unchanged. Not here, besides SIGKILL, SIGSTOP, SIGCHLD
 * and the ones above: SIGSEGV, SIGBUS, SIGFPE and SIGILL (a handler would turn
 * a real fault of drainguard into an endless loop) and SIGPIPE (the kernel
 * raises it in drainguard itself when a protocol client vanishes mid-write).
 */
export const FORWARDED: readonly NodeJS.Signals[] = [
  'SIGHUP',
  'SIGQUIT',
  'SIGTRAP',
  'SIGABRT',
  'SIGUSR1',
  'SIGUSR2',
  'SIGALRM',
  'SIGSTKFLT',
  'SIGCONT',
  'SIGURG',
  'SIGXCPU',
  'SIGXFSZ',
  'SIGVTALRM',
  'SIGPROF',
  'SIGWINCH',
  'SIGIO',
  'SIGPWR',
  'SIGSYS',
];

/** Every signal drainguard catches: any of them can be made a drain signal (DRAINGUARD_DRAIN_SIGNALS). */
export const CATCHABLE: readonly NodeJS.Signals[] = [...TERMINATING, ...JOB_CONTROL, ...FORWARDED];

/**
 * What a container's stop signal (a Kubernetes signal name: SIGQUIT, SIGRTMIN+1)
 * does to drainguard when it is not one of its drain signals, in the words of a
 * message that says why that loses the drain; undefined for SIGTERM and SIGINT.
 */
export function withoutDrain(name: string, mode: 'wrap' | 'sidecar'): string | undefined {
  const known = parseSignal(name);
  const sig = known && canonicalSignal(known);
  const untilKill = 'until the SIGKILL at the end of the grace period';
  if (sig !== undefined && TERMINATING.includes(sig)) return undefined;
  if (sig === 'SIGKILL') return 'it cannot be caught: the kernel kills drainguard and the operator at once, with no drain and no release';
  if (sig === 'SIGSTOP') return `it cannot be caught: the kernel freezes drainguard ${untilKill}, with no drain and no release`;
  if (sig === 'SIGCHLD')
    return `drainguard ignores it, as its default action does: nothing stops ${untilKill}, with no drain and no release`;
  if (sig === undefined || !CATCHABLE.includes(sig))
    return 'drainguard does not catch it: its default action ends drainguard at once, with no drain and no release';
  if (mode === 'sidecar') return `a sidecar ignores it: drainguard runs on ${untilKill}, with no release`;
  if (JOB_CONTROL.includes(sig)) return `drainguard takes it as job control: it stops the operator and itself ${untilKill}`;
  if (sig === 'SIGCONT' || sig === 'SIGURG' || sig === 'SIGWINCH')
    return `drainguard only passes it on, and by default it stops no process: the operator runs on ${untilKill}`;
  return (
    'drainguard only passes it on: the operator gets it with no drain first ' +
    '(a Go operator dumps its goroutines at SIGQUIT and exits 2, its work in flight lost)'
  );
}
