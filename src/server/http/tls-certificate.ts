/**
 * The HTTPS certificate of `fleetplane serve` (`--tls-cert`, `--tls-key`),
 * replaceable while the server runs: certificates are renewed every few
 * weeks, and a restart would cut every watch stream and agent tunnel.
 */
import { readFile } from 'node:fs/promises';
import { createSecureContext, Server as TlsServer } from 'node:tls';
import type { Logger } from 'pino';

/** PEM certificate (chain) and private key, checked to belong together. */
export interface TlsPair {
  cert: Buffer;
  key: Buffer;
}

/** Where the pair is read from. */
export interface TlsFiles {
  certFile: string;
  keyFile: string;
}

/** A file can't be read, or the two don't make a usable certificate and key; the message names the file or setting. */
export class TlsFilesError extends Error {
  override readonly name = 'TlsFilesError';
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

async function readPem(path: string, flag: string): Promise<Buffer> {
  try {
    return await readFile(path);
  } catch (err) {
    throw new TlsFilesError(`--${flag} ${path}: ${message(err)}`, { cause: err });
  }
}

/**
 * Reads both files and checks them as Node will use them: a key that doesn't
 * match the certificate, or a file that isn't PEM, fails here rather than at
 * the first handshake.
 */
export async function readTlsPair(files: TlsFiles): Promise<TlsPair> {
  const cert = await readPem(files.certFile, 'tls-cert');
  const key = await readPem(files.keyFile, 'tls-key');
  try {
    createSecureContext({ cert, key });
  } catch (err) {
    throw new TlsFilesError(`--tls-cert ${files.certFile} and --tls-key ${files.keyFile} are not a usable certificate and key: ${message(err)}`, { cause: err });
  }
  return { cert, key };
}

/**
 * Serves `files` on the TLS server. `reload()` reads them again and, when
 * they are usable, gives new handshakes the new certificate; connections
 * already open keep theirs (nothing is dropped). When they are not usable,
 * the failure is logged and the certificate in use stays.
 */
export class ReloadableCertificate {
  readonly #files: TlsFiles;
  readonly #server: TlsServer;
  readonly #logger: Logger;

  constructor(files: TlsFiles, server: unknown, logger: Logger) {
    // The App type names the plain HTTP server; with --tls-cert Fastify built a TLS one (node:http2's, HTTP/1.1 allowed).
    if (!(server instanceof TlsServer)) throw new TypeError('the server was not built for TLS');
    this.#files = files;
    this.#server = server;
    this.#logger = logger;
  }

  /** True when the new certificate is in use; false (logged, old one kept) otherwise. */
  async reload(): Promise<boolean> {
    let pair: TlsPair;
    try {
      pair = await readTlsPair(this.#files);
    } catch (err) {
      this.#logger.error({ error: message(err) }, 'TLS certificate reload failed; still serving the previous certificate');
      return false;
    }
    this.#server.setSecureContext(pair);
    this.#logger.info({ cert: this.#files.certFile }, 'TLS certificate reloaded');
    return true;
  }
}
