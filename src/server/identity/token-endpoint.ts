import { BEARER_SCHEME } from '../../protocol/index.js';
import { requestJson, stringField, type JsonAnswer } from './http-json.js';
import { IdentityError } from './identity-error.js';
import type { IssuerMetadata } from './issuer-metadata.js';
import type { OidcSettings } from './oidc-settings.js';

const MAX_TOKEN_RESPONSE_BYTES = 64 * 1024;

/** What a successful token request returned (RFC 6749 §5.1, OpenID Connect Core §3.1.3.3). */
export interface TokenSet {
  readonly accessToken: string;
  readonly tokenType: string;
  /** Not yet verified: verify it before using anything in it. */
  readonly idToken: string;
  readonly refreshToken: string | undefined;
  /** When the access token expires, in ms since the epoch; undefined when the issuer does not say. */
  readonly accessTokenExpiresAt: number | undefined;
  readonly scope: string | undefined;
}

/** application/x-www-form-urlencoded encoding of one value (RFC 6749 Appendix B). */
function formEncode(value: string): string {
  return new URLSearchParams({ v: value }).toString().slice(2);
}

/**
 * POSTs `params` as a form to an endpoint of the issuer, authenticated as the configured client
 * (`client_secret_basic` or `client_secret_post`). Returns the JSON answer whatever its status.
 * Throws IdentityError `unsupported` when the issuer does not list the configured method.
 */
export async function postAsClient(
  settings: OidcSettings,
  metadata: IssuerMetadata,
  url: string,
  what: string,
  params: Record<string, string>,
  signal?: AbortSignal,
): Promise<JsonAnswer> {
  const supported = metadata.token_endpoint_auth_methods_supported ?? ['client_secret_basic'];
  if (!supported.includes(settings.clientAuthMethod)) {
    throw new IdentityError('unsupported', `the issuer does not support client authentication ${settings.clientAuthMethod} (it lists ${supported.join(', ')})`);
  }
  const body = new URLSearchParams(params);
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
  if (settings.clientAuthMethod === 'client_secret_basic') {
    const credentials = `${formEncode(settings.clientId)}:${formEncode(settings.clientSecret)}`;
    headers.authorization = `Basic ${Buffer.from(credentials).toString('base64')}`;
  } else {
    body.set('client_id', settings.clientId);
    body.set('client_secret', settings.clientSecret);
  }
  return requestJson(settings, url, { method: 'POST', headers, body, what, maxBytes: MAX_TOKEN_RESPONSE_BYTES, signal });
}

/** The IdentityError for an OAuth error answer (RFC 6749 §5.2), or `http_failed` when it is not one. */
export function oauthFailure(answer: JsonAnswer, what: string): IdentityError {
  const error = stringField(answer.body, 'error');
  if (error === undefined) {
    return new IdentityError('http_failed', `the ${what} answered HTTP ${answer.status} without an OAuth error`, { status: answer.status });
  }
  const description = stringField(answer.body, 'error_description');
  return new IdentityError('oauth_error', `the ${what} refused: ${error}${description ? ` (${description})` : ''}`, { oauthError: error, status: answer.status });
}

/**
 * A token request (`grant_type` and its parameters) at the token endpoint. Throws IdentityError
 * `oauth_error` with the issuer's `error` code, `http_failed`, `aborted`, or `unsupported`.
 */
export async function requestTokens(settings: OidcSettings, metadata: IssuerMetadata, params: Record<string, string>, signal?: AbortSignal): Promise<TokenSet> {
  const answer = await postAsClient(settings, metadata, metadata.token_endpoint, 'token endpoint', params, signal);
  if (answer.status !== 200) throw oauthFailure(answer, 'token endpoint');
  const { body } = answer;
  const accessToken = stringField(body, 'access_token');
  const tokenType = stringField(body, 'token_type');
  const idToken = stringField(body, 'id_token');
  if (accessToken === undefined || tokenType === undefined || idToken === undefined) {
    throw new IdentityError('http_failed', 'the token endpoint answered without access_token, token_type or id_token (is the openid scope granted?)', { status: answer.status });
  }
  if (tokenType.toLowerCase() !== BEARER_SCHEME.toLowerCase()) {
    throw new IdentityError('unsupported', `the token endpoint issued a ${tokenType} token; only ${BEARER_SCHEME} is supported`);
  }
  const expiresIn = body.expires_in;
  return {
    accessToken,
    tokenType,
    idToken,
    refreshToken: stringField(body, 'refresh_token'),
    accessTokenExpiresAt: typeof expiresIn === 'number' && expiresIn > 0 ? settings.now() + expiresIn * 1000 : undefined,
    scope: stringField(body, 'scope'),
  };
}
