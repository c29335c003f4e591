// A free loopback port, for servers that cannot report the port 0 became
// (controller-runtime's metrics server logs the address it was given). The
// port may in principle be taken again before the server binds it.

import { createServer } from 'node:net';

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}
