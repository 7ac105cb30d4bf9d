/**
 * What an open connection keeps alive (issue 11: server memory per agent).
 * A tunnel lives as long as its agent is connected, so anything its setup
 * leaves reachable is paid once per agent for hours: the upgrade request
 * (its headers, raw headers and parser state) must be garbage once the
 * tunnel is open, and no request (a watch stream is one) carries a logger
 * of its own.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type FleetServer } from '../../src/server/index.js';
import { Fleet, startAgent, type TestAgent } from './support.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

describe('memory held by open connections', () => {
  let server: FleetServer;
  let fleet: Fleet;
  const agents: TestAgent[] = [];

  beforeAll(async () => {
    server = await startServer({ memory: true, logLevel: 'silent', host: '127.0.0.1', port: 0, adminToken: 'admin-secret' });
    fleet = await Fleet.create(server.url ?? '', 'admin-secret');
  });

  afterAll(async () => {
    for (const a of agents) await a.stop();
    await server?.close();
  });

  it('an open tunnel keeps nothing of its upgrade request', async () => {
    const upgrades: WeakRef<IncomingMessage>[] = [];
    const remember = (req: IncomingMessage): void => {
      upgrades.push(new WeakRef(req));
    };
    server.app.server.prependListener('upgrade', remember);
    try {
      for (let i = 0; i < 3; i++) {
        const device = await fleet.enroll();
        const agent = startAgent(server.url ?? '', device.token, {});
        agents.push(agent);
        await agent.client.whenConnected();
      }
    } finally {
      server.app.server.off('upgrade', remember);
    }
    expect(upgrades).toHaveLength(3);
    expect(server.gateway.tunnels.size).toBe(3);
    // A WeakRef read keeps its target alive until the end of the job that read it: collect in a later one.
    const alive = async (): Promise<number> => {
      await new Promise((r) => setTimeout(r, 10));
      gc();
      await new Promise((r) => setTimeout(r, 10));
      return upgrades.filter((r) => r.deref() !== undefined).length;
    };
    for (let round = 0; round < 5 && (await alive()) > 0; round++);
    expect(upgrades.filter((r) => r.deref() !== undefined)).toHaveLength(0);
  });

  it('requests share the server logger instead of each holding a child of its own', () => {
    const app = server.app;
    const forRequest = app.childLoggerFactory.call(app, app.log, { reqId: 'req-1' }, {}, {} as IncomingMessage);
    expect(forRequest).toBe(app.log);
  });
});
