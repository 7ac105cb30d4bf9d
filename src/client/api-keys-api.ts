import { USER_SELF, paths, type ApiKey, type ApiKeyCreate, type CreatedApiKey } from '../protocol/wire.js';
import type { CallOptions } from './collection.js';
import { isRecord, listOf } from './guards.js';
import type { HttpTransport } from './http-transport.js';

const isApiKey = (v: unknown): v is ApiKey => isRecord(v) && typeof v['id'] === 'string' && Array.isArray(v['organizations']);
const isCreated = (v: unknown): v is CreatedApiKey => isRecord(v) && typeof v['key'] === 'string' && isApiKey(v);

/**
 * `/api/users/{user}/api_keys[/{id}]` (docs/protocol.md "Personal API keys").
 * `user` defaults to `me`, the caller. The key is returned once, by `create`,
 * and only to a session (an API key creating one gets ForbiddenError).
 */
export class ApiKeysApi {
  constructor(private readonly transport: HttpTransport) {}

  create(body: ApiKeyCreate, opts: CallOptions & { user?: string } = {}): Promise<CreatedApiKey> {
    return this.transport.json(
      { method: 'POST', path: paths.userApiKeys(opts.user ?? USER_SELF), body, signal: opts.signal },
      isCreated,
      'the created API key',
    );
  }

  async list(opts: CallOptions & { user?: string } = {}): Promise<ApiKey[]> {
    const body = await this.transport.json(
      { method: 'GET', path: paths.userApiKeys(opts.user ?? USER_SELF), signal: opts.signal },
      listOf(isApiKey),
      'a list of API keys',
    );
    return body.items;
  }

  async revoke(id: string, opts: CallOptions & { user?: string } = {}): Promise<void> {
    await this.transport.empty({ method: 'DELETE', path: paths.userApiKey(opts.user ?? USER_SELF, id), signal: opts.signal });
  }
}
