// The control plane's PKI, made fresh at every start with the openssl CLI: one
// CA that signs the API server's serving certificate and every client
// certificate, and the RSA key pair that signs service-account tokens.

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

/** A key and a certificate signed by the CA; ECDSA P-256, quick to make. */
function signed(dir: string, name: string, subject: string, extensions: string): void {
  openssl(dir, [
    'req',
    '-new',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.csr`,
    '-subj',
    subject,
  ]);
  writeFileSync(join(dir, `${name}.ext`), extensions);
  openssl(dir, [
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-days',
    '2',
    '-out',
    `${name}.crt`,
    '-extfile',
    `${name}.ext`,
  ]);
}

export function makePki(dir: string): Pki {
  openssl(dir, [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
    '-days',
    '2',
    '-subj',
    '/CN=drainguard-test-ca',
  ]);
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
