import { completeAuthorization, startAuthorization, type AuthorizationOptions, type AuthorizationStart, type PendingAuthorization } from './authorization-code-flow.js';
import {
  pollDeviceAuthorization,
  pollDeviceTokenOnce,
  requestDeviceAuthorization,
  type DeviceAuthorization,
  type DevicePollOptions,
  type DevicePollStep,
} from './device-flow.js';
import { IdentityError } from './identity-error.js';
import type { OidcLoginResult } from './login-result.js';
import { OidcIssuer } from './oidc-issuer.js';
import { makeOidcSettings, type OidcSettingsInput } from './oidc-settings.js';
import { checkSignIn, makeSignInPolicy, type SignInPolicy } from './sign-in-policy.js';

export interface OidcLoginOptions extends OidcSettingsInput {
  /** Who may sign in; default: everyone the issuer authenticates. */
  policy?: Partial<SignInPolicy>;
}

/** A login the policy admitted; `matchedBy` names the rule. */
export interface SignedIn extends OidcLoginResult {
  readonly matchedBy: 'anyone' | 'subject' | 'email' | 'domain';
}

/**
 * The server's one OIDC login: the configured issuer, its two flows, and the sign-in policy
 * applied to every identity they return (IdentityError `sign_in_refused` with the `refusal`).
 * Holds no per-login state: pending browser logins and device authorizations are the caller's.
 */
export class OidcLogin {
  readonly issuer: OidcIssuer;
  readonly policy: SignInPolicy;

  /** Throws IdentityError `invalid_settings`. Reads nothing from the issuer until first used. */
  constructor(options: OidcLoginOptions) {
    this.issuer = new OidcIssuer(makeOidcSettings(options));
    this.policy = makeSignInPolicy(options.policy);
  }

  /** The browser login's first step: where to send the browser, and what to keep until its callback. */
  startBrowserLogin(options: AuthorizationOptions): Promise<AuthorizationStart> {
    return startAuthorization(this.issuer, options);
  }

  /** The browser login's callback: see completeAuthorization; then the policy. */
  async finishBrowserLogin(callback: URL | URLSearchParams, pending: PendingAuthorization, signal?: AbortSignal): Promise<SignedIn> {
    return this.#admit(await completeAuthorization(this.issuer, callback, pending, signal));
  }

  /** The device login's first step: the codes to show the user. */
  startDeviceLogin(signal?: AbortSignal): Promise<DeviceAuthorization> {
    return requestDeviceAuthorization(this.issuer, signal);
  }

  /**
   * One poll of the device login, for a caller that paces the polls itself (see
   * pollDeviceTokenOnce); once approved, the policy.
   */
  async pollDeviceLogin(authorization: DeviceAuthorization, signal?: AbortSignal): Promise<DevicePollStep<SignedIn>> {
    const step = await pollDeviceTokenOnce(this.issuer, authorization, signal);
    return step.status === 'approved' ? { status: 'approved', result: this.#admit(step.result) } : step;
  }

  /** Waits for the user to approve the device login (see pollDeviceAuthorization); then the policy. */
  async finishDeviceLogin(authorization: DeviceAuthorization, options: DevicePollOptions): Promise<SignedIn> {
    return this.#admit(await pollDeviceAuthorization(this.issuer, authorization, options));
  }

  #admit(result: OidcLoginResult): SignedIn {
    const decision = checkSignIn(result.identity, this.policy);
    if (!decision.allowed) {
      const refusal = { reason: decision.reason, message: decision.message };
      throw new IdentityError('sign_in_refused', `sign-in refused: ${decision.message}`, { refusal });
    }
    return { ...result, matchedBy: decision.matchedBy };
  }
}
