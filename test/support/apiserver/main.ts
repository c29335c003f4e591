// The stand-in control plane as a process of its own, as kube-apiserver is:
// `node main.ts PKI_DIR [PORT]` serves on 127.0.0.1 (a free port unless given),
// prints `ready PORT`, and takes commands on stdin, one a line, each answered
// `ok COMMAND`: stop-apiserver, start-apiserver, stop-controller-manager,
// start-controller-manager. It exits when its stdin closes.

import { createInterface } from 'node:readline';
import { type Pki, pkiIn } from '../cluster/pki.ts';
import { StandIn } from './standin.ts';

const [dir, port] = process.argv.slice(2);
if (!dir) {
  process.stderr.write('usage: node main.ts PKI_DIR [PORT]\n');
  process.exit(2);
}
const pki: Pki = pkiIn(dir);

const standIn = new StandIn({ pki });
await standIn.startApiServer(Number(port ?? 0));
standIn.controllerManager.start();

const commands: Record<string, () => Promise<void> | void> = {
  'stop-apiserver': () => standIn.stopApiServer(),
  'start-apiserver': () => standIn.startApiServer(),
  'stop-controller-manager': () => standIn.controllerManager.stop(),
  'start-controller-manager': () => standIn.controllerManager.start(),
};

const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  const command = line.trim();
  const run = commands[command];
  if (!run) return void process.stdout.write(`unknown ${command}\n`);
  void Promise.resolve(run()).then(
    () => process.stdout.write(`ok ${command}\n`),
    (err: Error) => process.stdout.write(`failed ${command}: ${err.message}\n`),
  );
});
lines.on('close', () => void standIn.close().finally(() => process.exit(0)));
process.on('SIGTERM', () => void standIn.close().finally(() => process.exit(0)));
process.stdout.write(`ready ${standIn.port}\n`);
