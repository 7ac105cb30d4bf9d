import { HEADERS, ROUTES, TokenSessionCreate } from '../../../protocol/index.js';
import { isOperator } from '../../access/index.js';
import { ApiError } from '../../errors.js';
import { secureCookies, serverOrigin, setTokenCookie } from '../../login/index.js';
import type { App } from '../app.js';
import type { ServerContext } from '../context.js';
import { empty, errors } from '../route-responses.js';

/**
 * The dashboard's sign-in with a pasted token (docs/protocol.md "The
 * dashboard"): the token goes into an HttpOnly cookie, so page scripts never
 * hold it, and the access layer reads it as it reads the session cookie.
 */
export function registerTokenSessionRoutes(app: App, ctx: ServerContext): void {
  const secure = (req: Parameters<typeof serverOrigin>[0]): boolean => secureCookies(serverOrigin(req, ctx.settings.publicUrl));

  app.post<{ Body: TokenSessionCreate }>(
    ROUTES.authTokenSession,
    {
      schema: {
        tags: ['sessions'],
        operationId: 'createTokenSession',
        summary: 'Sign the browser in with a token: an admin token, an organization token or a personal API key, kept in an HttpOnly cookie',
        // The body is the credential.
        security: [],
        body: TokenSessionCreate,
        response: { 204: empty('Signed in: the fleetplane_token cookie is set.'), ...errors([400, 401, 403]) },
      },
    },
    async (req, reply) => {
      // A login CSRF would sign a victim's browser in as the attacker: only this server's own page may ask.
      ctx.access.checkOrigin(req);
      const p = await ctx.access.authenticate(req.body.token);
      if (!isOperator(p)) {
        throw new ApiError('forbidden', 'the dashboard signs in with an admin token, an organization token or a personal API key; users of an identity provider sign in with it');
      }
      void reply.header(HEADERS.setCookie, setTokenCookie(req.body.token, secure(req)));
      return reply.status(204).send(null);
    },
  );

  app.delete(
    ROUTES.authTokenSession,
    {
      schema: {
        tags: ['sessions'],
        operationId: 'deleteTokenSession',
        summary: 'Sign the browser out: clears the fleetplane_token cookie (the token itself stays valid)',
        security: [],
        response: { 204: empty('Signed out.'), ...errors([403]) },
      },
    },
    async (req, reply) => {
      // Another site can't sign an operator out either.
      ctx.access.checkOrigin(req);
      void reply.header(HEADERS.setCookie, setTokenCookie('', secure(req)));
      return reply.status(204).send(null);
    },
  );
}
