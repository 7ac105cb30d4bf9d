/**
 * The agent trusts nothing it is sent (issue 36): watch events altered on
 * their way (a real server on 127.0.0.1, embedded PGlite, render dataplane,
 * a fetch that rewrites lines of the watch stream) with the injections of
 * the finding. The agent keeps its rendered files as they were, reports
 * the rejected objects in its status (locally and to the server, as
 * `apply_error`) and in its log, and applies valid changes again once the
 * server sends them.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { NFTABLES_CONF_FILE, WIREGUARD_CONF_FILE, generateKeyPair } from '../../src/agent/dataplane/index.js';
import type { FetchLike } from '../../src/client/index.js';
import { agentOptions, orgWithKey, runAgent, until, useAgentServer } from './support/harness.js';

const env = useAgentServer('fp-invalid-');

/** A fetch that passes every line of a watch stream through `tamper`. */
function tamperingFetch(): { fetch: FetchLike; tamper: (rewrite: ((line: string) => string) | undefined) => void } {
  let rewrite: ((line: string) => string) | undefined;
  const fetchLike: FetchLike = async (input, init) => {
    const res = await fetch(input, init);
    if (init.method !== 'POST' || !input.endsWith('/events') || !res.body) return res;
    const decoder = new TextDecoder();
    const encoder = new TextEncoder();
    let partial = '';
    const body = res.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          partial += decoder.decode(chunk, { stream: true });
          const lines = partial.split('\n');
          partial = lines.pop() ?? '';
          for (const line of lines) controller.enqueue(encoder.encode(`${rewrite ? rewrite(line) : line}\n`));
        },
      }),
    );
    return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
  return { fetch: fetchLike, tamper: (r) => (rewrite = r) };
}

/** Log lines (pino JSON) of the agent. */
function logLines(): { logger: pino.Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const l of chunk.toString().split('\n')) if (l.trim() !== '') lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level: 'info' }, stream), lines };
}

describe('objects the server sends that fail the protocol schemas', () => {
  it('are not applied: the rendered files stay, the status and the log say what was rejected, valid changes apply again', async () => {
    const { org, key } = await orgWithKey(env.admin, 'invalid');
    const stateDir = await env.stateDir();
    const { fetch: tampering, tamper } = tamperingFetch();
    const log = logLines();
    const a = await runAgent(agentOptions({ server: env.url, org, registrationKey: key, stateDir, stun: false, relay: false }), { fetch: tampering, logger: log.logger });
    const files = async () => ({
      wireguard: await readFile(join(stateDir, WIREGUARD_CONF_FILE), 'utf8'),
      nftables: await readFile(join(stateDir, NFTABLES_CONF_FILE), 'utf8'),
    });
    const peer = await env.admin.devices.create(org, { hostname: 'peer', public_key: generateKeyPair().publicKey });
    await until(async () => (await files()).wireguard.includes(peer.public_key), 'the peer to be rendered');
    const group = await env.admin.securityGroups.create(org, { inbound_rules: [{ ip_protocol: 'tcp', from_port: 22, to_port: 22, ip_ranges: [] }] });
    await env.admin.devices.update(org, a.deviceId, { security_group_id: group.id });
    await until(async () => (await files()).nftables.includes('tcp dport 22 accept'), 'the group to be rendered');
    const before = await files();
    const rejected = async (kind: string) => (await a.agent.status()).rejected.find((r) => r.kind === kind);

    // network.mtu "1420\nPostUp = ..." into MTU =.
    tamper((line) => line.replace('"mtu":1400', '"mtu":"1420\\nPostUp = touch /tmp/pwned"'));
    await env.admin.organizations.update(org, { network: { mtu: 1400 } });
    expect(await until(() => rejected('organization'), 'the organization to be rejected')).toMatchObject({ kept_previous: true, problem: '/network/mtu must be integer' });

    // Ports of 70000 and 1.5 into dport.
    tamper((line) => line.replace('"from_port":2222', '"from_port":1.5').replace('"to_port":2222', '"to_port":70000'));
    await env.admin.securityGroups.update(org, group.id, { inbound_rules: [{ ip_protocol: 'tcp', from_port: 2222, to_port: 2222, ip_ranges: [] }] });
    expect(await until(() => rejected('security-group'), 'the group to be rejected')).toMatchObject({ id: group.id, kept_previous: true });

    expect(await files()).toEqual(before);
    const status = await a.agent.status();
    expect(status.apply_error).toMatch(/^rejected 2 objects that do not match the protocol's schemas/);
    expect(status.apply_error).toContain(`organization ${org}`);
    const reported = await until(async () => (await env.admin.devices.get(org, a.deviceId)).status.apply_error, 'the server to have the error');
    expect(reported).toBe(status.apply_error);
    expect(log.lines.some((l) => l['level'] === 50 && Array.isArray(l['rejected']) && l['rejected'].length > 0)).toBe(true);

    // Valid versions of both: applied, and the error is gone.
    tamper(undefined);
    await env.admin.organizations.update(org, { network: { mtu: 1380 } });
    await env.admin.securityGroups.update(org, group.id, { inbound_rules: [{ ip_protocol: 'tcp', from_port: 2223, to_port: 2223, ip_ranges: [] }] });
    await until(async () => (await a.agent.status()).apply_error === null, 'the error to clear');
    expect((await files()).wireguard).toContain('MTU = 1380');
    expect((await files()).nftables).toContain('tcp dport 2223 accept');
    const valid = await files();

    // A device whose id holds a line break, into a comment of wireguard.conf: left out.
    const intruder = generateKeyPair().publicKey;
    tamper((line) => (line.includes(intruder) ? line.replace(/"id":"([0-9a-f-]{36})"/, '"id":"$1\\nPostUp = touch /tmp/pwned"') : line));
    await env.admin.devices.create(org, { hostname: 'intruder', public_key: intruder });
    expect(await until(() => rejected('device'), 'the device to be rejected')).toMatchObject({ kept_previous: false, problem: '/id must match format "uuid"' });
    expect(await files()).toEqual(valid);
    expect((await a.agent.status()).apply_error).toContain('?PostUp = touch /tmp/pwned');
    await a.stop();
  }, 60_000);
});
