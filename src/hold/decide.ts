// When the hold lets its Deployment go: the one rule, on what was last seen,
// with no clock or API of its own (test/hold/decide.unit.test.ts).

export type ReleaseReason = 'finalized' | 'timeout' | 'foreground' | 'orphan';

export const RELEASE_REASONS: readonly ReleaseReason[] = ['finalized', 'timeout', 'foreground', 'orphan'];

/** An object of a listed kind that is being deleted and carries finalizers other than drainguard's. */
export interface Finalizing {
  /** `plural.group/NAME` or `plural.group/NAMESPACE/NAME`. */
  readonly object: string;
  readonly finalizers: readonly string[];
}

export interface HoldState {
  /** The Deployment's finalizers; undefined while it was not seen deleting. */
  readonly deletingFinalizers?: readonly string[];
  /** When its deletion was first seen (epoch ms). */
  readonly deletingSeenAt?: number;
  /** The listed kinds' objects still finalizing, as last listed; undefined: not listed (yet), or a list failed. */
  readonly finalizing?: readonly Finalizing[];
  readonly now: number;
  readonly settleMs: number;
  readonly timeoutMs: number;
}

export type Decision =
  | { readonly hold: 'idle' } // not being deleted: nothing to look at
  | { readonly hold: 'settling'; readonly lookAt: number } // deleting, the custom resources' deletion may not have started yet
  | { readonly hold: 'waiting'; readonly until: number } // finalizers to wait for, or not known
  | { readonly release: ReleaseReason };

export function decide(s: HoldState): Decision {
  if (s.deletingFinalizers === undefined || s.deletingSeenAt === undefined) return { hold: 'idle' };
  // The garbage collector deletes the pods first (foreground) or lets them go (orphan): nothing to hold.
  if (s.deletingFinalizers.includes('foregroundDeletion')) return { release: 'foreground' };
  if (s.deletingFinalizers.includes('orphan')) return { release: 'orphan' };
  const until = s.deletingSeenAt + s.timeoutMs;
  if (s.now >= until) return { release: 'timeout' };
  const lookAt = s.deletingSeenAt + s.settleMs;
  if (s.now < lookAt) return { hold: 'settling', lookAt };
  if (s.finalizing !== undefined && s.finalizing.length === 0) return { release: 'finalized' };
  return { hold: 'waiting', until };
}
