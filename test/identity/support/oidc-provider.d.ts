/**
 * The part of oidc-provider's API the test provider uses (the package ships no types, and only
 * `npm install --save-dev oidc-provider` was to touch package.json). Shapes follow its docs.
 */
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  /** The Koa context, as much of it as the test middleware touches. */
  export interface ProviderContext {
    readonly method: string;
    readonly path: string;
    readonly headers: Record<string, string | string[] | undefined>;
    status: number;
    body: unknown;
    readonly oidc?: { readonly route?: string };
  }

  export type ProviderMiddleware = (ctx: ProviderContext, next: () => Promise<void>) => Promise<void>;

  export interface AccountClaims {
    sub: string;
    [claim: string]: unknown;
  }

  export interface Account {
    accountId: string;
    claims(use: string, scope: string): Promise<AccountClaims> | AccountClaims;
  }

  export interface ClientMetadata {
    client_id: string;
    client_secret?: string;
    redirect_uris?: string[];
    grant_types?: string[];
    response_types?: string[];
    token_endpoint_auth_method?: string;
    [key: string]: unknown;
  }

  export interface ErrorOut {
    error: string;
    error_description?: string;
  }

  export interface Configuration {
    clients?: ClientMetadata[];
    jwks?: { keys: object[] };
    cookies?: { keys?: string[] };
    claims?: Record<string, string[]>;
    scopes?: string[];
    findAccount?: (ctx: unknown, sub: string) => Promise<Account | undefined>;
    pkce?: { required?: (ctx: unknown, client: unknown) => boolean };
    ttl?: Record<string, number | ((ctx: unknown, token: unknown, client: { clientId: string }) => number)>;
    clockTolerance?: number;
    interactions?: { url?: (ctx: unknown, interaction: { uid: string }) => Promise<string> | string };
    renderError?: (ctx: ProviderContext, out: ErrorOut, error: unknown) => Promise<void>;
    features?: {
      devInteractions?: { enabled: boolean };
      deviceFlow?: {
        enabled: boolean;
        userCodeInputSource?: (ctx: ProviderContext, form: string, out: ErrorOut | undefined, err: unknown) => Promise<void>;
        userCodeConfirmSource?: (ctx: ProviderContext, form: string, client: unknown, deviceInfo: unknown, userCode: string) => Promise<void>;
        successSource?: (ctx: ProviderContext) => Promise<void>;
      };
      revocation?: { enabled: boolean };
      [feature: string]: unknown;
    };
  }

  export interface InteractionDetails {
    uid: string;
    prompt: { name: string; reasons: string[]; details: Record<string, unknown> };
    params: Record<string, unknown>;
    session?: { accountId: string };
    grantId?: string;
  }

  export interface GrantInstance {
    addOIDCScope(scope: string): void;
    addOIDCClaims(claims: string[]): void;
    addResourceScope(resource: string, scope: string): void;
    save(): Promise<string>;
  }

  export interface GrantClass {
    new (init: { accountId: string; clientId: string }): GrantInstance;
    find(id: string): Promise<GrantInstance | undefined>;
  }

  export interface InteractionResults {
    login?: { accountId: string };
    consent?: { grantId?: string };
    error?: string;
    error_description?: string;
  }

  export default class Provider {
    constructor(issuer: string, configuration?: Configuration);
    readonly issuer: string;
    readonly Grant: GrantClass;
    proxy: boolean;
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    use(middleware: ProviderMiddleware): this;
    on(event: string, listener: (...args: unknown[]) => void): this;
    interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<InteractionDetails>;
    interactionFinished(req: IncomingMessage, res: ServerResponse, result: InteractionResults, options?: { mergeWithLastSubmission?: boolean }): Promise<void>;
  }
}
