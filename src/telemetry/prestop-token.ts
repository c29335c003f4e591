// The token that guards the httpGet preStop route. The kubelet calls the pod
// IP, which anyone in the cluster can reach: only a request that carries the
// token may start a drain.

/** The request header that carries the token. */
export const TOKEN_HEADER = 'X-Drainguard-Token';

/**
 * Returns a check of a presented token against the one `expected` returns
 * (it may change: a rotated Secret), in constant time: both are hashed
 * first, so neither the content nor the length leaks through timing.
 */
export function tokenCheck(expected: () => string): (presented: string) => boolean {
  // Loaded here, not at the top: node:crypto adds several ms to every command's start, and only this route needs it.
  const { createHash, timingSafeEqual } = process.getBuiltinModule('node:crypto');
  const digest = (s: string) => createHash('sha256').update(s).digest();
  let want = { token: '', hash: digest('') };
  return (presented) => {
    const token = expected();
    if (token !== want.token) want = { token, hash: digest(token) };
    return timingSafeEqual(digest(presented), want.hash);
  };
}
