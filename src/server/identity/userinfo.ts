import { bearerAuthorization } from '../../protocol/index.js';
import { requestJson, stringField } from './http-json.js';
import { IdentityError } from './identity-error.js';
import type { IssuerMetadata } from './issuer-metadata.js';
import type { OidcSettings } from './oidc-settings.js';

const MAX_USERINFO_BYTES = 64 * 1024;

/** The UserInfo claims fleetplane uses. */
export interface UserInfoClaims {
  readonly email: string | undefined;
  readonly emailVerified: boolean | undefined;
  readonly name: string | undefined;
}

/** `email_verified` as a boolean: some issuers send the string "true". */
export function verifiedFlag(value: unknown): boolean | undefined {
  if (value === true || value === 'true') return true;
  if (value === false || value === 'false') return false;
  return undefined;
}

/**
 * Asks the UserInfo endpoint (OpenID Connect Core §5.3) with the access token. Its `sub` must be
 * the ID token's (§5.3.2: otherwise the answer is about someone else). Only JSON answers are
 * accepted (not signed UserInfo). Throws IdentityError `userinfo_invalid`, `http_failed`, `aborted`.
 */
export async function fetchUserInfo(
  settings: OidcSettings,
  metadata: IssuerMetadata,
  accessToken: string,
  subject: string,
  signal?: AbortSignal,
): Promise<UserInfoClaims> {
  const url = metadata.userinfo_endpoint;
  if (url === undefined) throw new IdentityError('userinfo_invalid', 'the issuer has no UserInfo endpoint');
  const answer = await requestJson(settings, url, {
    method: 'GET',
    headers: { authorization: bearerAuthorization(accessToken) },
    what: 'UserInfo endpoint',
    maxBytes: MAX_USERINFO_BYTES,
    signal,
  });
  if (answer.status !== 200) {
    throw new IdentityError('userinfo_invalid', `the UserInfo endpoint answered HTTP ${answer.status}`, { status: answer.status });
  }
  if (answer.body.sub !== subject) {
    throw new IdentityError('userinfo_invalid', `the UserInfo answer is about subject ${JSON.stringify(answer.body.sub)}, not the ID token's`);
  }
  return {
    email: stringField(answer.body, 'email'),
    emailVerified: verifiedFlag(answer.body.email_verified),
    name: stringField(answer.body, 'name'),
  };
}
