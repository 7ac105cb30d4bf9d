/**
 * A private CA made with `openssl` for TLS tests: a self-signed root and
 * server certificates it signs for 127.0.0.1 and localhost. Everything lives
 * in the given directory; nothing touches the system's trust store.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes, X509Certificate } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface TestCa {
  dir: string;
  certFile: string;
  keyFile: string;
  /** The root certificate (PEM): what clients trust. */
  pem: string;
}

export interface ServerCert {
  certFile: string;
  keyFile: string;
  cert: string;
  key: string;
  /** SHA-256 fingerprint, as `getPeerCertificate().fingerprint256` shows it. */
  fingerprint256: string;
}

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];

export function makeTestCa(dir: string): TestCa {
  openssl(
    ['req', '-x509', ...EC, '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=fleetplane test CA',
      '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign'],
    dir,
  );
  return { dir, certFile: join(dir, 'ca.crt'), keyFile: join(dir, 'ca.key'), pem: readFileSync(join(dir, 'ca.crt'), 'utf8') };
}

/** A server certificate for 127.0.0.1 and localhost, signed by `ca`, written as `<name>.crt` and `<name>.key`. */
export function issueServerCert(ca: TestCa, name: string): ServerCert {
  const ext = join(ca.dir, `${name}.ext`);
  writeFileSync(ext, 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n');
  openssl(['req', ...EC, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`], ca.dir);
  openssl(
    ['x509', '-req', '-in', `${name}.csr`, '-CA', ca.certFile, '-CAkey', ca.keyFile, '-set_serial', `0x${randomBytes(8).toString('hex')}`,
      '-days', '2', '-extfile', ext, '-out', `${name}.crt`],
    ca.dir,
  );
  const cert = readFileSync(join(ca.dir, `${name}.crt`), 'utf8');
  return {
    certFile: join(ca.dir, `${name}.crt`),
    keyFile: join(ca.dir, `${name}.key`),
    cert,
    key: readFileSync(join(ca.dir, `${name}.key`), 'utf8'),
    fingerprint256: new X509Certificate(cert).fingerprint256,
  };
}
