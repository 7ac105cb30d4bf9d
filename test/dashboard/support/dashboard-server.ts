import { afterAll, beforeAll } from 'vitest';
import { startServer, type FleetServer } from '../../../src/server/index.js';
import { ensureDashboardBuilt, launchBrowser, type TestBrowser } from './browser.js';

/**
 * For one describe block: the dashboard built, a server in process (memory
 * storage, on loopback, `adminToken` its admin token; over TLS with `tls`'s
 * certificate) and Chromium, both closed after the block. Read the getter inside tests (`server` for its
 * database, e.g. to make users and sessions).
 */
export function useDashboardServer(
  adminToken: string,
  tls?: () => { certFile: string; keyFile: string },
): () => { url: string; browser: TestBrowser; server: FleetServer } {
  let server: FleetServer | undefined;
  let browser: TestBrowser | undefined;
  beforeAll(async () => {
    ensureDashboardBuilt();
    const files = tls?.();
    const https = files ? { tlsCert: files.certFile, tlsKey: files.keyFile } : {};
    server = await startServer({ memory: true, host: '127.0.0.1', port: 0, logLevel: 'silent', adminToken, ...https }, { listen: true });
    browser = await launchBrowser();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });
  return () => {
    if (!server?.url || !browser) throw new Error('the dashboard server is not started');
    return { url: server.url, browser, server };
  };
}
