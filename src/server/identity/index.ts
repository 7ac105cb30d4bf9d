/**
 * Identity: OpenID Connect login against one configured issuer. The browser flow (authorization
 * code with PKCE), the device flow (RFC 8628), ID token verification with jose, and the policy of
 * who may sign in. Sessions, members and routes build on this; nothing here stores anything.
 */
export { OidcLogin, type OidcLoginOptions, type SignedIn } from './oidc-login.js';
export { OidcIssuer } from './oidc-issuer.js';
export { makeOidcSettings, isAcceptableIssuerUrl, type OidcSettings, type OidcSettingsInput, type ClientAuthMethod, type FetchLike, type IdentityLogger } from './oidc-settings.js';
export { DiscoveryCache } from './discovery-cache.js';
export { discoveryUrl, parseIssuerMetadata, type IssuerMetadata } from './issuer-metadata.js';
export { verifyIdToken, type IdTokenClaims, type IdTokenExpectations } from './id-token.js';
export { checkSignIn, makeSignInPolicy, type SignInPolicy, type SignInDecision, type SignInFacts, type SignInRefusal, type SignInRefusalReason } from './sign-in-policy.js';
export {
  startAuthorization,
  completeAuthorization,
  type AuthorizationOptions,
  type AuthorizationStart,
  type PendingAuthorization,
} from './authorization-code-flow.js';
export {
  requestDeviceAuthorization,
  pollDeviceAuthorization,
  pollDeviceTokenOnce,
  type DeviceAuthorization,
  type DevicePollOptions,
  type DevicePollStep,
} from './device-flow.js';
export { requestTokens, type TokenSet } from './token-endpoint.js';
export type { OidcIdentity, OidcLoginResult } from './login-result.js';
export { IdentityError, type IdentityErrorCode, type IdentityErrorOptions, type IdTokenProblem } from './identity-error.js';
