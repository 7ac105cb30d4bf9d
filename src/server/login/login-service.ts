import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import type { Settings } from '../config/settings.js';
import { SettingsError } from '../config/settings.js';
import { IdentityError, OidcLogin } from '../identity/index.js';
import type { BootstrapAdmins } from '../store/index.js';

const list = (value: string): string[] =>
  value
    .split(',')
    .map((v) => v.trim())
    .filter((v) => v !== '');

/** The server's user login: the issuer client, the bootstrap admins and the session lifetimes. */
export interface LoginService {
  readonly oidc: OidcLogin;
  readonly admins: BootstrapAdmins;
  readonly sessionTtlSeconds: number;
  readonly sessionMaxAgeSeconds: number;
  readonly publicUrl: string | undefined;
}

/** The client secret: the file's content (trailing newline dropped), or the value given. */
function clientSecret(s: Settings): string {
  if (s.oidcClientSecretFile === undefined) return s.oidcClientSecret ?? '';
  try {
    return readFileSync(s.oidcClientSecretFile, 'utf8').replace(/\r?\n$/, '');
  } catch (err) {
    throw new SettingsError(`invalid --oidc-client-secret-file: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
}

/**
 * The login of `--oidc-issuer`; undefined when none is set (the login routes
 * then answer 404). Throws SettingsError for unusable settings. Reads
 * nothing from the issuer yet.
 */
export function loginFromSettings(s: Settings, logger: Logger): LoginService | undefined {
  if (s.oidcIssuer === undefined) return undefined;
  const policy = {
    emails: list(s.oidcAllowedEmails),
    domains: list(s.oidcAllowedDomains),
    subjects: list(s.oidcAllowedSubjects),
    requireVerifiedEmail: s.oidcRequireVerifiedEmail,
  };
  let oidc: OidcLogin;
  try {
    oidc = new OidcLogin({
      issuer: s.oidcIssuer,
      clientId: s.oidcClientId ?? '',
      clientSecret: clientSecret(s),
      clientAuthMethod: s.oidcClientAuth,
      scopes: list(s.oidcScopes),
      clockToleranceS: s.oidcClockSkew,
      logger,
      policy,
    });
  } catch (err) {
    if (err instanceof IdentityError) throw new SettingsError(`invalid --oidc-*: ${err.message}`, { cause: err });
    throw err;
  }
  if (policy.emails.length === 0 && policy.domains.length === 0 && policy.subjects.length === 0) {
    logger.warn({ issuer: s.oidcIssuer }, 'no --oidc-allowed-emails, --oidc-allowed-domains or --oidc-allowed-subjects: everyone the issuer authenticates may sign in (they see no organization until invited)');
  }
  if (s.oidcClientSecret !== undefined && s.oidcClientSecretFile === undefined && process.argv.some((a) => a.startsWith('--oidc-client-secret') && !a.startsWith('--oidc-client-secret-file'))) {
    logger.warn('the OIDC client secret was given as a flag: it shows in ps; prefer --oidc-client-secret-file or FLEETPLANE_OIDC_CLIENT_SECRET');
  }
  const admins = list(s.oidcAdmins);
  return {
    oidc,
    admins: { emails: admins.filter((a) => a.includes('@')).map((a) => a.toLowerCase()), subjects: admins },
    sessionTtlSeconds: s.sessionTtl,
    sessionMaxAgeSeconds: s.sessionMaxAge,
    publicUrl: s.publicUrl,
  };
}
