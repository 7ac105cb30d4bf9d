import { fullJitterDelay } from '../../util/backoff.js';
import { sleep } from '../../util/sleep.js';
import { stringField } from './http-json.js';
import { abortedError, IdentityError } from './identity-error.js';
import { identityFromTokens, type OidcLoginResult } from './login-result.js';
import type { OidcIssuer } from './oidc-issuer.js';
import { isAcceptableIssuerUrl } from './oidc-settings.js';
import { oauthFailure, postAsClient, requestTokens, type TokenSet } from './token-endpoint.js';

/** RFC 8628 §3.5: the polling interval when the issuer names none, and what `slow_down` adds. */
const DEFAULT_INTERVAL_S = 5;
const SLOW_DOWN_STEP_S = 5;
const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';

/** A device authorization (RFC 8628 §3.2): show `userCode` and `verificationUri` to the user, then poll. */
export interface DeviceAuthorization {
  /** Secret: only the poller may hold it. */
  readonly deviceCode: string;
  readonly userCode: string;
  readonly verificationUri: string;
  /** The URI with the user code in it (for a QR code or a link), when the issuer gives one. */
  readonly verificationUriComplete: string | undefined;
  /** When the device code expires, in ms since the epoch. */
  readonly expiresAt: number;
  /** Least seconds between two polls, as the issuer said (else 5). */
  readonly intervalS: number;
}

export interface DevicePollOptions {
  /** Stops the polling: it then rejects with IdentityError `aborted`. */
  signal: AbortSignal;
  /** Told each time the issuer says `slow_down`, with the new interval. */
  onSlowDown?: (intervalS: number) => void;
}

function positiveNumber(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : undefined;
}

/**
 * Asks the issuer for a device code and user code (RFC 8628 §3.1), as the configured client.
 * Throws IdentityError `unsupported` when the issuer has no device authorization endpoint,
 * `oauth_error`, `http_failed`, `discovery_failed`, `aborted`.
 */
export async function requestDeviceAuthorization(issuer: OidcIssuer, signal?: AbortSignal): Promise<DeviceAuthorization> {
  const { settings } = issuer;
  const metadata = await issuer.metadata();
  const url = metadata.device_authorization_endpoint;
  if (url === undefined) throw new IdentityError('unsupported', 'the issuer does not offer the device authorization grant (no device_authorization_endpoint)');
  const answer = await postAsClient(settings, metadata, url, 'device authorization endpoint', { scope: settings.scopes.join(' ') }, signal);
  if (answer.status !== 200) throw oauthFailure(answer, 'device authorization endpoint');
  const { body } = answer;
  const deviceCode = stringField(body, 'device_code');
  const userCode = stringField(body, 'user_code');
  // Some issuers spell it verification_url (pre-RFC drafts).
  const verificationUri = stringField(body, 'verification_uri') ?? stringField(body, 'verification_url');
  const expiresIn = positiveNumber(body.expires_in);
  if (deviceCode === undefined || userCode === undefined || verificationUri === undefined || expiresIn === undefined) {
    throw new IdentityError('http_failed', 'the device authorization endpoint answered without device_code, user_code, verification_uri or expires_in');
  }
  if (!isAcceptableIssuerUrl(verificationUri)) {
    throw new IdentityError('http_failed', `the device authorization endpoint's verification_uri is not an https URL: ${JSON.stringify(verificationUri)}`);
  }
  const complete = stringField(body, 'verification_uri_complete');
  return {
    deviceCode,
    userCode,
    verificationUri,
    verificationUriComplete: complete !== undefined && isAcceptableIssuerUrl(complete) ? complete : undefined,
    expiresAt: settings.now() + expiresIn * 1000,
    intervalS: Math.max(1, positiveNumber(body.interval) ?? DEFAULT_INTERVAL_S),
  };
}

/** What one poll found; `slow_down` means: add 5 s to the interval, for good. */
export type DevicePollStep<R extends OidcLoginResult = OidcLoginResult> =
  | { readonly status: 'pending' }
  | { readonly status: 'slow_down' }
  | { readonly status: 'approved'; readonly result: R };

/**
 * One poll of the token endpoint (RFC 8628 §3.4), for callers that pace the polls themselves
 * (e.g. a replica answering a CLI's poll with the device code kept in the database): they must
 * keep the interval, and add 5 s to it after each `slow_down`. Once approved, the ID token is
 * verified (no nonce: the device flow sends none). Throws IdentityError `access_denied`,
 * `expired_token` (also, without asking, once `expiresAt` has passed), `oauth_error`,
 * `http_failed`, `id_token_invalid`, `aborted`.
 */
export async function pollDeviceTokenOnce(issuer: OidcIssuer, authorization: DeviceAuthorization, signal?: AbortSignal): Promise<DevicePollStep> {
  const { settings } = issuer;
  if (settings.now() >= authorization.expiresAt) {
    throw new IdentityError('expired_token', 'the device code expired before the user approved it');
  }
  const metadata = await issuer.metadata();
  let tokens: TokenSet;
  try {
    tokens = await requestTokens(settings, metadata, { grant_type: DEVICE_CODE_GRANT, device_code: authorization.deviceCode }, signal);
  } catch (err) {
    if (!(err instanceof IdentityError) || err.code !== 'oauth_error') throw err;
    switch (err.oauthError) {
      case 'authorization_pending':
        return { status: 'pending' };
      case 'slow_down':
        return { status: 'slow_down' };
      case 'access_denied':
        throw new IdentityError('access_denied', 'the user denied the device login', { cause: err, oauthError: 'access_denied' });
      case 'expired_token':
        throw new IdentityError('expired_token', 'the device code expired before the user approved it', { cause: err, oauthError: 'expired_token' });
      default:
        throw err;
    }
  }
  return { status: 'approved', result: await identityFromTokens(issuer, metadata, tokens, undefined, signal) };
}

/**
 * Polls until the user approves (RFC 8628 §3.4–3.5): waits the interval before every poll;
 * `authorization_pending` polls again; `slow_down` adds 5 s to the interval for good;
 * `access_denied` and `expired_token` end it (IdentityError of that code), as does reaching
 * `expiresAt`. A transient failure (network, timeout, `server_error`) is logged and polled again
 * after the interval plus an exponential backoff with full jitter. Throws IdentityError `aborted`
 * when `signal` fires, at once, even mid-wait.
 */
export async function pollDeviceAuthorization(issuer: OidcIssuer, authorization: DeviceAuthorization, options: DevicePollOptions): Promise<OidcLoginResult> {
  const { settings } = issuer;
  const { signal } = options;
  let intervalMs = authorization.intervalS * 1000;
  let failures = 0;
  let waitMs = intervalMs;
  for (;;) {
    if (!(await sleep(waitMs, signal))) {
      throw abortedError(signal) ?? new IdentityError('aborted', 'device login polling stopped', { cause: signal.reason });
    }
    let step: DevicePollStep;
    try {
      step = await pollDeviceTokenOnce(issuer, authorization, signal);
    } catch (err) {
      if (!(err instanceof IdentityError) || !err.transient) throw err;
      waitMs = intervalMs + fullJitterDelay(failures, intervalMs, settings.retryCapMs);
      failures += 1;
      settings.logger.warn({ err, failures, retryInMs: waitMs }, 'OIDC device login: polling failed; retrying');
      continue;
    }
    failures = 0;
    if (step.status === 'approved') return step.result;
    if (step.status === 'slow_down') {
      intervalMs += SLOW_DOWN_STEP_S * 1000;
      options.onSlowDown?.(intervalMs / 1000);
    }
    waitMs = intervalMs;
  }
}
