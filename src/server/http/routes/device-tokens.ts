import {
  DEVICE_TOKEN_OVERLAP_SECONDS,
  DeviceTokenExpiryList,
  DeviceTokenExpiryQuery,
  DeviceTokenRenewal,
  OrgIdParams,
  OrgParams,
  ROUTES,
} from '../../../protocol/index.js';
import type { App } from '../app.js';
import type { ServerContext } from '../context.js';
import { empty, errors, json } from '../route-responses.js';

const tags = ['devices'];
const DEFAULT_LIMIT = 1000;

/** Device tokens over time: a device renews its own; admins read when each device's expires. */
export function registerDeviceTokenRoutes(app: App, ctx: ServerContext): void {
  app.post(
    ROUTES.deviceToken,
    {
      schema: {
        tags,
        operationId: 'renewDeviceToken',
        summary: "Renew the device's own token (device token only): a new token, shown once; the old one stays valid a few minutes more",
        params: OrgIdParams,
        response: {
          201: json('The new device token (shown once) and its expiry.', DeviceTokenRenewal),
          ...errors([400, 401, 403, 404, 429], { 429: 'The device holds as many valid tokens as it may; retry after Retry-After' }),
        },
      },
    },
    async (req, reply) => {
      const { org, id } = req.params;
      const renewed = await ctx.store.devices.renewToken(org, id, ctx.settings.deviceTokenTtl, DEVICE_TOKEN_OVERLAP_SECONDS);
      const body: DeviceTokenRenewal = { device_token: renewed.device_token, expires_at: renewed.expires_at, issued_at: renewed.issued_at };
      return reply.status(201).send(body);
    },
  );

  app.delete(
    ROUTES.deviceToken,
    {
      schema: {
        tags,
        operationId: 'expireDeviceKey',
        summary: "Expire the device's key (admins): every token it holds is revoked, its streams and tunnel end with forbidden, and its agent must enroll again",
        params: OrgIdParams,
        response: { 204: empty('Expired: the device holds no valid token.'), ...errors([400, 401, 403, 404]) },
      },
    },
    async (req, reply) => {
      await ctx.store.devices.expireTokens(req.params.org, req.params.id);
      return reply.status(204).send(null);
    },
  );

  app.get(
    ROUTES.deviceTokens,
    {
      schema: {
        tags,
        operationId: 'listDeviceTokenExpiries',
        summary: "When each device's token expires (expired ones included), by device id; `expiring_within` keeps those expiring within that many seconds",
        params: OrgParams,
        querystring: DeviceTokenExpiryQuery,
        response: { 200: json('Devices with their token expiry; `next` while pages remain.', DeviceTokenExpiryList), ...errors([400, 401, 403, 404]) },
      },
    },
    async (req) => {
      const page = await ctx.store.devices.listTokenExpiries(req.params.org, {
        withinSeconds: req.query.expiring_within,
        after: req.query.after,
        limit: req.query.limit ?? DEFAULT_LIMIT,
      });
      return page.next === undefined ? { items: page.items } : { items: page.items, next: page.next };
    },
  );
}
