// The control plane's PKI, made fresh at every start with the openssl CLI: one
// CA that signs the API server's serving certificate and every client
// certificate, and the RSA key pair that signs service-account tokens. The
// same two steps make the nodes' certificates and the tests' own servers'.

import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface Pki {
  readonly dir: string;
  readonly caCert: string;
  readonly caKey: string;
  /** Serving certificate for 127.0.0.1, localhost and the in-cluster names; the fault proxy serves it too. */
  readonly servingCert: string;
  readonly servingKey: string;
  readonly adminCert: string;
  readonly adminKey: string;
  readonly controllerManagerCert: string;
  readonly controllerManagerKey: string;
  readonly serviceAccountKey: string;
  readonly serviceAccountPub: string;
}

const SERVING_SANS =
  'IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local';

function openssl(dir: string, args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
}

/** ECDSA P-256 keys: quick to make. */
const NEW_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

/** A self-signed certificate `name`.crt and its key `name`.key in `dir`: a CA, or with `san` a server's own. */
export function selfSigned(dir: string, name: string, subject: string, san?: string): { cert: string; key: string } {
  const extension = san ? ['-addext', `subjectAltName=${san}`] : [];
  openssl(dir, ['req', '-x509', ...NEW_KEY, '-keyout', `${name}.key`, '-out', `${name}.crt`, '-days', '2', '-subj', subject, ...extension]);
  return { cert: join(dir, `${name}.crt`), key: join(dir, `${name}.key`) };
}

/** A key `name`.key and a certificate `name`.crt in `dir` signed by `ca` (by default the CA makePki makes in `dir`). */
export function signed(dir: string, name: string, subject: string, extensions: string, ca = { cert: 'ca.crt', key: 'ca.key' }): void {
  openssl(dir, ['req', '-new', ...NEW_KEY, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subject]);
  writeFileSync(join(dir, `${name}.ext`), extensions);
  // The serial file in `dir`, not beside a CA other callers share.
  const serial = ['-CAcreateserial', '-CAserial', 'ca.srl'];
  openssl(dir, [
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    ca.cert,
    '-CAkey',
    ca.key,
    ...serial,
    '-days',
    '2',
    '-out',
    `${name}.crt`,
    '-extfile',
    `${name}.ext`,
  ]);
}

export function makePki(dir: string): Pki {
  selfSigned(dir, 'ca', '/CN=drainguard-test-ca');
  signed(dir, 'serving', '/CN=kube-apiserver', `subjectAltName=${SERVING_SANS}\nextendedKeyUsage=serverAuth\n`);
  const client = 'extendedKeyUsage=clientAuth\n';
  signed(dir, 'admin', '/O=system:masters/CN=admin', client);
  signed(dir, 'controller-manager', '/CN=system:kube-controller-manager', client);
  openssl(dir, ['genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', 'sa.key']);
  openssl(dir, ['pkey', '-in', 'sa.key', '-pubout', '-out', 'sa.pub']);
  return pkiIn(dir);
}

/** Where makePki puts each file of the PKI in `dir`. */
export function pkiIn(dir: string): Pki {
  const p = (f: string) => join(dir, f);
  return {
    dir,
    caCert: p('ca.crt'),
    caKey: p('ca.key'),
    servingCert: p('serving.crt'),
    servingKey: p('serving.key'),
    adminCert: p('admin.crt'),
    adminKey: p('admin.key'),
    controllerManagerCert: p('controller-manager.crt'),
    controllerManagerKey: p('controller-manager.key'),
    serviceAccountKey: p('sa.key'),
    serviceAccountPub: p('sa.pub'),
  };
}
