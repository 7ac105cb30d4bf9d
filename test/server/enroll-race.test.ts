/**
 * Issue 12: a single-use registration key enrolls exactly one device however
 * many enrollments race for it. Twenty clients send it at once, each on its
 * own connection to a listening server; exactly one gets 201 and a device
 * token, the other nineteen 401 `unauthorized` (a used-up key is no longer a
 * valid credential, docs/protocol.md "Device"), and one device exists.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HEADERS, MEDIA, paths, type EnrolledDevice, type RegistrationKey } from '../../src/protocol/index.js';
import { startServer, type FleetServer } from '../../src/server/index.js';
import { createDatabase } from '../support/postgres-server.js';
import { backends, Harness, pgAdminUrl, uniqueName, wgKey } from './fixtures.js';

const RACERS = 20;
/** Keys raced for in turn: a race lost once by chance must not pass as a guard that holds. */
const ROUNDS = 5;

interface Answer {
  status: number;
  body: string;
}

/** POST on a connection of its own (no keep-alive pool: the requests arrive side by side). */
function post(base: string, path: string, token: string, body: unknown): Promise<Answer> {
  const payload = Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = request(
      new URL(path, base),
      {
        method: 'POST',
        agent: false,
        headers: { [HEADERS.authorization]: `Bearer ${token}`, [HEADERS.contentType]: MEDIA.json, 'content-length': payload.length },
      },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (c: Buffer) => parts.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

describe.each(backends())('enrollment race on $name', ({ name, available }) => {
  describe.runIf(available)('', () => {
    let server: FleetServer;
    let h: Harness;
    let base = '';
    beforeAll(async () => {
      const storage = name === 'pglite' ? { memory: true } : { databaseUrl: await createDatabase(pgAdminUrl()) };
      server = await startServer({ logLevel: 'silent', host: '127.0.0.1', port: 0, ...storage }, { listen: true });
      h = new Harness(server);
      base = server.url ?? '';
    });
    afterAll(async () => {
      await server.close();
    });

    it(`${RACERS} parallel enrollments with one single-use key: exactly 1 device enrolls, the others get 401 unauthorized`, async () => {
      const org = (await h.createOrg()).id;
      for (let round = 0; round < ROUNDS; round++) {
        const key = await h.createRegKey(org, { single_use: true });
        const answers = await Promise.all(
          Array.from({ length: RACERS }, (_, i) => post(base, paths.devices(org), key.key, { hostname: uniqueName(`racer-${round}-${i}`), public_key: wgKey() })),
        );
        const won = answers.filter((a) => a.status === 201);
        const lost = answers.filter((a) => a.status !== 201);
        expect(answers.map((a) => a.status).sort()).toEqual([201, ...new Array<number>(RACERS - 1).fill(401)]);
        for (const a of lost) expect((JSON.parse(a.body) as { error: { code: string } }).error.code).toBe('unauthorized');
        const device = JSON.parse(won[0]?.body ?? '{}') as EnrolledDevice;
        expect(device.device_token).toMatch(/\S/);

        // One device in the organization per key, and the key is used up.
        const devices = await h.ok<{ items: { id: string }[] }>(200, 'GET', paths.devices(org));
        expect(devices.items).toHaveLength(round + 1);
        expect(devices.items.map((d) => d.id)).toContain(device.id);
        const got = await h.ok<RegistrationKey>(200, 'GET', paths.registrationKey(org, key.id));
        expect(got.used).toBe(true);
        // Later enrollments with it are refused the same way.
        const late = await post(base, paths.devices(org), key.key, { hostname: uniqueName('late'), public_key: wgKey() });
        expect(late.status).toBe(401);
      }
    });
  });
});
