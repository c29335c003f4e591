// Whether a metrics URL's host is this pod's loopback, where controller-runtime's
// self-signed certificate is accepted. Decided by the literal only: a name that
// merely starts with "127." (127.attacker.example) is anyone's, and would get
// the pod's ServiceAccount token with certificate checks off.

import { isIPv4 } from 'node:net';

/** A URL's hostname (IPv6 in brackets, as URL gives it): 127.0.0.0/8, ::1 or localhost. */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  return host === 'localhost' || host === '::1' || (isIPv4(host) && host.startsWith('127.'));
}
