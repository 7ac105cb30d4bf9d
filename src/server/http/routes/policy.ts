import { Type } from '@sinclair/typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { HEADERS, MEDIA, OrgParams, PolicyApplyResult, PolicyReleaseResult, ROUTES } from '../../../protocol/index.js';
import type { App } from '../app.js';
import type { ServerContext } from '../context.js';
import { utf8Body } from '../json-body.js';
import { ifMatchOf } from './shared.js';
import { IfMatchHeaders, RESPONSE_HEADERS, errors, json } from '../route-responses.js';

const tags = ['policy'];

/** What a document may be sent as: YAML (RFC 9512), its older name, or plain text. */
const TEXT_MEDIA = [MEDIA.yaml, 'application/x-yaml', 'text/yaml', 'text/plain'];

const PolicyQuery = Type.Object({ dry_run: Type.Optional(Type.Boolean()) }, { additionalProperties: false });

const PolicyHeaders = {
  [HEADERS.etag]: { type: 'string' as const, description: '`"<16 hex>"`: the document\'s ETag; send it back in If-Match.' },
  [HEADERS.policyState]: { type: 'string' as const, description: '`managed`: a document owns the organization\'s access; `unmanaged`: the text was generated from its objects.' },
};

export function registerPolicyRoutes(app: App, ctx: ServerContext): void {
  app.get(
    ROUTES.policy,
    {
      schema: {
        tags,
        operationId: 'getPolicy',
        summary: "The organization's policy document, exactly as applied (or generated from its objects)",
        params: OrgParams,
        response: {
          200: { description: 'The document (YAML).', headers: PolicyHeaders, content: { [MEDIA.yaml]: { schema: Type.String() } } },
          ...errors([400, 401, 403, 404]),
        },
      },
    },
    async (req, reply) => {
      const policy = await ctx.store.policy.get(req.params.org);
      return reply
        .header(HEADERS.etag, policy.etag)
        .header(HEADERS.policyState, policy.managed ? 'managed' : 'unmanaged')
        .type(`${MEDIA.yaml}; charset=utf-8`)
        .send(policy.text);
    },
  );

  // The document is text, not JSON: its own parser, in this scope only.
  void app.register(async (plugin) => {
    const scoped = plugin.withTypeProvider<TypeBoxTypeProvider>();
    scoped.addContentTypeParser(TEXT_MEDIA, { parseAs: 'buffer' }, (_req, raw: Buffer, done) => {
      try {
        done(null, utf8Body(raw));
      } catch (err) {
        done(err as Error);
      }
    });
    scoped.put(
      ROUTES.policy,
      {
        schema: {
          tags,
          operationId: 'applyPolicy',
          summary: 'Apply a policy document as one revision (tests first); `dry_run` only checks it and says what would change',
          params: OrgParams,
          querystring: PolicyQuery,
          headers: IfMatchHeaders,
          body: Type.String({ description: 'The document (YAML).' }),
          response: {
            200: json('Applied (or checked): what changed, the ETag and the revision.', PolicyApplyResult, RESPONSE_HEADERS.policyEtag),
            ...errors([400, 401, 403, 404, 412, 413, 422], {
              400: '`policy_invalid`: the document does not parse or validate; `details` has its path, line and column',
              412: 'If-Match is not the current document\'s ETag',
              422: '`policy_test_failed`: `details.failures` names each failing test',
            }),
          },
        },
      },
      async (req, reply) => {
        const result = await ctx.store.policy.apply(req.params.org, req.body, { ifMatch: ifMatchOf(req), dryRun: req.query.dry_run === true });
        return reply.header(HEADERS.etag, result.etag).send(result);
      },
    );
  });

  app.delete(
    ROUTES.policy,
    {
      schema: {
        tags,
        operationId: 'releasePolicy',
        summary: 'Hand the organization\'s access back to its objects (the same rules, editable again)',
        params: OrgParams,
        response: { 200: json('Released: no document manages the organization.', PolicyReleaseResult), ...errors([400, 401, 403, 404]) },
      },
    },
    async (req) => ctx.store.policy.release(req.params.org),
  );
}
