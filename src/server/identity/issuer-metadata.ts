import { IdentityError } from './identity-error.js';
import { isAcceptableIssuerUrl } from './oidc-settings.js';

/**
 * The part of an issuer's discovery document (OpenID Connect Discovery 1.0 §3, RFC 8414,
 * RFC 8628 §4) fleetplane uses. Endpoint URLs are `https` (or `http` on loopback).
 */
export interface IssuerMetadata {
  readonly issuer: string;
  readonly authorization_endpoint: string;
  readonly token_endpoint: string;
  readonly jwks_uri: string;
  readonly userinfo_endpoint: string | undefined;
  /** Absent when the issuer does not offer the device authorization grant. */
  readonly device_authorization_endpoint: string | undefined;
  /** Absent: the issuer does not say (then S256 is tried anyway). */
  readonly code_challenge_methods_supported: readonly string[] | undefined;
  /** Absent: `client_secret_basic` only (RFC 8414 §2). */
  readonly token_endpoint_auth_methods_supported: readonly string[] | undefined;
  /** True when the authorization response carries `iss` (RFC 9207); then it must. */
  readonly authorization_response_iss_parameter_supported: boolean;
}

/** Where the discovery document of `issuer` is (OpenID Connect Discovery 1.0 §4.1). */
export function discoveryUrl(issuer: string): string {
  return `${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`;
}

function endpoint(doc: Readonly<Record<string, unknown>>, name: string, required: true): string;
function endpoint(doc: Readonly<Record<string, unknown>>, name: string, required: false): string | undefined;
function endpoint(doc: Readonly<Record<string, unknown>>, name: string, required: boolean): string | undefined {
  const value = doc[name];
  if (value === undefined && !required) return undefined;
  if (typeof value !== 'string' || !isAcceptableIssuerUrl(value)) {
    throw new IdentityError('discovery_failed', `the discovery document's ${name} is ${value === undefined ? 'missing' : `not an https URL: ${JSON.stringify(value)}`}`);
  }
  return value;
}

function stringList(doc: Readonly<Record<string, unknown>>, name: string): readonly string[] | undefined {
  const value = doc[name];
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || !value.every((v): v is string => typeof v === 'string')) {
    throw new IdentityError('discovery_failed', `the discovery document's ${name} is not a list of strings`);
  }
  return value;
}

/**
 * Checks a discovery document and keeps what fleetplane uses. Its `issuer` must equal the
 * configured one exactly (Discovery §4.3: this is what stops one issuer impersonating another).
 */
export function parseIssuerMetadata(doc: Readonly<Record<string, unknown>>, expectedIssuer: string): IssuerMetadata {
  if (doc.issuer !== expectedIssuer) {
    throw new IdentityError('discovery_failed', `the discovery document names issuer ${JSON.stringify(doc.issuer)}, not the configured ${JSON.stringify(expectedIssuer)}`);
  }
  return {
    issuer: expectedIssuer,
    authorization_endpoint: endpoint(doc, 'authorization_endpoint', true),
    token_endpoint: endpoint(doc, 'token_endpoint', true),
    jwks_uri: endpoint(doc, 'jwks_uri', true),
    userinfo_endpoint: endpoint(doc, 'userinfo_endpoint', false),
    device_authorization_endpoint: endpoint(doc, 'device_authorization_endpoint', false),
    code_challenge_methods_supported: stringList(doc, 'code_challenge_methods_supported'),
    token_endpoint_auth_methods_supported: stringList(doc, 'token_endpoint_auth_methods_supported'),
    authorization_response_iss_parameter_supported: doc.authorization_response_iss_parameter_supported === true,
  };
}
