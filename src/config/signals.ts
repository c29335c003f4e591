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
