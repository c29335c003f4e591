// Preloaded (--import) when profiling the bundle with --cpu-prof: V8's
// sampler runs on SIGPROF, and drainguard's own handler for SIGPROF (which
// passes it on to the child) would take the signal from it, and on removal
// reset it to the default action, which ends the process.
for (const method of ['on', 'off', 'addListener', 'removeListener', 'once', 'prependListener'] as const) {
  const original = process[method] as (...args: unknown[]) => NodeJS.Process;
  (process as unknown as Record<string, unknown>)[method] = function (this: NodeJS.Process, event: unknown, ...rest: unknown[]) {
    return event === 'SIGPROF' ? this : original.call(this, event, ...rest);
  };
}
