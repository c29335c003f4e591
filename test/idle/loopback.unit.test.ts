// Which metrics hosts count as loopback (certificate checks off for controller-runtime's
// self-signed certificate): IP literals of 127.0.0.0/8 and ::1, and localhost; names never.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { isLoopbackHost } from '../../src/idle/loopback.ts';

const host = (url: string) => new URL(url).hostname;

test('loopback literals, as URL normalises them', () => {
  for (const url of [
    'https://127.0.0.1:8443/metrics',
    'https://127.1.2.3/',
    'https://127.1/',
    'https://0x7f000001/',
    'https://[::1]:8443/',
    'https://[0:0:0:0:0:0:0:1]/',
    'https://localhost:8443/',
    'https://LOCALHOST/',
  ]) {
    assert.ok(isLoopbackHost(host(url)), url);
  }
});

test('names that look like loopback, and other addresses, are not', () => {
  for (const url of [
    'https://127.attacker.example/',
    'https://127.0.0.1.attacker.example/',
    'https://127.0.0.1.nip.io/',
    'https://localhost.attacker.example/',
    'https://attacker.localhost.example/',
    'https://10.0.0.1/',
    'https://0.0.0.0/',
    'https://[::2]/',
    'https://[::ffff:10.0.0.1]/',
    'https://128.0.0.1/',
  ]) {
    assert.not.ok(isLoopbackHost(host(url)), url);
  }
});

test.run();
