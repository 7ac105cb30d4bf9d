/**
 * Every long-lived stream passes through the one stream owner
 * (src/server/streams/), so none escapes revocation, the byte bounds or
 * shutdown: no other file takes a connection out of its request.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));
const serverDir = join(root, 'src', 'server');

/** What takes a connection past its request: Fastify's hijack, node:http's hand-over, a WebSocket upgrade. */
const HAND_OVERS: readonly { name: string; pattern: RegExp }[] = [
  { name: 'reply.hijack()', pattern: /\.hijack\(/ },
  { name: 'ownConnection()', pattern: /\bownConnection\(/ },
  { name: 'WebSocketServer.handleUpgrade()', pattern: /\.handleUpgrade\(/ },
];

/** Code without its comments, so prose may name what code may not call. */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:])\/\/.*$/gm, '$1');
}

function handOversOutsideOwner(): string[] {
  const found: string[] = [];
  for (const f of readdirSync(serverDir, { recursive: true, encoding: 'utf8' })) {
    if (!f.endsWith('.ts') || f.startsWith(`streams${sep}`)) continue;
    const text = code(readFileSync(join(serverDir, f), 'utf8'));
    for (const h of HAND_OVERS) if (h.pattern.test(text)) found.push(`${relative(root, join(serverDir, f))}: ${h.name}`);
  }
  return found;
}

describe('the one stream owner', () => {
  it('is the only place that takes a connection past its request', () => {
    expect(handOversOutsideOwner()).toEqual([]);
  });

  it('the check finds a hand-over in code, not in comments', () => {
    expect(code('// reply.hijack() here\nconst a = 1;')).not.toMatch(HAND_OVERS[0]!.pattern);
    expect(code('reply.hijack();')).toMatch(HAND_OVERS[0]!.pattern);
    expect(code('wss.handleUpgrade(req, socket, head, cb); /* ownConnection( */')).toMatch(HAND_OVERS[2]!.pattern);
  });
});
