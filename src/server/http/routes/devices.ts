import type { FastifyRequest } from 'fastify';
import {
  DEVICE_OWNED_FIELDS,
  DEVICE_SELF_FIELDS,
  ENROLLMENT_FIELDS,
  Device,
  DeviceCreate,
  DeviceList,
  DevicePatch,
  EMPTY_STATUS,
  EnrolledDevice,
  ListQuery,
  OrgIdParams,
  OrgParams,
  ROUTES,
  type DeviceObject,
} from '../../../protocol/index.js';
import type { App } from '../app.js';
import type { ServerContext } from '../context.js';
import { ApiError, notFound } from '../../errors.js';
import { answeredNotModified, ifMatchOf, sendList, withEtag } from './shared.js';
import { tagCallerFor } from '../tag-caller.js';
import { IfMatchHeaders, IfNoneMatchHeaders, RESPONSE_HEADERS, empty, errors, json } from '../route-responses.js';

const tags = ['devices'];

/**
 * Field ownership (docs/protocol.md): fields the server or another endpoint owns
 * are refused with 409 naming that owner, before schema validation would
 * call them merely unknown.
 */
async function refuseOwnedFields(req: FastifyRequest): Promise<void> {
  const body = req.body;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return;
  const params = req.params as { org?: string; id?: string };
  for (const field of Object.keys(body)) {
    const owner = DEVICE_OWNED_FIELDS[field];
    if (owner === undefined) continue;
    const named = owner.replace('{org}', params.org ?? '{org}').replace('{id}', params.id ?? '{id}');
    throw new ApiError('field_owned_elsewhere', `"${field}" is owned by ${named}`, { path: `/${field}`, owner: named });
  }
}

const DEVICE_FIELDS: Readonly<Record<string, unknown>> = DeviceCreate.properties;

export function registerDeviceRoutes(app: App, ctx: ServerContext): void {
  /**
   * A device token, or a registration key enrolling a device, may set only what
   * the device discovers itself (and request routes): the rest is refused (403)
   * before the body's validation would describe it.
   */
  const deviceOnlyFields = async (req: FastifyRequest): Promise<void> => {
    const body = req.body;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return;
    const { type } = await ctx.access.principalOf(req);
    const allowed: readonly string[] | undefined = type === 'device' ? DEVICE_SELF_FIELDS : type === 'registration' ? ENROLLMENT_FIELDS : undefined;
    if (allowed === undefined) return;
    // Only device fields an admin could set are refused here; a field no schema
    // knows is the body's validation error (400), whoever sends it.
    const other = Object.keys(body).find((k) => k in DEVICE_FIELDS && !allowed.includes(k));
    if (other !== undefined) {
      throw new ApiError('forbidden', `a device may set only ${allowed.join(', ')}; "${other}" needs an organization admin`, {
        path: `/${other}`,
      });
    }
  };
  app.get(
    ROUTES.devices,
    {
      schema: {
        tags,
        operationId: 'listDevices',
        summary: 'List devices (also the polling API: ETag / If-None-Match, gt_revision, paging by revision)',
        params: OrgParams,
        querystring: ListQuery,
        headers: IfNoneMatchHeaders,
        response: {
          200: json('Devices with their status (and tombstones with gt_revision or a cursor); `next` while pages remain.', DeviceList, RESPONSE_HEADERS.etag, RESPONSE_HEADERS.revision),
          304: empty('Nothing changed since the If-None-Match revision.', RESPONSE_HEADERS.etag),
          ...errors([400, 401, 403, 404, 410], { 410: 'gt_revision is older than the organization keeps: list again from 0' }),
        },
      },
    },
    async (req, reply) => {
      if (await answeredNotModified(req, reply, ctx, req.params.org, req.query)) return reply;
      const page = await ctx.store.changes.list(req.params.org, 'device', req.query);
      const statuses = await ctx.store.devices.statusesOf(page.rows.filter((r) => !r.deleted).map((r) => r.id));
      return sendList(reply, page, (row) => ({ ...(row.value as unknown as DeviceObject), status: statuses.get(row.id) ?? EMPTY_STATUS }));
    },
  );

  app.post(
    ROUTES.devices,
    {
      preValidation: [refuseOwnedFields, deviceOnlyFields],
      schema: {
        tags,
        operationId: 'createDevice',
        summary: 'Create a device; with a registration key as the bearer token, enroll one (returns device_token once)',
        params: OrgParams,
        body: DeviceCreate,
        response: {
          201: json('The device and, once, its token.', EnrolledDevice, RESPONSE_HEADERS.etag),
          ...errors([400, 401, 403, 404, 409, 413], { 409: 'Another device has this public_key, the tunnel IP pool is full, a field is owned elsewhere, or an approved route conflicts' }),
        },
      },
    },
    async (req, reply) => {
      const p = await ctx.access.principalOf(req);
      const keyId = p.type === 'registration' ? p.keyId : undefined;
      const { device, deviceToken, tokenExpiresAt } = await ctx.store.devices.create(
        req.params.org,
        req.body,
        keyId,
        ctx.settings.deviceTokenTtl,
        await tagCallerFor(ctx, req, req.body.tags),
      );
      return reply.status(201).send({ ...withEtag(reply, device), device_token: deviceToken, device_token_expires_at: tokenExpiresAt });
    },
  );

  app.get(
    ROUTES.device,
    {
      schema: {
        tags,
        operationId: 'getDevice',
        summary: 'Get a device with its status',
        params: OrgIdParams,
        response: { 200: json('The device with its status.', Device, RESPONSE_HEADERS.etag), ...errors([400, 401, 403, 404]) },
      },
    },
    async (req, reply) => {
      const device = await ctx.store.devices.get(req.params.org, req.params.id);
      if (!device) throw notFound('device');
      return withEtag(reply, device);
    },
  );

  app.patch(
    ROUTES.device,
    {
      preValidation: [refuseOwnedFields, deviceOnlyFields],
      schema: {
        tags,
        operationId: 'updateDevice',
        summary: 'Change a device (a device token may change only its own endpoints, hostname, symmetric_nat and requested advertise_cidrs)',
        params: OrgIdParams,
        headers: IfMatchHeaders,
        body: DevicePatch,
        response: {
          200: json('The device as changed (unchanged when the patch changes nothing).', Device, RESPONSE_HEADERS.etag),
          ...errors([400, 401, 403, 404, 409, 412, 413], { 409: 'Another device has this public_key, a field is owned elsewhere, or an approved route conflicts' }),
        },
      },
    },
    async (req, reply) =>
      withEtag(reply, await ctx.store.devices.patch(req.params.org, req.params.id, req.body, await tagCallerFor(ctx, req, req.body.tags), ifMatchOf(req))),
  );

  app.delete(
    ROUTES.device,
    {
      schema: {
        tags,
        operationId: 'deleteDevice',
        summary: 'Delete a device (frees its tunnel IP, revokes its token)',
        params: OrgIdParams,
        headers: IfMatchHeaders,
        response: { 204: empty('Deleted.'), ...errors([400, 401, 403, 404, 412]) },
      },
    },
    async (req, reply) => {
      await ctx.store.devices.delete(req.params.org, req.params.id, ifMatchOf(req));
      return reply.status(204).send(null);
    },
  );
}
